"""Model of the engine's twiddle generator: what every lane is fed, and the running-twiddle arithmetic.

Pass 2 feeds every lane the plain stream of :func:`hw.model.lane.twiddle_stream`. Pass 1 feeds lane l in
round g the stream scaled for column n2 = L*g + l, i.e. running twiddle c = w_N^n2: every word of stage s
is multiplied by c^(2^s) (docs/architecture.md, "The four-step split and the folded pass-1 scale").

The hardware keeps, per lane, a table of the k running values c^(2^s) for the column in work and computes
the table of a later column with one multiply per entry:

    c_s(g + D) = c_s(g) * w_N^(L * D * 2^s)

D (the lookahead, in columns) is large enough that the k products finish, through a pipelined multiplier
of a given latency, before column g + D starts. The first D tables of each lane are constants.
"""

import numpy as np

from . import field as F
from .lane import shift_stream, twiddle_stream
from .params import BuildParams

__all__ = ["SCALES", "lookahead", "running_tables", "step_constants", "lane_twiddles"]

#: Where the pass-1 four-step scale is applied: at the lanes' outputs, or folded into the stage twiddles.
SCALES = ("output", "stages")


def lookahead(log_core: int, mul_latency: int) -> int:
    """Columns between a table's computation and its use: k products issued on the first k cycles of a
    column must land (mul_latency later) before column g + D starts, 2^(k-1) cycles per column apart."""
    cycles = 1 << (log_core - 1)
    need = mul_latency + log_core + 1
    return max(1, -(-need // cycles))


def running_tables(params: BuildParams, rounds: int) -> np.ndarray:
    """c_s for every lane and the first ``rounds`` columns it handles: shape (L, rounds, k),
    entry [l, g, s] = w_N^((L*g + l) * 2^s)."""
    k, lanes = params.log_core, params.lanes
    w = F.root_of_unity(params.n_points)
    out = np.empty((lanes, rounds, k), dtype=np.uint64)
    for lane in range(lanes):
        for g in range(rounds):
            c = pow(w, lanes * g + lane, F.P)
            for s in range(k):
                out[lane, g, s] = c
                c = c * c % F.P
    return out


def step_constants(params: BuildParams, depth: int) -> np.ndarray:
    """w_N^(L * depth * 2^s) for s < k: the factor that moves a lane's table ``depth`` columns on."""
    w = F.root_of_unity(params.n_points)
    return np.array([pow(w, params.lanes * depth << s, F.P) for s in range(params.log_core)], dtype=np.uint64)


def lane_twiddles(params: BuildParams, pass_index: int, round_: int, lane: int,
                  scale: str = "output", *, log_n: int | None = None, inverse: bool = False,
                  batch: int = 1) -> np.ndarray:
    """The (2^(f-1), 2) twiddle words lane ``lane`` receives in round ``round_`` of pass ``pass_index`` of
    a 2^log_n-point transform (default the build's largest, 2^(2k)), whose frames are f = n1 (pass 1) or
    n2 (pass 2) of :meth:`BuildParams.pass_log_sizes`: with ``scale`` "output" the shift stream of a 2^k
    lane carrying the lane's column (pass 1) or 0 (pass 2), with "stages" the 2^f stream scaled by
    c = w_N^column, N = 2^log_n (pass 1) or plain (pass 2). ``inverse``: the inverse transform's stream
    (scale "output" only; the lanes' output scale takes the sign, hw.model.lane.output_scale_factors).
    A pass over a batch of ``batch`` transforms has ``batch`` times the rounds; number L*round_ + lane is
    column (number mod N2) of element number div N2 (hw.model.schedule.pass_schedule)."""
    if pass_index not in (1, 2):
        raise ValueError(f"pass_index: must be 1 or 2, got {pass_index}")
    if scale not in SCALES:
        raise ValueError(f"scale: must be one of {', '.join(SCALES)}, got {scale!r}")
    if inverse and scale != "output":
        raise ValueError("inverse: only the generator with scale \"output\" has inverse streams")
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
    if scale == "output":
        return shift_stream(params.log_core, column if pass_index == 1 else 0, inverse, frame=f)
    c = None
    if pass_index == 1:
        c = pow(F.root_of_unity(1 << n), column, F.P)
    return twiddle_stream(f, c)
