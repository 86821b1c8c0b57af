"""cocotb bench: coset transforms through hw.engine.NttEngine (the lanes' output scales at head or tail +
the shared factor generator), with the behavioural memory of sim/benches/engine.py standing in for the
DMA engine.

Forward coset (``coset`` = 1, ``inverse`` = 0): the state after pass 1 must be the column transforms of
x_j g^j without the four-step factor (written out independently: pow() and the golden transform of
each column), equal to the golden model's coset passes (hw.model.coset.coset_passes), and the result
hw.model.ntt.transform(x, coset=g). Inverse coset (``inverse`` = 1): the plain inverse pass 1
(hw.model.fourstep) and hw.model.ntt.transform(x, inverse=True, coset=g).

Shifts: 1, p - 1, 2^32, 7 and random ones, in the build's field (``params.prime_field``); data random and
edge values; random gaps and stalls. Cycle counts (no stalls): each coset pass takes exactly the
engine's ``coset_pass_extra_cycles`` more than the plain one once the generator's chains are computed for
the shift (cached=True when it repeats the previous run: tables kept); every size of the build is
measured and logged. A streaming pass started right after the shift changed waits for the chains at
most ``chain_cycles`` more.
"""

import random

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles

from nantucket.hw.model import coset as coset_model, fourstep, ntt
from nantucket.sim.benches.engine import EngineTB, vectors
from nantucket.sim.benches.lib import pattern
from nantucket.hw.flow.runner import bench_facts

def edge_shifts(field) -> tuple[int, ...]:
    """1, p - 1, 2^32 (below p), 7 (the shift provers use with plonky2's chain) and, in a 31-bit field,
    2^30 and 2^16 + 1 (operand bits at the Montgomery unit's DSP splits)."""
    extra = (2**30, 2**16 + 1) if field.width < 64 else ()
    return tuple(dict.fromkeys(g for g in (1, field.p - 1, 2**32, 7) + extra if g < field.p))


