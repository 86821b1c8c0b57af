"""Model of the engine's twiddle generator: what every lane is fed.

Every lane takes the plain stream of :func:`hw.model.lane.shift_stream` (field values for general stages,
shift amounts for shift-only stages); in pass 1 the stream's free slot carries the lane's column n2, which
the lane's output scale turns into the four-step factor w_N^(n2 m) (hw/output_scale.py), in pass 2 it
carries 0.
"""

import numpy as np

from .lane import shift_stream
from .params import BuildParams

__all__ = ["lane_twiddles"]


def lane_twiddles(params: BuildParams, pass_index: int, round_: int, lane: int, *, log_n: int | None = None,
                  inverse: bool = False, batch: int = 1) -> np.ndarray:
    """The (2^(f-1), 2) twiddle words lane ``lane`` receives in round ``round_`` of pass ``pass_index`` of
    a 2^log_n-point transform (default the build's largest, 2^(2k)), whose frames are f = n1 (pass 1) or
    n2 (pass 2) of :meth:`BuildParams.pass_log_sizes`: the shift stream of a 2^k lane carrying the lane's
    column (pass 1) or 0 (pass 2). ``inverse``: the inverse transform's stream (the lanes' output scale
    takes the sign, hw.model.lane.output_scale_factors). A pass over a batch of ``batch`` transforms has
    ``batch`` times the rounds; number L*round_ + lane is column (number mod N2) of element number div N2
    (hw.model.schedule.pass_schedule)."""
    if pass_index not in (1, 2):
        raise ValueError(f"pass_index: must be 1 or 2, got {pass_index}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch: must be an int >= 1, got {batch!r}")
    n = params.log_n if log_n is None else params.check_log_n(log_n)
    frames = params.pass_log_sizes(n)
    f, count = frames[pass_index - 1], 1 << frames[2 - pass_index]     # transforms in the pass
    number = params.lanes * round_ + lane
    if not 0 <= number < batch * count or not 0 <= lane < params.lanes:
        raise ValueError(f"round_, lane: pass {pass_index} of {batch} x 2^{n} points has "
                         f"{batch * count // params.lanes} rounds of {params.lanes} lanes, got round {round_} lane {lane}")
    column = number % count
    return shift_stream(params.log_core, column if pass_index == 1 else 0, inverse, frame=f,
                        field=params.prime_field)
