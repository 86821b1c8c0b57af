"""Constrained-random runs of the whole kernel, register by register, against the golden model.

:func:`draw_run` picks one start the way a fuzzing host would: a native size, a batch, the flags, a coset
shift (edge values included), a row step (element r of the batch shifted by g x s^r; 0 or 1 now and then,
with or without the coset), a zero-extended input or a chained output of a pair the layout places, or a
start the kernel must refuse (a bad size, batch, shift, row step, flag or pair), and the traffic the HBM models make
meanwhile (refresh windows, random stalls on every AXI channel). :class:`RegisterCard` runs it on a
kernel with the register interface of :class:`sim.kernel_model.KernelModel` (the Verilator simulation,
:class:`sim.cosim.SimulatedKernel`, or the model itself), on buffers of the build's largest size that hold
random garbage wherever the run must not look, and checks

- the result, point by point, against :func:`hw.model.ntt.transform` of the same input in the build's field
  (``params.prime_field``; each element with its own shift under a row step; zero-extended
  where the run reads only 2^m points; for a chained output, the words the next run reads);
- a refused start: STATUS as :meth:`hw.model.run.Run.check` says, and no point buffer changed;
- the status record (hw.model.record): written, the identification words, this start's RUN and BATCH
  words, SEQUENCE one more than the last, STATUS as the register reads, and cycle counts that add up (the
  passes inside the total; NTT cycles over DMA cycles of each pass at the simulated clocks' ratio).

:func:`regress` runs ``n`` of them from one seed and raises :class:`RegressionFailure` naming the seed, the
run's index and the run, so a failure is reproduced with the same seed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from nantucket.hw.model import ntt, regmap as R
from nantucket.hw.model.field import P
from nantucket.hw.model.layout import HbmLayout, lde_pairs
from nantucket.hw.model.params import BuildParams
from nantucket.hw.model.record import RECORD_BYTES, StatusRecord
from nantucket.hw.model.run import FLAG_COSET, FLAG_INVERSE, Run, max_batch

__all__ = ["TrialRun", "draw_run", "RegisterCard", "RegressionFailure", "regress", "EDGE_POINTS", "EDGE_SHIFTS", "edge_points"]

#: Field values every input mixes in: 0, 1, p-1, p-2 and powers of two around the 32- and 64-bit words.
EDGE_POINTS = np.array([0, 1, P - 1, P - 2, 1 << 31, (1 << 32) - 1, 1 << 32, (1 << 32) + 1, 1 << 63, P - (1 << 32)],
                       dtype=np.uint64)
#: Coset shifts drawn now and then: the smallest and largest, and the generator-like ones provers use.
EDGE_SHIFTS = (1, 2, 7, P - 1, P - 2, 1 << 32, (1 << 32) - 1)


@dataclass(frozen=True)
class TrialRun:
    """One start: the argument registers (``run``), the traffic while it runs, the input's seed."""
    run: Run
    refresh: bool
    stalls: bool
    data_seed: int

    def __str__(self) -> str:
        r = self.run
        parts = [f"log_n={r.log_n}", f"batch={r.batch}", f"flags=0x{r.flags:x}"]
        if r.flags & FLAG_COSET or r.coset_shift:
            parts.append(f"coset_shift={r.coset_shift}")
        if r.row_step:
            parts.append(f"row_step={r.row_step}")
        if r.input_log_m:
            parts.append(f"input_log_m={r.input_log_m}")
        if r.chain_log_n:
            parts.append(f"chain_log_n={r.chain_log_n}")
        parts += [f"refresh={int(self.refresh)}", f"stalls={int(self.stalls)}", f"data_seed={self.data_seed}"]
        return ", ".join(parts)


def _pick(rng, values):
    """One of ``values`` (Python ints, exactly: numpy's choice would round those past 2^63)."""
    return values[int(rng.integers(len(values)))]


def _shift(rng, p: int = P) -> int:
    if rng.random() < 0.3:
        return _pick(rng, [g for g in EDGE_SHIFTS if g < p])
    return int(rng.integers(1, p, dtype=np.uint64))


def _batch(rng, params: BuildParams, *log_ns: int) -> int:
    top = min(max_batch(params, n) for n in log_ns)
    return 1 if rng.random() < 0.5 else int(rng.integers(1, top + 1))


