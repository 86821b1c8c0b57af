"""Coset transforms on the four-step engine: where the shift's powers are applied, and their streams.

Forward coset: X_k = sum_j x_j g^j w^(jk). Inverse coset (h = g^-1): x_j = h^j (1/N) sum_k X_k w^(-jk).
With N = N1 * N2 (N1 = 2^n1, n1 = ceil(n/2): pass 1 transforms columns of N1 points), j = N2*n1 + n2 on
the input side and j = k1 + N1*k2 on the output side, the point factors split into a factor that depends
only on the position of the point inside its lane frame (the same for every lane on a cycle: a *stream*)
and one that is constant over a lane frame (a *frame word*, one per lane):

- forward: g^(N2*n1 + n2) = G^n1 * g^n2 (G = g^N2). Pass 1 transforms column n2 (input positions n1), so it
  multiplies its input n1 by S * K with the stream S = G^n1 and the frame word K = g^n2. Pass 1 then does
  not apply the four-step factor w_N^(n2 k1) to its outputs: pass 2 applies it to its inputs (row k1,
  input positions n2, the frame word k1), so each pass multiplies once, at the lane's head.
- inverse: h^(k1 + N1*k2) (1/N) = H^k2 * (h^k1 / N) (H = h^N1). Pass 1 is a plain inverse pass 1 (the
  four-step factor on its outputs); pass 2 transforms row k1 and multiplies its output k2 by S * K with
  S = H^k2 and K = h^k1 / N (the 1/N of the inverse folded into the frame word).

So a lane applies one multiplication per point in every pass, on the multipliers of its output scale
(hw/output_scale.py), at its head (forward coset) or its tail (inverse coset, plain runs). The streams
(:func:`streams`) are the powers of the pass's ``base`` at the two positions the lanes take on a cycle
(``lane_input_order``, forward pass 1) or emit (``lane_output_order``, inverse pass 2); they repeat every
frame. Frame words (:func:`frame_words`): lane l of round g transforms frame t = L g + l of the pass,
element t // F (F = the pass's frames per element), index i = t mod F (the column n2 forward, the row
k1 inverse); K = b^i (forward b = g), K = h^i / N (inverse), and the row i itself in forward pass 2.

The hardware (hw/coset/) reads each stream factor as a product of two small tables,
HI[i >> s] * LO[i & mask] with s = floor(f/2) for a frame of 2^f points; :func:`factor_tables` and
:func:`factor_stream` are its bit-exact model, :func:`coset_passes` the whole transform through the lane
schedule.

Row steps (the run's ``row_step`` s): element r of a batch is a coset transform with the shift
g_r = g s^r, so its pass base is b_r = b_0 c^r with c the pass base of s (``pass_base(s, ...)``; for the
inverse c = (s^-1)^(2^o), from h_r = h s^-r). The hardware keeps the tables of the element it streams and
computes the next element's from them, entry by entry: LO_(r+1)[j] = LO_r[j] x LOc[j], HI_(r+1)[i] =
HI_r[i] x HIc[i] (:func:`step_tables`), while the current one streams. Every lane of a cycle works on
the same element (each pass has at least L frames per element, ``BuildParams.min_log_n``), so the
element changes every ``element_cycles`` stream cycles; the frame words of element r are those of g_r.
"""

import numpy as np

from . import field as F
from .field import Field
from .ntt import bit_reverse_indices, dif_stages, log2_exact
from .params import BuildParams
from .schedule import lane_input_order, lane_output_order, pass_schedule

__all__ = ["INVERSE_EXPONENT", "inverse_exponent", "pass_frame", "streams", "frame_word_kind", "pass_base",
           "chain_offset", "factor_tables", "factor_positions", "factor_stream", "element_shift", "element_cycles",
           "step_tables", "update_products", "frame_words", "lane_frame_transform", "coset_passes"]

_GL = F.GOLDILOCKS


def inverse_exponent(field: Field = _GL) -> int:
    """g^-1 = g^(p-2) (Fermat): the exponent the generator raises the shift to in ``field``."""
    return F.get(field).p - 2


#: The default field's :func:`inverse_exponent`.
INVERSE_EXPONENT = inverse_exponent()


def pass_frame(log_n: int, pass_index: int) -> int:
    """f of the pass's lane frames: n1 = ceil(n/2) in pass 1, n2 = floor(n/2) in pass 2 (the split of
    BuildParams.pass_log_sizes)."""
    if pass_index not in (1, 2):
        raise ValueError(f"pass_index: must be 1 or 2, got {pass_index}")
    return (log_n + 1) // 2 if pass_index == 1 else log_n // 2


def streams(pass_index: int, inverse: bool) -> bool:
    """True for the pass whose lanes multiply by a stream of the shift's powers: forward pass 1 (at the lane
    inputs), inverse pass 2 (at the lane outputs)."""
    if pass_index not in (1, 2):
        raise ValueError(f"pass_index: must be 1 or 2, got {pass_index}")
    return pass_index == (2 if inverse else 1)


