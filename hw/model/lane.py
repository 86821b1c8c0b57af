"""Bit-exact model of one lane (hw/lane.py): the twiddle stream it consumes and the transform it computes.

A lane computes back-to-back 2^k-point Gentleman-Sande transforms, two points a cycle, one transform
every P = 2^(k-1) cycles. Points enter in :func:`hw.model.schedule.lane_input_order` and leave in
natural order (:func:`hw.model.schedule.lane_output_order`). Twiddles enter with the points, two words
per cycle, on two ports:

- ``w_first``: the twiddle stage 0's butterfly consumes on this very cycle (one fresh value per cycle);
- ``w_rest``: a stream carrying the twiddles of every later stage, which rides down the chain and from
  which each stage picks its own words at fixed slots.

:func:`twiddle_plan` is THE definition of that stream (which twiddle ROM entry sits in which slot);
:func:`twiddle_stream` fills it for a plain transform (``c`` = None) or for the pass-1 scaled transform
(running twiddle ``c``: stage s's words are multiplied by c^(2^s), see docs/architecture.md on the folded
pass-1 scale). The lane itself does not know which of the two it computes.

Why the stream looks like this (k = a + b, a = ceil(k/2) stages before the corner turn, b after;
G = 2^b groups of M = 2^(a-1) cycles in the first half, blocks of M' = 2^(b-1) cycles in the second):

- In the first half, group r's stage s (1 <= s < a) needs T_s = 2^(a-1-s) distinct twiddles, each used
  2^s times. The stream gives them in slots [T_s, 2T_s) of group r's M input cycles; because the chain
  delays the stream less than the points (see hw/lane.py), each stage sees its slots exactly during its
  first T_s cycles of the group, uses them and replays them from a T_s-word loop for the rest of the group.
- Slot 0 of group r carries word r of the second half's 2^b-word table (2^b - 1 twiddles and one unused
  word), captured at the corner turn and replayed for every block of the second half in the same two-port
  format: words 0..M'-1 on ``w_first`` (second-half stage 0), words M'.. on the ``w_rest`` slots.

Words per transform: 2^(k-1) on each port, 2^k - 1 of them used; exactly the reference's count.
"""

from functools import lru_cache

import numpy as np

from . import field as F
from .field import Field
from .ntt import bit_reverse_indices, log2_exact, twiddle_rom
from .schedule import first_half_stages, lane_input_order, lane_output_order

__all__ = ["halves", "rom_offset", "interface_orders", "twiddle_plan", "twiddle_stream", "stage_tables", "to_lane_pairs",
           "from_lane_pairs", "lane_transform", "lane_reference", "SHIFT_ROOTS_LOG", "shift_stages", "stage_shifts",
           "scale_slot", "shift_stream", "physical_stages", "decode_stream", "output_scale_factors", "scaled_lane_transform"]

_GL = F.GOLDILOCKS

#: Column of a twiddle stream array holding the word stage 0 consumes on that cycle.
W_FIRST = 0
#: Column holding the stream of the later stages' words.
W_REST = 1


def _check_k(log_core: int) -> int:
    if not isinstance(log_core, (int, np.integer)) or isinstance(log_core, bool):
        raise TypeError(f"log_core: expected an int, got {type(log_core).__name__}")
    if not 2 <= log_core <= 12:
        raise ValueError(f"log_core: must be in 2..12, got {log_core}")
    return int(log_core)


def halves(log_core: int) -> tuple[int, int]:
    """(a, b): stages before the corner turn (a = ceil(k/2)) and after it (b = k - a >= 1)."""
    k = _check_k(log_core)
    a = first_half_stages(k)
    return a, k - a


def rom_offset(log_core: int, stage: int) -> int:
    """Index of stage ``stage``'s first entry in :func:`hw.model.ntt.twiddle_rom` (2^k - 2^(k-s))."""
    k = _check_k(log_core)
    if not 0 <= stage < k:
        raise ValueError(f"stage: must be in 0..{k - 1}, got {stage}")
    return (1 << k) - (1 << (k - stage))


