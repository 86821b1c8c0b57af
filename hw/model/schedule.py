"""The order contract between the DMA engine and the NTT engine, defined once here.

Everything that moves points agrees on these functions: the lane gateware accepts points in
:func:`lane_input_order` and emits them in :func:`lane_output_order`; the engine assigns transforms to
lanes with :func:`pass_schedule`; the DMA address generators and the benches' behavioural memories
produce and consume exactly the global indices :func:`pass_schedule` names.

Terminology (the four-step split of docs/architecture.md), for N = N1 * N2 (N1 = 2^ceil(n/2), N2 = 2^floor(n/2);
N1 = N2 = 2^k at the build's largest size):

- pass 1 transforms column n2 (points x[N2*n1 + n2], n1 = 0..N1-1) and produces state[n2, k1];
- pass 2 transforms row k1 (points state[n2, k1], n2 = 0..N2-1) and produces X[k1 + N1*k2].

The pass-1 state is a logical array indexed (n2, k1); where it sits in HBM is the layout's business.
"""

from functools import lru_cache

import numpy as np

from .params import BuildParams

__all__ = ["first_half_stages", "lane_input_order", "lane_output_order", "pass_schedule", "loopback_passes"]


def first_half_stages(log_core: int) -> int:
    """a = ceil(k/2): stages before the corner turn. They pair points at distances 2^(k-1) .. 2^(k-a),
    i.e. they are 2^a-point transforms over the points with equal index mod 2^(k-a)."""
    if not 1 <= log_core <= 12:
        raise ValueError(f"log_core: must be in 1..12, got {log_core}")
    return (log_core + 1) // 2


@lru_cache(maxsize=None)
def lane_input_order(log_core: int) -> np.ndarray:
    """Which two points of a lane's 2^k-point transform enter together on each of its 2^(k-1) cycles.

    Returns ``order[t] = (i0, i1)`` (natural indices within the transform). With a = ceil(k/2),
    G = 2^(k-a) residues and cycle t = r * 2^(a-1) + m (r < G, m < 2^(a-1)):

        (i0, i1) = (r + G*m, r + G*m + 2^(k-1))

    so the pair is exactly the first Gentleman-Sande stage's butterfly, and each residue's 2^a points
    arrive together (the first 2^k reorder of the reference's chain is folded into this read order).
    For k = 12: residue r = 0..63, then m = 0..31, pairs (r + 64m, r + 64m + 2048).
    """
    k = log_core
    a = first_half_stages(k)
    groups = 1 << (k - a)
    t = np.arange(1 << (k - 1), dtype=np.int64)
    r = t >> (a - 1)
    m = t & ((1 << (a - 1)) - 1)
    i0 = r + groups * m
    order = np.stack([i0, i0 + (1 << (k - 1))], axis=1)
    order.flags.writeable = False
    return order


@lru_cache(maxsize=None)
def lane_output_order(log_core: int) -> np.ndarray:
    """Which two outputs of a lane's transform leave together on each cycle: (2t, 2t+1), natural order."""
    t = np.arange(1 << (log_core - 1), dtype=np.int64)
    order = np.stack([2 * t, 2 * t + 1], axis=1)
    order.flags.writeable = False
    return order


def pass_schedule(params: BuildParams, pass_index: int, log_n: int | None = None,
                  batch: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Global indices the engine reads and writes in one pass of a 2^log_n-point transform (default:
    the build's largest, 2^(2k)), cycle by cycle and lane by lane.

    With (n1, n2) = ``params.pass_log_sizes(log_n)``, N1 = 2^n1, N2 = 2^n2: pass 1 transforms the N2
    columns of N1 points (lane frames of f = n1), pass 2 the N1 rows of N2 points (f = n2).

    Returns ``(reads, writes)``, each of shape (rounds, cycles, lanes, 2) with rounds = (transforms in
    the pass) / L and cycles = 2^(f-1): ``reads[g, t, l]`` are the two points lane l takes on cycle t of
    round g and ``writes[g, t, l]`` the two it emits on its output cycle t of the same round.

    Lane l of round g works on column (pass 1) or row (pass 2) number L*g + l.

    - pass 1: reads input indices N2*n1 + n2, writes state indices n2*N1 + k1 (row-major state[n2, k1]);
    - pass 2: reads state indices n2*N1 + k1, writes output indices k1 + N1*k2.

    A batch of ``batch`` = B transforms stored back to back (element e at indices e*N .. e*N + N-1 of
    every buffer) is one pass of B times as many columns (rows): number c = L*g + l of the pass is
    column (row) c mod count of element c div count, so the lanes run the elements back to back without
    a gap, and every index above gains e*N.
    """
    if pass_index not in (1, 2):
        raise ValueError(f"pass_index: must be 1 or 2, got {pass_index}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch: must be an int >= 1, got {batch!r}")
    lanes = params.lanes
    f1, f2 = params.pass_log_sizes(log_n)
    n1, n2 = 1 << f1, 1 << f2
    f, count = (f1, n2) if pass_index == 1 else (f2, n1)
    rounds = int(batch) * count // lanes
    number = (np.arange(rounds)[:, None] * lanes + np.arange(lanes)[None, :])  # [g, l]
    element, which = np.divmod(number[:, None, :, None], count)                # [g, 1, l, 1]
    i_in = lane_input_order(f)[None, :, None, :]                                # [1, t, 1, 2]
    i_out = lane_output_order(f)[None, :, None, :]
    if pass_index == 1:
        reads = n2 * i_in + which          # x[N2*n1 + n2]
        writes = which * n1 + i_out        # state[n2, k1]
    else:
        reads = i_in * n1 + which          # state[n2, k1] with k1 = row
        writes = which + n1 * i_out        # X[k1 + N1*k2]
    base = element * (n1 * n2)
    return reads + base, writes + base


def loopback_passes(params: BuildParams, x: np.ndarray, log_n: int | None = None,
                    batch: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """What the two passes leave in memory when the lanes hand every point back unchanged (the DMA
    benches' stand-in for the engine): ``(state, output)``, each indexed like the logical buffers
    (B x N points for a batch of B)."""
    r1, w1 = pass_schedule(params, 1, log_n, batch)
    r2, w2 = pass_schedule(params, 2, log_n, batch)
    state = np.zeros_like(x)
    state[w1.reshape(-1)] = x[r1.reshape(-1)]
    out = np.zeros_like(x)
    out[w2.reshape(-1)] = state[r2.reshape(-1)]
    return state, out