def frame_word_kind(pass_index: int, inverse: bool) -> str | None:
    """What a lane's frame word is in this pass of a coset run: "coset" (K, a field element: g^n2 forward
    pass 1, h^k1 / N inverse pass 2), "row" (the frame's row k1, forward pass 2, for the four-step factor
    at the lane inputs) or None (inverse pass 1: a plain pass)."""
    if streams(pass_index, inverse):
        return "coset"
    return None if inverse else "row"


def chain_offset(log_n: int, pass_index: int, inverse: bool) -> int:
    """o with ``pass_base`` = (g or g^-1)^(2^o): n2 = floor(n/2) for forward pass 1 (G = g^N2), n1 =
    ceil(n/2) for inverse pass 2 (H = h^N1), else 0."""
    n1, n2 = pass_frame(log_n, 1), pass_frame(log_n, 2)
    if inverse:
        return n1 if pass_index == 2 else 0
    return n2 if pass_index == 1 else 0


def pass_base(shift: int, log_n: int, pass_index: int, inverse: bool, field: Field = _GL) -> int:
    """The base b whose powers b^i the lanes apply in this pass: forward G = g^N2 (pass 1), g (pass 2);
    inverse h = g^-1 (pass 1), H = h^N1 (pass 2)."""
    field = F.get(field)
    g = int(shift) % field.p
    root = field.pow_(g, inverse_exponent(field)) if inverse else g
    return field.pow_(root, 1 << chain_offset(log_n, pass_index, inverse))


def factor_tables(base: int, log_frame: int, field: Field = _GL) -> tuple[list[int], list[int]]:
    """(LO, HI) of a frame of 2^f points: LO[j] = b^j (j < 2^s), HI[i] = b^(i 2^s) (i < 2^(f-s)),
    s = floor(f/2), so b^i = HI[i >> s] * LO[i & (2^s - 1)] for every i < 2^f."""
    field = F.get(field)
    s = log_frame // 2
    lo = [field.pow_(base, j) for j in range(1 << s)]
    hi = [field.pow_(base, i << s) for i in range(1 << (log_frame - s))]
    return lo, hi


def factor_positions(log_frame: int, inverse: bool) -> np.ndarray:
    """Positions (i0, i1) within the frame that the point scale meets on each of its 2^(f-1) cycles:
    the lane's input order (forward: the scale sits at the lane input) or output order (inverse)."""
    return lane_output_order(log_frame) if inverse else lane_input_order(log_frame)


def factor_stream(shift: int, log_n: int, pass_index: int, inverse: bool, field: Field = _GL) -> np.ndarray:
    """The factor pair of every cycle of a frame, shape (2^(f-1), 2), as the generator computes it
    (f = the pass's frame size): HI * LO of the two positions."""
    field = F.get(field)
    f = pass_frame(log_n, pass_index)
    lo, hi = factor_tables(pass_base(shift, log_n, pass_index, inverse, field), f, field)
    s = f // 2
    pos = factor_positions(f, inverse)
    out = [[field.mul(hi[int(i) >> s], lo[int(i) & ((1 << s) - 1)]) for i in pair] for pair in pos]
    return np.array(out, dtype=np.uint64).reshape(-1, 2)


def element_shift(shift: int, row_step: int, element: int, field: Field = _GL) -> int:
    """g_r = g x s^r, the shift of element r of a batch with the row step s (0 or 1: g)."""
    field = F.get(field)
    if row_step <= 1:
        return int(shift) % field.p
    return field.mul(int(shift) % field.p, field.pow_(int(row_step) % field.p, element))


def element_cycles(params: BuildParams, log_n: int) -> int:
    """Stream cycles of one element of a batch in either pass: 2^n points, 2L a cycle."""
    return (1 << log_n) // (2 * params.lanes)


def step_tables(tables: tuple[list[int], list[int]], step: tuple[list[int], list[int]],
                field: Field = _GL) -> tuple[list[int], list[int]]:
    """The next element's (LO, HI) from the current one's and the step's, entry by entry."""
    field = F.get(field)
    return tuple([field.mul(a, b) for a, b in zip(cur, c)] for cur, c in zip(tables, step))


def update_products(log_frame: int) -> int:
    """Products of one element's table update: every entry of LO and HI (entry 0 too, 1 x 1: the work
    sets get their 1 that way)."""
    s = log_frame // 2
    return (1 << s) + (1 << (log_frame - s))