@lru_cache(maxsize=None)
def interface_orders(log_core: int) -> dict[str, np.ndarray]:
    """Which two points travel together on each cycle of a transform at every interface of the chain.

    Values are DIF positions i (the in-place index of the transform: after all k stages position i holds
    X[bitrev(i)]), arrays of shape (2^(k-1), 2) indexed [cycle, port]. With i = r + G*j (r < G = 2^b,
    j < 2^a), M = 2^(a-1), M' = 2^(b-1):

    - "input": ``lane_input_order`` (cycle r*M + (j mod M), port j >> (a-1));
    - "turn_in": after the first a stages (cycle r*M + (j >> 1), port j & 1). Every half chain turns
      (port, cycle) = (l_top, l_low bits) into (l_0, l >> 1) for its local index l within a group;
    - "turn_out": into the second half (cycle j*M' + (r mod M'), port r >> (b-1));
    - "reverse_in": after the last b stages (cycle j*M' + (r >> 1), port r & 1);
    - "output": natural order, positions bitrev(2t), bitrev(2t + 1).
    """
    k = _check_k(log_core)
    a, b = halves(k)
    groups = 1 << b
    t = np.arange(1 << (k - 1), dtype=np.int64)[:, None]
    q = np.array([[0, 1]], dtype=np.int64)
    r, jh = t >> (a - 1), t & ((1 << (a - 1)) - 1)
    turn_in = r + groups * (2 * jh + q)
    j, rl = t >> (b - 1), t & ((1 << (b - 1)) - 1)
    turn_out = rl + (q << (b - 1)) + groups * j
    reverse_in = 2 * rl + q + groups * j
    out = {"input": np.asarray(lane_input_order(k)), "turn_in": turn_in, "turn_out": turn_out,
           "reverse_in": reverse_in, "output": bit_reverse_indices(k)[np.asarray(lane_output_order(k))]}
    for v in out.values():
        v.flags.writeable = False
    return out


@lru_cache(maxsize=None)
def twiddle_plan(log_core: int) -> tuple[np.ndarray, np.ndarray]:
    """Where every twiddle sits in a lane's twiddle stream.

    Returns ``(rom_index, stage)``, two read-only int64 arrays of shape (2^(k-1), 2): for input cycle t
    of a transform (the cycle that carries pair ``lane_input_order(k)[t]``) and port column
    (0 = ``w_first``, 1 = ``w_rest``), the index into ``twiddle_rom(k)`` of the word to send and the
    stage that consumes it; both are -1 for the one unused slot (send anything there).

    Stage s entry e is the twiddle of the pair (i, i + h), h = 2^(k-1-s), with i mod h = e.
    The word to send is ``twiddle_rom(k)[rom_index] * c^(2^stage)`` (c = 1 for a plain transform).
    """
    k = _check_k(log_core)
    a, b = halves(k)
    groups, m_cycles = 1 << b, 1 << (a - 1)          # G groups of M cycles (first half)
    m2 = 1 << (b - 1)                               # M': cycles per second-half block
    n_cycles = 1 << (k - 1)
    rom = np.full((n_cycles, 2), -1, dtype=np.int64)
    stage = np.full((n_cycles, 2), -1, dtype=np.int64)
    for t in range(n_cycles):
        r, x = divmod(t, m_cycles)
        # stage 0: the pair (r + G*x, ... + 2^(k-1)) entering now
        rom[t, W_FIRST] = rom_offset(k, 0) + r + groups * x
        stage[t, W_FIRST] = 0
        if x > 0:
            # first-half stage s owns slots [T_s, 2 T_s), T_s = 2^(a-1-s)
            s = a - 1 - (x.bit_length() - 1)
            e = r + groups * (x - (1 << (a - 1 - s)))
            rom[t, W_REST], stage[t, W_REST] = rom_offset(k, s) + e, s
            continue
        # slot 0: word r of the second half's table, in the same two-port format over M' cycles
        if r < m2:
            rom[t, W_REST], stage[t, W_REST] = rom_offset(k, a) + r, a
        elif r > m2:
            x2 = r - m2
            u = b - 1 - (x2.bit_length() - 1)
            e = x2 - (1 << (b - 1 - u))
            rom[t, W_REST], stage[t, W_REST] = rom_offset(k, a + u) + e, a + u
    rom.flags.writeable = False
    stage.flags.writeable = False
    return rom, stage


def twiddle_stream(log_core: int, c=None, inverse: bool = False, *, field: Field = _GL) -> np.ndarray:
    """The two twiddle words to feed a lane on each cycle of one transform: shape (2^(k-1), 2) uint64.

    Column 0 goes to ``i_w_first``, column 1 to ``i_w_rest``, row t alongside input pair t.
    ``c`` (int) is the pass-1 running twiddle: stage s's words are scaled by c^(2^s) so the lane emits
    Y[m] = c^m * X[m]; None (or 1) gives the plain transform. The unused slot carries 0.
    """
    k = _check_k(log_core)
    field = F.get(field)
    rom_index, stage = twiddle_plan(k)
    rom = twiddle_rom(k, inverse, field)
    used = rom_index >= 0
    out = np.zeros(rom_index.shape, dtype=np.uint64)
    out[used] = rom[rom_index[used]]
    if c is not None and int(c) % field.p != 1:
        cpow = np.empty(k, dtype=np.uint64)          # c^(2^s)
        v = int(c) % field.p
        for s in range(k):
            cpow[s] = v
            v = field.mul(v, v)
        out[used] = field.vmul(out[used], cpow[stage[used]])
    return out