def _refused_run(rng, params: BuildParams) -> Run:
    """A start the kernel must refuse, one reason (or two) at a time."""
    sizes = list(range(params.min_log_n, params.max_log_n + 1))
    n = _pick(rng, sizes)
    base = Run(n, batch=1)
    bad = [replace(base, log_n=_pick(rng, [0, params.min_log_n - 1, params.max_log_n + 1, 31, 1 << 31])),
           replace(base, batch=0),
           replace(base, batch=max_batch(params, n) + int(rng.integers(1, 4))),
           replace(base, flags=FLAG_COSET, coset_shift=_pick(rng, [0, params.prime_field.p, params.prime_field.p + 1,
                                                                    (1 << 64) - 1])),
           # a row step above 1 without the coset, or one not below p with it
           replace(base, flags=_pick(rng, [0, FLAG_INVERSE]), row_step=_pick(rng, [2, params.prime_field.p - 1])),
           replace(base, flags=FLAG_COSET, coset_shift=1, row_step=_pick(rng, [params.prime_field.p, (1 << 64) - 1])),
           replace(base, flags=int(rng.integers(1, 1 << 30)) << 2 | int(rng.integers(0, 4))),
           replace(base, input_log_m=_pick(rng, [n + 1, 1, 63])),
           replace(base, chain_log_n=_pick(rng, [params.max_log_n + 1, 2]))]
    run = bad[int(rng.integers(len(bad)))]
    if rng.random() < 0.2:                              # two reasons at once
        run = replace(run, batch=0)
    return run


def draw_run(rng: np.random.Generator, params: BuildParams, *, refused_share: float = 0.1) -> TrialRun:
    """One random start for a kernel built with ``params`` (see the module docstring)."""
    pairs = sorted(p for p in lde_pairs(params))
    sizes = list(range(params.min_log_n, params.max_log_n + 1))
    flags = int(rng.integers(0, 4))                    # inverse and coset, each half the time
    shift = _shift(rng, params.prime_field.p) if flags & FLAG_COSET else 0
    kind = rng.random()
    if kind < refused_share:
        run = _refused_run(rng, params)
    elif kind < refused_share + 0.2 and pairs:          # a chained output: 2^m points written as a 2^t input
        m, t = pairs[int(rng.integers(len(pairs)))]
        run = Run(m, flags, _batch(rng, params, m, t), shift, 0, t)
    elif kind < refused_share + 0.4 and pairs:          # a zero-extended input: 2^m of a 2^t-point run
        m, t = pairs[int(rng.integers(len(pairs)))]
        run = Run(t, flags, _batch(rng, params, t), shift, m if m != t else 0, 0)
    else:
        n = _pick(rng, sizes)
        run = Run(n, flags, _batch(rng, params, n), shift)
    if not kind < refused_share and rng.random() < 0.5:
        # a row step: element r's shift g x s^r with the coset (s an edge or random, a root of unity as the
        # four-step's twiddles use), 0 or 1 (every element the same shift) with or without it
        p = params.prime_field.p
        steps = [0, 1] if not flags & FLAG_COSET else [2, p - 1, params.prime_field.root_of_unity(1 << run.log_n),
                                                        _shift(rng, p)]
        run = replace(run, row_step=_pick(rng, steps))
    return TrialRun(run, refresh=bool(rng.random() < 0.8), stalls=bool(rng.random() < 0.6),
                    data_seed=int(rng.integers(1 << 31)))


def edge_points(p: int = P) -> np.ndarray:
    """The edge values of the field of modulus ``p``: :data:`EDGE_POINTS` below p, p-1, p-2 and, in a 31-bit
    field, the powers of two around its half and full word (2^15, 2^16, 2^30 and their neighbours)."""
    small = [] if p > 1 << 32 else [(1 << 15) - 1, 1 << 15, (1 << 15) + 1, (1 << 16) - 1, 1 << 16, (1 << 16) + 1,
                                    (1 << 30) - 1, 1 << 30, (1 << 30) + 1]
    return np.array(sorted({v for v in [*EDGE_POINTS.tolist(), *small] if v < p} | {p - 1, p - 2}),
                    dtype=np.uint64)


def _points(seed: int, shape, p: int = P) -> np.ndarray:
    """Random elements of the field of modulus ``p`` with its edge values mixed in (about one in eight)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, p, size=shape, dtype=np.uint64)
    edges = rng.random(shape) < 0.125
    x[edges] = rng.choice(edge_points(p), size=int(edges.sum()))
    return x


class RegressionFailure(AssertionError):
    """A random run went wrong; the message names the seed, the run's index and the run."""