def expected(p, x: np.ndarray, g: int, inverse: bool, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(state after pass 1 as a flat buffer, result) this engine must produce."""
    f1, f2 = p.pass_log_sizes(n)
    field = p.prime_field
    state, _ = coset_model.coset_passes(p, x, g, n, inverse=inverse)
    if inverse:         # the pass-1 state written out independently: the plain inverse pass 1
        want = fourstep.pass1(x, 1 << f1, inverse=True, field=field)
    else:               # state[n2, k1]: the N1-point transform of column n2 of x_j g^j, no four-step factor
        y = field.vmul(field.as_u64(x), field.powers(g, 1 << n)).reshape(1 << f1, 1 << f2)
        want = np.stack([ntt.transform(y[:, c], field=field) for c in range(1 << f2)])
    assert np.array_equal(state, want.reshape(-1)), "the model's coset pass-1 state"
    return state, ntt.transform(x, inverse=inverse, coset=g, field=field)


def coset_facts(engine) -> dict:
    """The engine's published coset cycle figures this bench checks, by "n,pass,inverse,cached"."""
    extra = {f"{n},{pi},{int(inv)},{int(c)}": engine.coset_pass_extra_cycles(n, pi, inv, 1, c)
             for n in engine.sizes for pi in (1, 2) for inv in (False, True) for c in (False, True)}
    return {"coset_pass_extra": extra, "chain_cycles": engine.coset_factors.chain_cycles}


class CosetTB(EngineTB):
    def __init__(self, dut):
        super().__init__(dut)
        facts = bench_facts()
        self.pass_extra = facts["coset_pass_extra"]
        self.chain_cycles = facts["chain_cycles"]
        self.run["coset_shift"] = 7

    def mode(self, g: int | None, inverse: bool = False):
        self.set_run(coset=int(g is not None), coset_shift=7 if g is None else g, inverse=int(inverse))

    async def transform(self, x, g, inverse, n, idle="random", stall="random", seed=1):
        """Both passes with shift g (None: plain); checks them and returns the two passes' cycles."""
        p = self.params
        self.mode(g, inverse)
        idle_it, stall_it = pattern(idle, seed=seed), pattern(stall, seed=seed + 1)
        state, c1 = await self.run_pass(x, 1, idle_it, stall_it, n, inverse=inverse)
        result, c2 = await self.run_pass(state, 2, idle_it, stall_it, n, inverse=inverse)
        if g is None:
            want_state = fourstep.pass1(x, 1 << p.pass_log_sizes(n)[0], inverse=inverse,
                                        field=self.field).reshape(-1)
            want = ntt.transform(x, inverse=inverse, field=self.field)
        else:
            want_state, want = expected(p, x, g, inverse, n)
        what = f"2^{n} shift {g} {'inverse' if inverse else 'forward'}"
        assert np.array_equal(state, want_state), f"{what}: state after pass 1 differs from the model"
        assert np.array_equal(result, want), f"{what}: result differs from the golden model"
        return c1, c2


def shifts(field, rng: random.Random, count: int) -> list[int]:
    return list(edge_shifts(field)) + [rng.randrange(2, field.p) for _ in range(count)]


@cocotb.test()
async def test_shifts_and_data(dut):
    """Every edge shift and random ones, forward and inverse, random and edge-value data, at the
    largest, the smallest and an odd size, under random gaps and stalls; plain runs in between."""
    tb = CosetTB(dut)
    await tb.start()
    rng = random.Random(5)
    sizes = tb.sizes
    odd = [n for n in sizes if n % 2] or sizes
    for i, g in enumerate(shifts(tb.field, rng, 2)):
        for inverse in (False, True):
            n = (sizes[-1], sizes[0], odd[-1])[(2 * i + inverse) % 3]
            kind = ("random", "edges", "max", "impulse")[(2 * i + inverse) % 4]
            x = vectors(kind, 1 << n, seed=i, field=tb.field)
            await tb.transform(x, g, inverse, n, seed=10 * i + inverse)
        if i % 2:
            x = vectors("random", 1 << sizes[-1], seed=100 + i, field=tb.field)
            await tb.transform(x, None, False, sizes[-1], seed=i)


@cocotb.test()
async def test_cycles(dut):
    """No stalls: at every size, a plain transform, then forward and inverse coset ones with the chains
    computed: each coset pass takes exactly coset_pass_extra_cycles more (cached: the inverse again, its
    tables kept). Then the shift changes right before a forward start: pass 1 waits for the chains (at
    most chain_cycles more), pass 2 costs nothing."""
    tb = CosetTB(dut)
    await tb.start()
    p = tb.params
    g = 7
    tb.mode(g)
    await ClockCycles(dut.clk, tb.chain_cycles + 2)        # chains for g computed while idle
    for n in tb.sizes:
        x = vectors("random", 1 << n, seed=n, field=tb.field)
        plain = await tb.transform(x, None, False, n, "none", "none")
        fwd = await tb.transform(x, g, False, n, "none", "none")
        inv = await tb.transform(x, g, True, n, "none", "none")
        again = await tb.transform(x, g, True, n, "none", "none")    # the tables are kept
        for pi, c_plain, c_fwd, c_inv, c_again in zip((1, 2), plain, fwd, inv, again):
            extra = [tb.pass_extra[f"{n},{pi},{inv},{cached}"] for inv, cached in ((0, 0), (1, 0), (1, 1))]
            assert [c_fwd, c_inv, c_again] == [c_plain + e for e in extra], \
                f"2^{n} pass {pi}: coset pass cycles {c_fwd}/{c_inv}/{c_again}, expected plain {c_plain} + {extra}"
        dut._log.info(f"cycles 2^{n}: plain {sum(plain)}, forward coset {sum(fwd)}, "
                      f"inverse coset {sum(inv)} "
                      f"(+{100 * (sum(fwd) / sum(plain) - 1):.2f} %), repeated {sum(again)} "
                      f"(+{100 * (sum(again) / sum(plain) - 1):.2f} %)")
    n = tb.sizes[-1]
    x = vectors("random", 1 << n, seed=3, field=tb.field)
    plain = await tb.transform(x, None, False, n, "none", "none")
    cold = await tb.transform(x, 12345, False, n, "none", "none")   # the shift changes at the start
    warm = tb.pass_extra[f"{n},1,0,0"]
    wait = cold[0] - plain[0]
    assert warm < wait <= warm + tb.chain_cycles + 2, f"cold pass waited {wait}"
    assert cold[1] == plain[1] + tb.pass_extra[f"{n},2,0,0"]
    dut._log.info(f"cycles 2^{n} right after a new shift: pass 1 +{wait} (chains {tb.chain_cycles})")


@cocotb.test()
async def test_shift_changes_while_idle(dut):
    """The shift changes while the generator is still working on the previous one (and once more after
    a plain pass): the next coset pass must use the new shift."""
    tb = CosetTB(dut)
    await tb.start()
    rng = random.Random(9)
    n = tb.sizes[-1]
    for i in range(2):
        tb.mode(rng.randrange(2, tb.field.p))
        await ClockCycles(dut.clk, tb.chain_cycles // 3)
        g = rng.randrange(2, tb.field.p)
        x = vectors("random", 1 << n, seed=20 + i, field=tb.field)
        await tb.transform(x, g, bool(i), n, seed=i)