def stage_tables(stream: np.ndarray, log_core: int) -> list[np.ndarray]:
    """Inverse of the plan: the twiddles each stage uses, ``tables[s][e]`` for e < 2^(k-1-s), read out
    of a stream array of shape (..., 2^(k-1), 2). Leading axes are kept (one table set per transform)."""
    k = _check_k(log_core)
    stream = F.as_u64(stream)
    if stream.shape[-2:] != (1 << (k - 1), 2):
        raise ValueError(f"stream: expected shape (..., {1 << (k - 1)}, 2), got {stream.shape}")
    rom_index, stage = twiddle_plan(k)
    tables = []
    for s in range(k):
        sel = stage == s
        entries = rom_index[sel] - rom_offset(k, s)
        tab = np.empty(stream.shape[:-2] + (1 << (k - 1 - s),), dtype=np.uint64)
        tab[..., entries] = stream[..., sel]
        tables.append(tab)
    return tables


def to_lane_pairs(x: np.ndarray) -> np.ndarray:
    """Natural-order points (..., 2^k) -> the pairs a lane takes, (..., 2^(k-1), 2), lane_input_order."""
    x = F.as_u64(x)
    k = log2_exact(x.shape[-1], "x length")
    return x[..., lane_input_order(k)]


def from_lane_pairs(pairs: np.ndarray) -> np.ndarray:
    """A lane's output pairs (..., 2^(k-1), 2) in lane_output_order -> natural order (..., 2^k)."""
    pairs = F.as_u64(pairs)
    k = log2_exact(pairs.shape[-2], "pairs cycles") + 1
    out = np.empty(pairs.shape[:-2] + (1 << k,), dtype=np.uint64)
    out[..., lane_output_order(k)] = pairs
    return out