def frame_words(params: BuildParams, shift: int, log_n: int, pass_index: int, inverse: bool, batch: int = 1,
                row_step: int = 0) -> np.ndarray:
    """Every lane's frame word of every round of the pass, shape (rounds, L) (``frame_word_kind``): lane l
    of round g has frame t = L g + l, element r = t // F, index i = t mod F (F = 2^(n - f) frames an
    element); "coset": g_r^i forward, h_r^i / N inverse (g_r = ``element_shift``), "row": i. Field values
    (canonical) or indices, as Python ints in an object array; None when the pass has no words."""
    field = params.prime_field
    n = params.check_log_n(log_n)
    kind = frame_word_kind(pass_index, inverse)
    if kind is None:
        return None
    f = params.pass_log_sizes(n)[pass_index - 1]
    per = 1 << (n - f)
    batch = max(int(batch), 1)
    t = np.arange(batch * per).reshape(-1, params.lanes)
    if kind == "row":
        return (t % per).astype(object)
    inv_n = field.inv(1 << n)
    words = np.empty(t.shape, dtype=object)
    for r in range(batch):
        g = element_shift(shift, row_step, r, field) if row_step > 1 else int(shift) % field.p
        base, scale = (field.inv(g), inv_n) if inverse else (g, 1)
        powers = [scale]
        for _ in range(per - 1):
            powers.append(field.mul(powers[-1], base))
        sel = (t // per) == r
        words[sel] = [powers[int(i)] for i in (t[sel] % per)]
    return words


def lane_frame_transform(frames: np.ndarray, inverse: bool, field: Field = _GL) -> np.ndarray:
    """Natural-order transform of every frame (last axis, 2^f points), forward or with inverse twiddles
    (no 1/N): what a lane computes from its frame before the output scale."""
    f = log2_exact(frames.shape[-1], "frame length")
    return dif_stages(frames, inverse=inverse, field=F.get(field))[..., bit_reverse_indices(f)]


def coset_passes(params: BuildParams, x: np.ndarray, shift: int | None, log_n: int | None = None,
                 inverse: bool = False, batch: int = 1, row_step: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The engine's two passes, cycle by cycle through ``pass_schedule``, with the coset's streams and frame
    words applied where the lanes apply them (module docstring; ``shift`` None: no coset, the four-step
    factor on pass 1's outputs and 1/N on pass 2's; ``row_step`` s: element r's factors are those of
    g s^r). Returns ``(state, output)`` indexed like the buffers; ``output`` includes the inverse's 1/N, so
    it equals ``hw.model.ntt.transform(x, inverse=inverse, coset=g s^r)`` row by row, in
    ``params.prime_field``."""
    field = params.prime_field
    n = params.max_log_n if log_n is None else params.check_log_n(log_n)
    big = 1 << n
    x = field.vcanon(field.as_u64(x))
    w = field.root_of_unity(big)
    if inverse:
        w = field.inv(w)
    state = np.zeros_like(x)
    out = np.zeros_like(x)
    for pass_index, src, dst in ((1, x, state), (2, state, out)):
        reads, writes = pass_schedule(params, pass_index, n, batch)     # [g, t, l, 2]
        f = params.pass_log_sizes(n)[pass_index - 1]
        pairs = src[reads]
        kind = None if shift is None else frame_word_kind(pass_index, inverse)
        factors = None
        if kind == "coset":
            # S (round g belongs to element L g // F) times each lane's frame word K
            per = (1 << (n - f)) // params.lanes
            stream = [factor_stream(element_shift(shift, row_step, e, field), n, pass_index, inverse, field)
                      for e in range(batch if row_step > 1 else 1)]
            s = np.stack([stream[g // per if row_step > 1 else 0] for g in range(reads.shape[0])])[:, :, None, :]
            k = frame_words(params, shift, n, pass_index, inverse, batch, row_step).astype(np.uint64)
            factors = field.vmul(s, k[:, None, :, None])
        elif kind == "row":
            # the four-step factor w_N^(k1 n2) of pass 1's column n2 at pass 2's input n2, row k1
            rows = frame_words(params, shift, n, pass_index, inverse, batch, row_step).astype(np.uint64)
            pos = lane_input_order(f).astype(np.uint64)
            pairs = field.vmul(pairs, field.vpow(w, rows[:, None, :, None] * pos[None, :, None, :]))
        if factors is not None and not inverse:
            pairs = field.vmul(pairs, factors)
        # assemble every lane's frame from its input positions, transform it, emit in output order
        frames = np.zeros(pairs.shape[:1] + pairs.shape[2:3] + (1 << f,), dtype=np.uint64)   # [g, l, i]
        pos = lane_input_order(f)
        frames[:, :, pos[:, 0]] = pairs[..., 0].transpose(0, 2, 1)
        frames[:, :, pos[:, 1]] = pairs[..., 1].transpose(0, 2, 1)
        y = lane_frame_transform(frames, inverse, field)
        if pass_index == 1 and (kind is None):
            # the four-step scale w_N^(n2 k1) of column n2 = (the transform's number) mod N2
            count = 1 << params.pass_log_sizes(n)[1]
            column = (np.arange(y.shape[0])[:, None] * params.lanes + np.arange(params.lanes)[None, :]) % count
            y = field.vmul(y, field.vpow(w, (column[..., None] * np.arange(1 << f)[None, None, :]).astype(np.uint64)))
        opos = lane_output_order(f)
        emitted = np.stack([y[:, :, opos[:, 0]], y[:, :, opos[:, 1]]], axis=-1).transpose(0, 2, 1, 3)
        if factors is not None and inverse:
            emitted = field.vmul(emitted, factors)
        dst[writes] = emitted
    if inverse and shift is None:
        out = field.vmul(out, np.uint64(field.inv(big)))
    return state, out