class RegisterCard:
    """A kernel driven register by register (``read``/``write`` of the control space; a read of CTRL waits
    for a run in progress, as :class:`sim.cosim.SimulatedKernel` and :class:`sim.kernel_model.KernelModel`
    do), with one buffer of the build's largest size per channel and a status record buffer in HBM[0],
    allocated in ``kernel.hbm``."""

    def __init__(self, kernel):
        self.kernel = k = kernel
        self.params = p = kernel.params
        self.rmap = R.RegisterMap(p)
        nbytes = HbmLayout(p).channel_bytes
        self.status_address = k.hbm.allocate(0, RECORD_BYTES)
        bases = [k.hbm.allocate(ch, nbytes) for ch in range(p.channels)]
        self.mem = [k.hbm.view(base, nbytes, bank=ch).view(np.uint64) for ch, base in enumerate(bases)]
        self._written: dict[int, int] = {}
        self.set_args(status=self.status_address, **{R.pointer_arg(ch): b for ch, b in enumerate(bases)})
        self.sequence = None                        # the last record's SEQUENCE (None: none read yet)
        dma, ntt_ = p.sim_period_ps("dma"), p.sim_period_ps("ntt")
        self.clock_ratio = dma / ntt_               # NTT cycles per DMA cycle in the simulation

    def set_args(self, **values: int) -> None:
        """Write kernel arguments by name, skipping words that already hold the value."""
        for name, value in values.items():
            for i, offset in enumerate(self.rmap.arg(name).word_offsets):
                word = (value >> (32 * i)) & 0xFFFF_FFFF
                if self._written.get(offset) != word:
                    self.kernel.write(offset, word)
                    self._written[offset] = word

    def record(self) -> StatusRecord:
        return StatusRecord.from_bytes(self.kernel.hbm.view(self.status_address, RECORD_BYTES, bank=0))

    def start(self, trial: TrialRun) -> int:
        """Set the arguments and the traffic, start, wait for done; STATUS."""
        k, r = self.kernel, trial.run
        if hasattr(k, "traffic"):
            k.traffic(refresh=trial.refresh, stalls=trial.stalls)
        self.set_args(**r.words())
        k.write(R.CTRL, R.CTRL_AP_START)
        if not k.read(R.CTRL) & R.CTRL_AP_DONE:
            raise RegressionFailure("the kernel did not finish within its cycle budget")
        return k.read(self.rmap.id_offset("STATUS"))

    def check(self, trial: TrialRun) -> None:
        """Run ``trial`` on fresh garbage and check everything the module docstring lists (an AssertionError
        naming the trial)."""
        try:
            self._check(trial)
        except AssertionError as e:
            raise AssertionError(f"{trial}: {e}") from None

    def _check(self, trial: TrialRun) -> None:
        p, run = self.params, trial.run
        rng = np.random.default_rng(trial.data_seed)
        for m in self.mem:
            m[:] = rng.integers(0, 1 << 64, m.size, dtype=np.uint64)
        refused = run.check(p)
        if refused:
            before = [m.copy() for m in self.mem]
            status = self.start(trial)
            assert status == refused, f"STATUS 0x{status:x}, Run.check says 0x{refused:x}"
            assert all(np.array_equal(a, b) for a, b in zip(before, self.mem)), "a refused start wrote points"
        else:
            want = self._place_input_and_expect(run, trial.data_seed)
            status = self.start(trial)
            assert status == 0, f"STATUS 0x{status:x}: {R.decode_status(status)}"
            got = self._result(run)
            bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
            assert bad.size == 0, (f"{bad.size} of {want.size} points differ from the golden model, first at "
                                   f"{bad[0]}: {got.reshape(-1)[bad[0]]} != {want.reshape(-1)[bad[0]]}")
        self._check_record(run, status, refused)

    def _place_input_and_expect(self, run: Run, seed: int) -> np.ndarray:
        """Scatter the run's input (random, edge values mixed in) and return the golden model's output. A
        zero-extended input sits in the 2^log_n-point input placement with garbage where the zeros are:
        the kernel must read none of it."""
        p, b = self.params, run.batch
        x = _points(seed, (b, 1 << run.log_n), p.prime_field.p)
        HbmLayout(p, run.log_n, b).scatter_into(x.reshape(-1), self.mem, "input")
        if run.input_log_m:
            x[:, 1 << run.input_log_m:] = 0
        shifts = run.element_shifts(p.prime_field.p)
        if shifts is None or not run.steps_rows:
            return ntt.transform(x, inverse=bool(run.flags & FLAG_INVERSE), coset=run.coset, field=p.prime_field)
        # a row step: each element its own shift g x s^r (hw.model.run.Run.element_shifts)
        return np.stack([ntt.transform(row, inverse=bool(run.flags & FLAG_INVERSE), coset=g, field=p.prime_field)
                         for row, g in zip(x, shifts)])

    def _result(self, run: Run) -> np.ndarray:
        p, b = self.params, run.batch
        if run.chain_log_n:             # the output as the zero-extended input of a 2^t-point run
            got = HbmLayout(p, run.chain_log_n, b).gather_from(self.mem, "input").reshape(b, -1)
            return got[:, :1 << run.log_n]
        return HbmLayout(p, run.log_n, b).gather_from(self.mem, "output").reshape(b, -1)

    def _check_record(self, run: Run, status: int, refused: int) -> None:
        rec = self.record()
        assert rec.written, f"no status record (MAGIC 0x{rec['MAGIC']:x}, VERSION {rec['VERSION']})"
        assert not rec.mismatched_ids(self.params), f"record identification: {rec.mismatched_ids(self.params)}"
        assert rec.describes(run), f"the record describes another start: RUN 0x{rec['RUN']:x}, BATCH {rec['BATCH']}"
        assert rec.status == status, f"record STATUS 0x{rec.status:x}, register 0x{status:x}"
        if self.sequence is not None:
            assert rec["SEQUENCE"] == (self.sequence + 1) & 0xFFFF_FFFF, \
                f"record SEQUENCE {rec['SEQUENCE']} after {self.sequence}"
        self.sequence = rec["SEQUENCE"]
        c = rec.cycles()
        if refused:
            assert not any(c.values()), f"a refused start's record counts cycles: {c}"
            return
        passes = c["PASS1_DMA_CYCLES"] + c["PASS2_DMA_CYCLES"]
        assert c["PASS1_DMA_CYCLES"] > 0 and c["PASS2_DMA_CYCLES"] > 0 and passes <= c["TOTAL_DMA_CYCLES"], c
        if hasattr(self.kernel, "traffic"):             # a clocked kernel: each pass at the clocks' ratio
            for i in (1, 2):
                dma, ntt_ = c[f"PASS{i}_DMA_CYCLES"], c[f"PASS{i}_NTT_CYCLES"]
                assert abs(ntt_ - dma * self.clock_ratio) <= 0.02 * dma * self.clock_ratio + 4, \
                    f"pass {i}: {ntt_} NTT cycles in {dma} DMA cycles, the clocks' ratio is {self.clock_ratio:.3f}"