def lane_transform(pairs: np.ndarray, stream: np.ndarray, *, field: Field = _GL) -> np.ndarray:
    """What a lane emits: input pairs (..., 2^(k-1), 2) in lane_input_order, twiddle stream
    (..., 2^(k-1), 2) as from :func:`twiddle_stream`; returns the output pairs in lane_output_order.

    Stage s maps (x[i], x[i+h]) to (x[i] + x[i+h], (x[i] - x[i+h]) * tables[s][i mod h]) (inputs canonical).
    """
    field = F.get(field)
    pairs = F.as_u64(pairs)
    k = log2_exact(pairs.shape[-2], "pairs cycles") + 1
    tables = stage_tables(np.broadcast_to(stream, pairs.shape), k)
    n = 1 << k
    x = np.empty(pairs.shape[:-2] + (n,), dtype=np.uint64)
    x[..., lane_input_order(k)] = pairs
    lead = x.shape[:-1]
    for s in range(k):
        h = n >> (s + 1)
        v = x.reshape(lead + (n // (2 * h), 2, h))
        a, b = v[..., 0, :], v[..., 1, :]
        out = np.empty_like(v)
        out[..., 0, :] = field.vadd(a, b)
        out[..., 1, :] = field.vmul(field.vsub(a, b), tables[s][..., None, :])
        x = out.reshape(lead + (n,))
    return x[..., bit_reverse_indices(k)][..., lane_output_order(k)]


def lane_reference(x: np.ndarray, c=None, inverse: bool = False, *, field: Field = _GL) -> np.ndarray:
    """The golden answer for a lane fed :func:`twiddle_stream` (log_core, c): Y[m] = c^m * NTT(x)[m]
    over the last axis (natural order in and out), from hw.model.ntt's stage reference, not from the
    lane model. ``c`` may be a scalar or one value per transform (shape x.shape[:-1])."""
    from .ntt import dif_stages
    field = F.get(field)
    x = field.vcanon(F.as_u64(x))
    k = log2_exact(x.shape[-1], "x length")
    return dif_stages(x, c=c, inverse=inverse, field=field)[..., bit_reverse_indices(k)]


# -- Lanes with shift stages and the four-step scale at the output ---------------------------------
#
# 2^96 = -1 modulo p, so every 2^q-th root of unity with q <= 6 is a power of two: a stage whose
# twiddles are such roots needs no multiplier (hw/multiplier.py, ShiftMultiplier). In a 2^k DIF transform stage s
# uses 2^(k-s)-th roots, so stages k-6 .. k-1 qualify, provided no per-point scale is folded into them.
# Such a lane applies the pass-1 four-step scale w_N^(n2*m) (N = 2^(2k)) to its outputs instead, and its
# twiddle stream carries the shift amount 0..191 (not the field value) in the words of shift stages, and
# the column n2 whose scale to apply in the one free slot (0: no scale, as in pass 2).

#: 2^SHIFT_ROOTS_LOG-th roots of unity (and their divisors) are powers of two modulo the Goldilocks p, on
#: both of its root chains; a field's own figure is ``Field.shift_roots_log`` (1 on 31-bit fields: only the
#: last stage, whose one twiddle is 1).
SHIFT_ROOTS_LOG = _GL.shift_roots_log


def shift_stages(log_core: int, field: Field = _GL) -> int:
    """Index of the first stage whose twiddles are all powers of two: stages shift_stages(k) .. k-1."""
    return max(0, _check_k(log_core) - F.get(field).shift_roots_log)


def _check_frame(log_core: int, frame) -> int:
    k = _check_k(log_core)
    if frame is None:
        return k
    if not isinstance(frame, (int, np.integer)) or isinstance(frame, bool):
        raise TypeError(f"frame: expected an int, got {type(frame).__name__}")
    if not 2 <= frame <= k:
        raise ValueError(f"frame: a 2^{k} lane runs frames of 2^2 .. 2^{k} points, got 2^{frame}")
    return int(frame)


@lru_cache(maxsize=None)
def physical_stages(log_core: int, frame: int) -> tuple[int, ...]:
    """Which of a 2^k lane's k butterfly stages compute stage s' = 0..f-1 of a 2^f-point frame.

    A lane runs smaller frames by skipping the first stages of each half (with their commutators): the
    frame's own halves are a_f = ceil(f/2) <= a and b_f = f - a_f <= b, and by the self-similarity of
    the DIF network the last a_f stages of the first half and the last b_f of the second are exactly the
    chains of a 2^f lane. So s' < a_f runs on stage a - a_f + s', s' >= a_f on stage k - f + s'."""
    k = _check_k(log_core)
    f = _check_frame(k, frame)
    a, _ = halves(k)
    af, _ = halves(f)
    return tuple((a - af + s) if s < af else (k - f + s) for s in range(f))


def _shifted_words(log_core: int, frame: int, field: Field = _GL) -> np.ndarray:
    """Mask over a frame's stream (2^(f-1), 2): the words consumed by the lane's shift-only stages."""
    _, stage = twiddle_plan(frame)
    phys = np.asarray(physical_stages(log_core, frame) + (-1,))        # stage -1 (unused slot) -> -1
    return phys[stage] >= shift_stages(log_core, field)


def twiddle_shift(value: int, field: Field = _GL) -> int:
    """The j with 2^j = value (mod p), j below the field's ``shift_count`` (192 for Goldilocks); ValueError
    if the value is not such a power of two."""
    field = F.get(field)
    try:
        return field.shift_table[int(value) % field.p]
    except KeyError:
        raise ValueError(f"value: {int(value):#x} is not a shift-multiplier power of two modulo p in "
                         f"{field.name}") from None


def stage_shifts(log_core: int, stage: int, inverse: bool = False, field: Field = _GL) -> tuple[int, ...]:
    """The shift amounts of stage ``stage``'s twiddles (sorted); the stage must be a shift stage."""
    k = _check_k(log_core)
    field = F.get(field)
    if not shift_stages(k, field) <= stage < k:
        raise ValueError(f"stage: {stage} is not a shift stage of a 2^{k} lane ({shift_stages(k, field)}..{k - 1})")
    rom = twiddle_rom(k, inverse, field)
    lo = rom_offset(k, stage)
    return tuple(sorted({twiddle_shift(w, field) for w in rom[lo:lo + (1 << (k - 1 - stage))]}))


def scale_slot(log_core: int) -> int:
    """Input cycle of the free ``w_rest`` slot (the one slot :func:`twiddle_plan` leaves unused)."""
    rom_index, _ = twiddle_plan(_check_k(log_core))
    (t,) = np.flatnonzero(rom_index[:, W_REST] < 0)
    return int(t)


def shift_stream(log_core: int, column: int = 0, inverse: bool = False, *, frame: int | None = None,
                 field: Field = _GL) -> np.ndarray:
    """The stream for a 2^k lane with shift stages running frames of 2^f points (``frame`` = f, default
    k): :func:`twiddle_stream` (f, inverse) with the words consumed by the lane's shift-only stages
    (:func:`physical_stages` >= :func:`shift_stages` (k)) replaced by their shift amounts, and ``column``
    (0 .. 2^k - 1) in the frame's free slot: the lane multiplies output m by w_N^(column * m)."""
    k = _check_k(log_core)
    f = _check_frame(k, frame)
    if not 0 <= int(column) < (1 << k):
        raise ValueError(f"column: must be in 0..{(1 << k) - 1}, got {column}")
    out = twiddle_stream(f, None, inverse, field=field).copy()
    shifted = _shifted_words(k, f, field)
    out[shifted] = [twiddle_shift(w, field) for w in out[shifted]]
    out[scale_slot(f), W_REST] = int(column)
    return out


def decode_stream(stream: np.ndarray, log_core: int, field: Field = _GL) -> tuple[np.ndarray, np.ndarray]:
    """(field-valued stream, column) from :func:`shift_stream` words of a 2^k lane: 2^word for the
    words of shift stages. The frame size f is read off the stream's shape (..., 2^(f-1), 2)."""
    k = _check_k(log_core)
    field = F.get(field)
    stream = F.as_u64(stream)
    f = _check_frame(k, log2_exact(stream.shape[-2], "stream cycles") + 1)
    shifted = _shifted_words(k, f, field)
    out = stream.copy()
    out[..., shifted] = field.vpow(2, stream[..., shifted] & np.uint64((1 << field.shift_bits) - 1))
    column = stream[..., scale_slot(f), W_REST] & np.uint64((1 << k) - 1)     # the lane reads k bits
    out[..., scale_slot(f), W_REST] = 0
    return out, column


def output_scale_factors(log_core: int, column, *, frame: int | None = None, log_n: int | None = None,
                         inverse: bool = False, normalize: bool = False, field: Field = _GL) -> np.ndarray:
    """w_N^(column * m) for m < 2^f (``frame``, default k), N = 2^log_n (default 2^(2k)): shape
    column.shape + (2^f,), natural order. ``inverse``: w_N^(-column * m) (pass 1 of an inverse transform);
    ``normalize``: 1/N for every m, the column ignored (pass 2 of an inverse transform)."""
    k = _check_k(log_core)
    field = F.get(field)
    f = _check_frame(k, frame)
    n = 2 * k if log_n is None else int(log_n)
    if not 1 <= n <= 2 * k:
        raise ValueError(f"log_n: must be in 1..{2 * k}, got {n}")
    column = np.asarray(column, dtype=np.int64)
    m = np.arange(1 << f, dtype=np.int64)
    if normalize:
        return np.full(column.shape + (1 << f,), field.inv(1 << n), dtype=np.uint64)
    exponents = (column[..., None] * m) % (1 << n)
    root = field.root_of_unity(1 << n)
    return field.vpow(field.inv(root) if inverse else root, exponents.astype(np.uint64))


def scaled_lane_transform(pairs: np.ndarray, stream: np.ndarray, *, log_core: int | None = None,
                          log_n: int | None = None, inverse: bool = False, normalize: bool = False,
                          field: Field = _GL) -> np.ndarray:
    """What a 2^k lane (``log_core``, default the frame size) with shift stages and the output scale
    emits for frames of 2^f points (f read off ``pairs``): :func:`lane_transform` on the decoded stream,
    then output m times w_N^(column * m), N = 2^log_n (default 2^(2k)). Pairs and stream as for
    :func:`lane_transform`, the stream from :func:`shift_stream` (k, column, inverse, frame=f).
    The lane's ``inverse`` and ``normalize`` flags select the output factors (:func:`output_scale_factors`)."""
    pairs = F.as_u64(pairs)
    f = log2_exact(pairs.shape[-2], "pairs cycles") + 1
    k = f if log_core is None else log_core
    field = F.get(field)
    plain, column = decode_stream(np.broadcast_to(stream, pairs.shape), k, field)
    y = from_lane_pairs(lane_transform(pairs, plain, field=field))
    y = field.vmul(y, output_scale_factors(k, column.astype(np.int64), frame=f, log_n=log_n,
                                       inverse=inverse, normalize=normalize, field=field))
    return to_natural_pairs(y)


def to_natural_pairs(y: np.ndarray) -> np.ndarray:
    """Natural-order outputs (..., 2^k) -> the output pairs (X[2t], X[2t+1]) (lane_output_order)."""
    y = F.as_u64(y)
    k = log2_exact(y.shape[-1], "y length")
    return y[..., np.asarray(lane_output_order(k))]