def regress(card: RegisterCard, n: int, seed: int, *, progress=None) -> dict:
    """``n`` random runs drawn from ``seed`` on ``card``; a :class:`RegressionFailure` naming the seed, the
    run's index and the run on the first failure. Returns counts: runs, refused, chained, extended,
    batched, coset, stepped (a row step over a batch of more than one), inverse, stalled, and seconds."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n: expected a positive int, got {n!r}")
    rng = np.random.default_rng(seed)
    counts = dict(runs=0, refused=0, chained=0, extended=0, batched=0, coset=0, stepped=0, inverse=0, stalled=0)
    t0 = time.monotonic()
    for i in range(n):
        trial = draw_run(rng, card.params)
        try:
            card.check(trial)
        except AssertionError as e:
            raise RegressionFailure(f"seed {seed}, run {i} of {n} ({trial}): {e}") from e
        r = trial.run
        refused = bool(r.check(card.params))
        counts["runs"] += 1
        counts["refused"] += refused
        if not refused:
            counts["chained"] += bool(r.chain_log_n)
            counts["extended"] += bool(r.input_log_m)
            counts["batched"] += r.batch > 1
            counts["coset"] += bool(r.flags & FLAG_COSET)
            counts["stepped"] += bool(r.flags & FLAG_COSET) and r.steps_rows and r.batch > 1
            counts["inverse"] += bool(r.flags & FLAG_INVERSE)
            counts["stalled"] += trial.stalls
        if progress is not None:
            progress(i + 1, n)
    counts["seconds"] = time.monotonic() - t0
    return counts
