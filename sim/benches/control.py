"""cocotb bench for hw.control.ControlSlave (s_axi_control, ap_ctrl_hs) on Verilator.

The host side is cocotbext-axi's AxiLiteMaster; the kernel side is a stub that records every ``start``
pulse (with ``run`` / ``base`` / ``supported`` / ``refused`` as they are then) and pulses ``done`` /
``reject`` when a test tells it to. Expected register values come from a shadow of the reference decoder
:class:`sim.kernel_model.KernelModel` (which the register-map conformance sequence also uses), told
about every start and done; strobed writes are merged byte by byte on the expected side.

Every host-side test runs under three backpressure patterns (none / random / bursty pauses on AW, W
and AR valid and on B and R ready). A protocol monitor checks on every cycle: BVALID/RVALID (and
their payloads) hold until taken, responses are OKAY, BVALID and RVALID rise exactly
``write_latency`` / ``read_latency`` cycles after their handshakes (published by the component),
``start`` is a single-cycle pulse ``start_latency`` cycles after the rise of BVALID of the accepting
write, ``idle`` falls with that rise (so the host sees the start taken at once), and ``interrupt``
equals GIER & IP_IER & IP_ISR of the shadow.
One raw-pin test drives AW and W in every order (AW first, W first, both together) without the master.
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

from nantucket.hw.axi import fault_layout
from nantucket.hw.model import regmap as R
from nantucket.hw.model.params import BuildParams
from nantucket.hw.run import run_fields
from nantucket.sim.benches.lib import pattern, reset, start_clock
from nantucket.sim.kernel_model import HbmModel, KernelModel
from nantucket.sim.regmap_conformance import check_conformance
from nantucket.hw.flow.runner import bench_facts

BACKPRESSURE = ("none", "random", "bursty")
MASK32 = 0xFFFF_FFFF
#: Every test finishes in well under 20 us of simulated time (2 ns clock); a hang fails instead.
TIMEOUT_US = 100


def expected_run(log_n: int, flags: int = 0, batch: int = 1, coset_shift: int = 0, input_log_m: int = 0,
                 chain_log_n: int = 0, row_step: int = 0) -> dict[str, int]:
    """The ``run`` port's fields for an accepted start with these argument registers: the flag bits
    apart, an input of all 2^log_n points (input_log_m = log_n) as the plain run, a row step of 0 or 1
    as 0 (every element the same shift)."""
    return {"log_n": log_n, "inverse": int(bool(flags & R.FLAG_INVERSE)), "coset": int(bool(flags & R.FLAG_COSET)),
            "batch": batch, "coset_shift": coset_shift, "input_log_m": 0 if input_log_m == log_n else input_log_m,
            "chain_log_n": chain_log_n, "row_step": row_step if row_step > 1 else 0, "op": 0}


class ShadowKernel(KernelModel):
    """The reference decoder, with the kernel's side (start seen, done pulsed) driven by the bench."""

    def __init__(self, params: BuildParams):
        super().__init__(params, HbmModel(1), layout=None, hang=True)

    def _start(self) -> None:
        self._idle, self._ready = False, True
        self._status = 0                               # any accepted start clears STATUS

    def finish(self, reject: bool) -> None:
        if self._idle:
            return                                     # a done while idle means nothing
        self._status = (self._status & ~R.STATUS_REJECTED) | (self.refusal() if reject else 0)
        self._idle, self._done = True, True
        if self._ier & R.IER_DONE:
            self._isr |= R.ISR_DONE
        self.runs += 1

    def write_strobed(self, offset: int, value: int, strobe: int) -> None:
        """A write with byte strobes: the model sees the merged word (bits under a 0 strobe keep the
        value the register holds; read-only and side-effect bits only act when their byte is strobed)."""
        mask = sum(0xFF << (8 * i) for i in range(4) if strobe >> i & 1)
        if offset == R.CTRL or offset == R.IP_ISR:
            self.write(offset, value & mask)           # ap_start / toggle: 0 = no action
        elif offset in (R.GIER, R.IP_IER) or offset in self._words:
            old = self.read(offset)
            self.write(offset, (old & ~mask) | (value & mask))
        else:
            self.write(offset, value)                  # ID block, unmapped: ignored anyway


class ControlTB:
    def __init__(self, dut):
        facts = bench_facts()
        self.dut = dut
        self.params = BuildParams(**facts["params"])
        self.props = facts["props"]
        self.rmap = R.RegisterMap(self.params)
        self.shadow = ShadowKernel(self.params)
        self.starts: list[dict] = []            # what the kernel saw at every start pulse
        self.errors: list[str] = []
        self.cycle = 0
        self.axil = None

    # -- set-up ------------------------------------------------------------------------------------

    async def start(self, backpressure: str = "none", *, master: bool = True):
        d = self.dut
        start_clock(d.clk)
        for s in (d.done, d.reject, d.fault, d.axil__awvalid, d.axil__wvalid, d.axil__arvalid,
                  d.axil__bready, d.axil__rready, d.axil__awaddr, d.axil__araddr, d.axil__wdata,
                  d.axil__wstrb):
            s.value = 0
        if master:
            self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(d, "axil_"), d.clk, d.rst,
                                      reset_active_level=True)
            if backpressure != "none":
                for ch in (self.axil.write_if.aw_channel, self.axil.write_if.w_channel,
                           self.axil.write_if.b_channel, self.axil.read_if.ar_channel,
                           self.axil.read_if.r_channel):
                    ch.set_pause_generator(pattern(backpressure, 0.4, seed=random.getrandbits(32)))
        await reset(d.clk, d.rst)
        cocotb.start_soon(self._monitor())

    # -- host side ---------------------------------------------------------------------------------

    async def read(self, offset: int) -> int:
        return int.from_bytes((await self.axil.read(offset, 4)).data, "little")

    async def write(self, offset: int, value: int) -> None:
        await self.axil.write(offset, (value & MASK32).to_bytes(4, "little"))

    async def check_read(self, offset: int, why: str) -> int:
        """Read ``offset`` and compare with the shadow (which applies the same read side effects)."""
        got = await self.read(offset)
        want = self.shadow.read(offset)
        assert got == want, f"read 0x{offset:03x} ({why}): got 0x{got:08x}, expected 0x{want:08x}"
        return got

    async def check_write(self, offset: int, value: int) -> None:
        await self.write(offset, value)
        self.shadow.write(offset, value)

    async def write_args(self, log_n: int, bases: list[int]) -> None:
        await self.check_write(self.rmap.arg("log_n").offset, log_n)
        for pa, b in zip(self.rmap.pointer_args, bases):
            lo, hi = self.rmap.split_pointer(b)
            await self.check_write(pa.word_offsets[0], lo)
            await self.check_write(pa.word_offsets[1], hi)

    def random_bases(self) -> list[int]:
        return [random.getrandbits(64) for _ in range(self.params.channels)]

    async def start_run(self, expect_start: bool = True) -> dict | None:
        n = len(self.starts)
        await self.check_write(R.CTRL, R.CTRL_AP_START)
        await ClockCycles(self.dut.clk, 3)
        if not expect_start:
            assert len(self.starts) == n, "a start was accepted while a run was in progress"
            return None
        assert len(self.starts) == n + 1, f"expected one start pulse, saw {len(self.starts) - n}"
        return self.starts[-1]

    # -- kernel side -------------------------------------------------------------------------------

    async def pulse_done(self, reject: bool = False, *, settle: int = 2) -> None:
        d = self.dut
        await FallingEdge(d.clk)
        d.done.value = 1
        d.reject.value = int(reject)
        await FallingEdge(d.clk)                       # the RTL took done at the rising edge between
        self.shadow.finish(reject)
        d.done.value = 0
        d.reject.value = random.getrandbits(1)         # ignored without done
        await ClockCycles(d.clk, settle)

    async def pulse_fault(self, channel: int, resp: int, write: bool) -> None:
        """One cycle of ``fault`` (as the DMA reports an AXI error response)."""
        d = self.dut
        layout = fault_layout(self.params.channels)
        word = layout.const({"valid": 1, "write": int(write), "resp": resp, "channel": channel}).as_value().value
        await FallingEdge(d.clk)
        d.fault.value = word
        await FallingEdge(d.clk)
        self.shadow.axi_error(channel, resp, write)
        d.fault.value = 0
        await ClockCycles(d.clk, 2)

    # -- protocol monitor --------------------------------------------------------------------------

    def _fail(self, msg: str):
        self.errors.append(f"cycle {self.cycle}: {msg}")

    async def _monitor(self):
        d = self.dut
        wl, rl, sl = self.props["write_latency"], self.props["read_latency"], self.props["start_latency"]
        aw_hs: list[int] = []        # cycles of AW / W handshakes not yet answered
        w_hs: list[int] = []
        last_b_take = -1000          # the previous response must be taken before the next can rise
        r_due = None
        prev_b = prev_r = None
        prev_start = 0
        prev_idle = 1
        accepted: list[int] = []     # cycles of BVALID rises with idle falling: starts due start_latency later
        while True:
            await FallingEdge(d.clk)
            await ReadOnly()
            c = self.cycle
            bvalid, bready = int(d.axil__bvalid.value), int(d.axil__bready.value)
            rvalid, rready = int(d.axil__rvalid.value), int(d.axil__rready.value)
            b = (bvalid, bready, int(d.axil__bresp.value))
            r = (rvalid, rready, int(d.axil__rresp.value), int(d.axil__rdata.value))
            start = int(d.start.value)
            # holding rules
            if prev_b and prev_b[0] and not prev_b[1] and (not bvalid or b[2] != prev_b[2]):
                self._fail("BVALID/BRESP changed before BREADY")
            if prev_r and prev_r[0] and not prev_r[1] and (not rvalid or r[2:] != prev_r[2:]):
                self._fail("RVALID/RDATA/RRESP changed before RREADY")
            if bvalid and b[2] != 0:
                self._fail(f"BRESP {b[2]}")
            if rvalid and r[2] != 0:
                self._fail(f"RRESP {r[2]}")
            # BVALID rises write_latency cycles after the later of AW / W, or after the previous B
            # handshake (which frees the response register), whichever is last
            b_rise = bool(bvalid and not (prev_b and prev_b[0] and not prev_b[1]))
            if b_rise:
                if not aw_hs or not w_hs:
                    self._fail("BVALID without an AW and a W")
                else:
                    due = max(aw_hs.pop(0), w_hs.pop(0), last_b_take) + wl
                    if c != due:
                        self._fail(f"BVALID rose at {c}, expected {due}")
            r_rise = bool(rvalid and not (prev_r and prev_r[0] and not prev_r[1]))
            if r_rise:
                if r_due is None or c != r_due:
                    self._fail(f"RVALID rose at {c}, expected {r_due}")
                r_due = None
            # idle falls with the rise of BVALID of the accepting write; start follows start_latency
            # cycles later and lasts one cycle
            idle = int(d.idle.value)
            if prev_idle and not idle:
                if not b_rise:
                    self._fail("idle fell without a write's BVALID rising")
                accepted.append(c)
            if start:
                if not accepted or accepted[0] + sl != c:
                    self._fail(f"start at {c}, expected start_latency {sl} after an accepting write "
                               f"({accepted[:1]})")
                if accepted:
                    accepted.pop(0)
            elif accepted and c > accepted[0] + sl:
                self._fail(f"no start {sl} cycles after the accepting write at {accepted.pop(0)}")
            if start and prev_start:
                self._fail("start longer than one cycle")
            if start and idle:
                self._fail("idle still high with start")
            prev_start, prev_idle = start, idle
            if int(d.interrupt.value) != int(self.shadow.interrupt) and not self._isr_in_flight:
                self._fail(f"interrupt {int(d.interrupt.value)}, shadow says {int(self.shadow.interrupt)}")
            if start:
                self.starts.append({"run": run_fields(self.params, int(d.run.value)),
                                    "supported": int(d.supported.value), "refused": int(d.refused.value),
                                    "base": int(d.base.value), "cycle": c})
            # handshakes of this cycle (they happen at the coming rising edge)
            if int(d.axil__awvalid.value) and int(d.axil__awready.value):
                aw_hs.append(c)
            if int(d.axil__wvalid.value) and int(d.axil__wready.value):
                w_hs.append(c)
            if bvalid and bready:
                last_b_take = c
            if int(d.axil__arvalid.value) and int(d.axil__arready.value):
                r_due = c + rl
            prev_b, prev_r = b, r
            self.cycle += 1

    #: The shadow's ISR/GIER/IER change when the host's write is acknowledged, the RTL's when the write
    #: commits (a few cycles earlier under B backpressure): the interrupt check pauses meanwhile.
    _isr_in_flight = False

    async def write_irq_reg(self, offset: int, value: int) -> None:
        self._isr_in_flight = True
        await self.check_write(offset, value)
        self._isr_in_flight = False

    def finish(self):
        assert not self.errors, "protocol monitor:\n" + "\n".join(self.errors[:20])


def _base_words(value: int, channels: int) -> list[int]:
    return [(value >> (64 * i)) & ((1 << 64) - 1) for i in range(channels)]


def _bad_log_n(params: BuildParams) -> int:
    lo, hi = params.min_log_n, params.max_log_n
    return random.choice((0, 1, lo - 1, hi + 1, 31, 1 << 31, 0xFFFF_FFFF, 256 + lo))


# -- tests -------------------------------------------------------------------------------------------

@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(backpressure=BACKPRESSURE)
async def test_conformance(dut, backpressure):
    """sim.regmap_conformance's sequence: every register's reset value, argument words, GIER/IER/ISR
    masks, the read-only ID block and unmapped words, against the reference decoder."""
    tb = ControlTB(dut)
    await tb.start(backpressure)
    problems = await check_conformance(tb.read, tb.write, tb.params)
    assert problems == [], "\n".join(problems)
    tb.finish()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(backpressure=BACKPRESSURE)
async def test_start_done_interrupt(dut, backpressure):
    """A run: pointer args latched at start, ap_ready / ap_idle / ap_done, interrupt raised by done and
    cleared by the ISR toggle, ap_done cleared by the read; then a second run with fresh arguments."""
    tb = ControlTB(dut)
    await tb.start(backpressure)
    rmap = tb.rmap
    await tb.write_irq_reg(R.GIER, 1)
    await tb.write_irq_reg(R.IP_IER, 1)
    for run in range(2):
        log_n = rmap.supported_log_n[0]
        bases = tb.random_bases()
        if run == 0:
            bases[0], bases[-1] = 0xFFFF_FFFF_FFFF_FFFF, 0x1_0000_0000   # carries across the word pair
        await tb.write_args(log_n, bases)
        seen = await tb.start_run()
        assert seen["run"] == expected_run(log_n) and seen["supported"] == 1
        assert _base_words(seen["base"], tb.params.channels) == bases, "pointer args not latched at start"
        assert int(dut.idle.value) == 0
        await tb.check_read(R.CTRL, "busy, ap_ready set by the start")
        await tb.check_read(R.CTRL, "busy, ap_ready cleared by the read")
        await tb.check_read(R.IP_ISR, "no done yet")
        assert int(dut.interrupt.value) == 0
        await ClockCycles(dut.clk, random.randint(1, 40))
        await tb.pulse_done()
        assert int(dut.interrupt.value) == 1, "interrupt not raised by done with GIER and IER set"
        await tb.check_read(R.IP_ISR, "done sets ISR")
        await tb.check_read(R.CTRL, "ap_done and ap_idle after done")
        await tb.check_read(R.CTRL, "ap_done cleared by the read")
        await tb.check_read(rmap.id_offset("STATUS"), "good run: bad_size clear")
        await tb.write_irq_reg(R.IP_ISR, R.ISR_DONE)
        await tb.check_read(R.IP_ISR, "ISR toggled off")
        assert int(dut.interrupt.value) == 0
    # with IER off, done sets no ISR bit and raises no interrupt
    await tb.write_irq_reg(R.IP_IER, 0)
    await tb.start_run()
    await tb.pulse_done()
    assert int(dut.interrupt.value) == 0
    await tb.check_read(R.IP_ISR, "IER off: ISR stays clear")
    await tb.check_read(R.CTRL, "done")
    # ISR toggles on write even without a run; GIER gates the output
    await tb.write_irq_reg(R.IP_IER, 1)
    await tb.write_irq_reg(R.GIER, 0)
    await tb.write_irq_reg(R.IP_ISR, R.ISR_DONE)
    await tb.check_read(R.IP_ISR, "ISR toggled on by a write")
    assert int(dut.interrupt.value) == 0
    await tb.write_irq_reg(R.GIER, 1)
    assert int(dut.interrupt.value) == 1
    tb.finish()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(backpressure=BACKPRESSURE)
async def test_start_while_busy_ignored(dut, backpressure):
    """While a run is in progress: ap_start writes start nothing, argument writes are ignored and the
    latched outputs hold; a done while idle is ignored; after done a new start latches new values."""
    tb = ControlTB(dut)
    await tb.start(backpressure)
    rmap = tb.rmap
    first = tb.random_bases()
    await tb.write_args(rmap.supported_log_n[0], first)
    seen = await tb.start_run()
    latched = int(dut.base.value), int(dut.run.value)
    for _ in range(3):
        await tb.start_run(expect_start=False)
        await tb.write_args(random.getrandbits(32), tb.random_bases())     # ignored while busy
        await tb.check_read(R.CTRL, "still busy")
    assert (int(dut.base.value), int(dut.run.value)) == latched
    for a in rmap.args:
        for off in a.word_offsets:
            await tb.check_read(off, "argument unchanged by writes during the run")
    await tb.pulse_done()
    await tb.check_read(R.CTRL, "done")
    # a done while idle: no ap_done, no ISR
    await tb.write_irq_reg(R.IP_IER, 1)
    await tb.pulse_done()
    await tb.check_read(R.CTRL, "done while idle ignored")
    await tb.check_read(R.IP_ISR, "done while idle ignored")
    # new arguments while idle are latched by the next start only
    second = tb.random_bases()
    await tb.write_args(rmap.supported_log_n[0], second)
    seen = await tb.start_run()
    assert _base_words(seen["base"], tb.params.channels) == second
    await tb.pulse_done()
    await tb.check_read(R.CTRL, "second run done")
    tb.finish()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(backpressure=BACKPRESSURE)
async def test_bad_size(dut, backpressure):
    """An unsupported log_n: the slave accepts the start with supported = 0; the kernel answers done +
    bad_size at once; STATUS.bad_size reads 1 until the next good start clears it."""
    tb = ControlTB(dut)
    await tb.start(backpressure)
    rmap = tb.rmap
    status = rmap.id_offset("STATUS")
    for _ in range(2):
        bad = _bad_log_n(tb.params)
        await tb.write_args(bad, tb.random_bases())
        seen = await tb.start_run()
        assert seen["supported"] == 0 and seen["refused"] & R.STATUS_BAD_SIZE
        await tb.pulse_done(reject=True, settle=0)
        await tb.check_read(status, "bad_size set by done")
        await tb.check_read(R.CTRL, "done after a bad size")
    await tb.check_write(rmap.arg("log_n").offset, rmap.supported_log_n[0])
    seen = await tb.start_run()
    assert seen["supported"] == 1
    await tb.check_read(status, "cleared by the good start")
    await tb.pulse_done(reject=False)
    await tb.check_read(status, "still clear after the good run")
    await tb.check_read(R.CTRL, "done")
    tb.finish()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(backpressure=BACKPRESSURE)
async def test_bad_align(dut, backpressure):
    """Every hbm_NN base in turn off the DMA's longest burst by one low bit (a burst from it would cross a
    4 KiB boundary: AXI4 forbids it), the other bases aligned with random high bits, on a start the build
    otherwise runs: ``refused`` is STATUS.bad_align alone (the shadow's Run.check given the bases), the
    kernel answers done + reject and STATUS reads it until the next good start clears it. The status
    pointer off by a word is no refusal (the record writer rounds it down to its 64-byte record)."""
    tb = ControlTB(dut)
    await tb.start(backpressure)
    rmap, status = tb.rmap, tb.rmap.id_offset("STATUS")
    align = rmap.base_align
    assert align % (8 * 32) == 0 and 4096 % align == 0         # 8 beats of 256 bits, inside one 4 KiB page
    log_n = random.choice(rmap.supported_log_n)
    good = [random.getrandbits(64) & ~(align - 1) for _ in range(tb.params.channels)]
    await tb.write_args(log_n, good)
    record = rmap.record_arg
    await tb.check_write(record.word_offsets[0], random.getrandbits(32) & ~(align - 1) | 4 * random.randrange(1, 16))
    seen = await tb.start_run()
    assert seen["refused"] == 0 == tb.shadow.refusal(), "aligned bases, a status pointer off by words"
    await tb.pulse_done(reject=False, settle=0)
    await tb.check_read(status, "an aligned start")
    for pa in rmap.pointer_args:
        lo = good[pa.channel] & MASK32
        bad = lo | 1 << random.randrange(align.bit_length() - 1)
        await tb.check_write(pa.word_offsets[0], bad)
        seen = await tb.start_run()
        assert seen["refused"] == R.STATUS_BAD_ALIGN == tb.shadow.refusal(), f"{pa.name} = {bad:#x}"
        await tb.pulse_done(reject=True, settle=0)
        assert await tb.check_read(status, f"bad_align set by done ({pa.name})") == R.STATUS_BAD_ALIGN
        await tb.check_read(R.CTRL, "done after a misaligned base")
        await tb.check_write(pa.word_offsets[0], lo)
    seen = await tb.start_run()
    assert seen["refused"] == 0 and _base_words(seen["base"], tb.params.channels) == good
    await tb.check_read(status, "cleared by the good start")
    await tb.pulse_done(reject=False)
    await tb.check_read(status, "still clear after the good run")
    tb.finish()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def test_size_range(dut):
    """``supported`` at every start is min_log_n <= log_n <= max_log_n of the build: every log_n from 0
    to max + 2 and values whose low bits alias a good size (2^31 + min, 256 + max, 2^32 - 1), in a
    random order; each bad one answered with done + bad_size and read back in STATUS, each good one
    clears it."""
    tb = ControlTB(dut)
    await tb.start("random")
    p, status = tb.params, tb.rmap.id_offset("STATUS")
    values = list(range(0, p.max_log_n + 3)) + [1 << 31, (1 << 31) + p.min_log_n, 256 + p.max_log_n, 0xFFFF_FFFF]
    random.shuffle(values)
    for log_n in values:
        want = p.min_log_n <= log_n <= p.max_log_n
        await tb.check_write(tb.rmap.arg("log_n").offset, log_n)
        seen = await tb.start_run()
        assert seen["supported"] == int(want), f"log_n = {log_n}"
        assert not want or seen["run"]["log_n"] == log_n, f"log_n = {log_n}"
        await tb.pulse_done(reject=not want, settle=0)
        got = await tb.check_read(status, f"after log_n = {log_n}")
        assert bool(got & R.STATUS_BAD_SIZE) != want
        await tb.check_read(R.CTRL, "done")
    for name, value in (("MIN_LOG_N", p.min_log_n), ("MAX_LOG_N", p.max_log_n)):
        assert await tb.read(tb.rmap.id_offset(name)) == value, name
    tb.finish()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(backpressure=BACKPRESSURE)
async def test_axi_fault(dut, backpressure):
    """AXI error responses reported on ``fault``: ignored while idle; during a run the first one is
    latched into STATUS.axi_* (channel, response, direction) and later ones leave it; done keeps it; the
    next start clears it."""
    tb = ControlTB(dut)
    await tb.start(backpressure)
    rmap, C = tb.rmap, tb.params.channels
    status = rmap.id_offset("STATUS")
    await tb.pulse_fault(C - 1, 2, True)
    await tb.check_read(status, "fault while idle ignored")
    await tb.write_args(rmap.supported_log_n[0], tb.random_bases())
    for _ in range(3):
        await tb.start_run()
        await tb.check_read(status, "cleared by the start")
        first = (random.randrange(C), random.choice((1, 2, 3)), random.getrandbits(1))
        await tb.pulse_fault(*first)
        got = await tb.check_read(status, "first fault latched")
        assert got & R.STATUS_AXI_ERROR and (got & R.STATUS_AXI_CHANNEL_MASK) >> R.STATUS_AXI_CHANNEL_SHIFT == first[0]
        await tb.pulse_fault(random.randrange(C), random.choice((2, 3)), random.getrandbits(1))
        await tb.check_read(status, "second fault ignored")
        await tb.pulse_done()
        await tb.check_read(status, "kept after done")
        await tb.check_read(R.CTRL, "done")
    tb.finish()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(backpressure=BACKPRESSURE)
async def test_wstrb(dut, backpressure):
    """Partial writes (1, 2, 3 byte lanes at every position) on argument words, GIER/IER/ISR, CTRL and
    the ID block, compared with the byte-merged expectation."""
    tb = ControlTB(dut)
    await tb.start(backpressure)
    rmap = tb.rmap
    words = [o for a in rmap.args for o in a.word_offsets]
    targets = random.sample(words, min(len(words), 6)) + [R.GIER, R.IP_IER, R.IP_ISR,
                                                          rmap.id_offset("MAGIC"), rmap.id_offset("STATUS")]
    for off in targets:
        for first in range(4):
            for length in range(1, 4 - first + 1):
                value = random.getrandbits(32) | 0x0101_0101       # bit0 of every byte set
                data = value.to_bytes(4, "little")[first:first + length]
                strobe = ((1 << length) - 1) << first
                tb._isr_in_flight = off in (R.GIER, R.IP_IER, R.IP_ISR)
                await tb.axil.write(off + first, data)
                tb.shadow.write_strobed(off, value, strobe)
                tb._isr_in_flight = False
                await tb.check_read(off, f"after a write with WSTRB 0b{strobe:04b}")
    # CTRL: ap_start only counts when byte 0 is strobed
    for first in (1, 2, 3):
        n = len(tb.starts)
        await tb.axil.write(R.CTRL + first, b"\xff")
        await ClockCycles(dut.clk, 3)
        assert len(tb.starts) == n, f"ap_start taken from byte lane {first}"
    await tb.check_read(R.CTRL, "idle, nothing started by other byte lanes")
    await tb.axil.write(R.CTRL, b"\x01")
    tb.shadow.write(R.CTRL, 1)
    await ClockCycles(dut.clk, 3)
    assert len(tb.starts) == 1, "a byte-0 write of ap_start did not start"
    await tb.pulse_done()
    await tb.check_read(R.CTRL, "done")
    tb.finish()


class RawAxiLite:
    """The slave's AXI4-Lite port driven pin by pin (no master): values are set and sampled at falling
    edges, so a ready read there is the one the next rising edge sees (readies are registers)."""

    def __init__(self, dut):
        self.dut = dut

    async def take_b(self, hold: int) -> None:
        """Wait for BVALID, keep BREADY low ``hold`` more cycles, then take the response."""
        d = self.dut
        for _ in range(50):
            await FallingEdge(d.clk)
            if int(d.axil__bvalid.value):
                break
        else:
            raise AssertionError("no write response")
        for _ in range(hold):
            await FallingEdge(d.clk)
            assert int(d.axil__bvalid.value), "BVALID dropped before BREADY"
        d.axil__bready.value = 1
        await FallingEdge(d.clk)
        d.axil__bready.value = 0

    async def write(self, offset: int, value: int, order: str, gap: int) -> None:
        """One write with AW first (``order`` "aw"), W first ("w") or both at once ("both"), the other half
        ``gap`` cycles later; no BVALID before both halves are taken; the response held 0 .. 4 cycles."""
        d = self.dut
        aw_at = 0 if order in ("aw", "both") else gap
        w_at = 0 if order in ("w", "both") else gap
        aw_done = w_done = False
        await FallingEdge(d.clk)
        for t in range(100):
            aw_take = w_take = False
            if not aw_done and t >= aw_at:
                d.axil__awvalid.value, d.axil__awaddr.value = 1, offset
                aw_take = bool(int(d.axil__awready.value))
            if not w_done and t >= w_at:
                d.axil__wvalid.value, d.axil__wdata.value, d.axil__wstrb.value = 1, value, 0xF
                w_take = bool(int(d.axil__wready.value))
            await FallingEdge(d.clk)
            if aw_take:
                aw_done, d.axil__awvalid.value = True, 0
            if w_take:
                w_done, d.axil__wvalid.value = True, 0
            assert not int(d.axil__bvalid.value), "BVALID before (or with) both halves"
            if aw_done and w_done:
                break
        else:
            raise AssertionError(f"write not accepted ({order} first)")
        await self.take_b(random.randint(0, 4))

    async def read(self, offset: int) -> int:
        """One read; R must hold (valid and data) while RREADY stays low 0 .. 3 cycles."""
        d = self.dut
        await FallingEdge(d.clk)
        d.axil__arvalid.value, d.axil__araddr.value = 1, offset
        for _ in range(50):
            taken = int(d.axil__arready.value)
            await FallingEdge(d.clk)
            if taken:
                break
        else:
            raise AssertionError("read not accepted")
        d.axil__arvalid.value = 0
        while not int(d.axil__rvalid.value):
            await FallingEdge(d.clk)
        value = int(d.axil__rdata.value)
        for _ in range(random.randint(0, 3)):
            await FallingEdge(d.clk)
            assert int(d.axil__rvalid.value) and int(d.axil__rdata.value) == value, "R changed before RREADY"
        d.axil__rready.value = 1
        await FallingEdge(d.clk)
        d.axil__rready.value = 0
        return value


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def test_raw_handshake_orders(dut):
    """AW before W, W before AW and both together (with gaps), driven pin by pin: the write lands only
    when both halves arrived, a second AW waits while one is held, BVALID / RVALID hold until taken.
    Readies are registers, so the value read at a falling edge is the one the next rising edge sees."""
    tb = ControlTB(dut)
    await tb.start(master=False)
    d = dut
    rmap = tb.rmap
    words = [o for a in rmap.args for o in a.word_offsets]
    pins = RawAxiLite(dut)
    take_b, raw_read = pins.take_b, pins.read

    async def raw_write(offset, value, order, gap):
        await pins.write(offset, value, order, gap)
        tb.shadow.write(offset, value)

    for order in ("aw", "w", "both"):
        for gap in (1, 3, 8):
            off = random.choice(words)
            value = random.getrandbits(32)
            await raw_write(off, value, order, gap)
            got = await raw_read(off)
            assert got == tb.shadow.read(off), f"{order} first, gap {gap}: read 0x{got:08x}"

    # A held AW blocks the next AW until its W arrives; the second write then completes normally.
    first, second = words[0], words[-1]
    await FallingEdge(d.clk)
    d.axil__awvalid.value, d.axil__awaddr.value = 1, first
    assert int(d.axil__awready.value)
    await FallingEdge(d.clk)
    d.axil__awaddr.value = second                      # the next AW, valid and held
    for _ in range(5):
        assert not int(d.axil__awready.value), "second AW accepted while the first waits for its W"
        await FallingEdge(d.clk)
    d.axil__wvalid.value, d.axil__wdata.value, d.axil__wstrb.value = 1, 0x1234_5678, 0xF
    assert int(d.axil__wready.value)
    await FallingEdge(d.clk)
    d.axil__wvalid.value = 0
    for _ in range(10):
        if int(d.axil__awready.value):
            break
        await FallingEdge(d.clk)
    else:
        raise AssertionError("AW never ready again after the first write committed")
    await FallingEdge(d.clk)                           # the second AW is taken at this edge
    d.axil__awvalid.value = 0
    await take_b(2)                                    # first response
    d.axil__wvalid.value, d.axil__wdata.value = 1, 0x9ABC_DEF0
    await FallingEdge(d.clk)
    d.axil__wvalid.value = 0
    await take_b(0)
    tb.shadow.write(first, 0x1234_5678)
    tb.shadow.write(second, 0x9ABC_DEF0)
    assert await raw_read(first) == 0x1234_5678
    assert await raw_read(second) == 0x9ABC_DEF0
    await ClockCycles(d.clk, 3)
    tb.finish()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
async def test_start_right_after_an_argument(dut):
    """The fastest host, pin by pin: the next write's AW and W wait while the previous write commits and
    BREADY stays high, so the CTRL write that starts a run commits as soon as the handshakes allow after
    the last argument write. The start's ``refused`` and ``supported`` already reflect that argument
    (the start checks' register stages settle before the start): each trial changes one argument from a
    refused value to an accepted one or back, so a stale check shows."""
    tb = ControlTB(dut)
    await tb.start(master=False)
    d, rmap, p = dut, tb.rmap, tb.params
    d.axil__bready.value = 1

    async def burst(writes):
        """Writes presented back to back (AW and W of each held until taken)."""
        await FallingEdge(d.clk)
        for off, value in writes:
            d.axil__awvalid.value, d.axil__awaddr.value = 1, off
            d.axil__wvalid.value, d.axil__wdata.value, d.axil__wstrb.value = 1, value, 0xF
            aw_done = w_done = False
            while not (aw_done and w_done):
                aw_take = not aw_done and bool(int(d.axil__awready.value))
                w_take = not w_done and bool(int(d.axil__wready.value))
                await FallingEdge(d.clk)
                if aw_take:
                    aw_done, d.axil__awvalid.value = True, 0
                if w_take:
                    w_done, d.axil__wvalid.value = True, 0
            tb.shadow.write(off, value)
        await ClockCycles(d.clk, 12)

    lo, hi = rmap.split_pointer((1 << 32) + 5)
    trials = [("log_n", p.max_log_n + 1), ("log_n", p.min_log_n), ("batch", 0), ("batch", 1),
              ("flags", 1 << 5), ("flags", 0), ("chain_log_n", 40), ("chain_log_n", 0),
              ("row_step_hi", hi), ("row_step_hi", 0), ("input_log_m", 40), ("input_log_m", 0),
              ("flags", R.FLAG_COSET), ("coset_shift_lo", lo), ("flags", 0), ("coset_shift_lo", 0)]
    for name, value in trials:
        n = len(tb.starts)
        await burst([(rmap.arg(name).offset, value), (R.CTRL, R.CTRL_AP_START)])
        assert len(tb.starts) == n + 1, f"{name} = {value:#x}: no start"
        want = tb.shadow.refusal()
        seen = tb.starts[-1]
        assert seen["refused"] == want, f"{name} = {value:#x}: refused {seen['refused']:#x}, expected {want:#x}"
        assert seen["supported"] == int(p.min_log_n <= tb.shadow.read(rmap.arg("log_n").offset) <= p.max_log_n)
        await tb.pulse_done(reject=bool(want))
    tb.finish()


@cocotb.test(timeout_time=TIMEOUT_US, timeout_unit="us")
@cocotb.parametrize(backpressure=BACKPRESSURE)
async def test_refusals(dut, backpressure):
    """``refused`` at every start is RegisterMap.check_start of the argument registers (flags, batch, the
    coset shift and the row step at their edges, input_log_m / chain_log_n pairs placeable or not,
    several reasons at once); an accepted start's ``run`` is its arguments decoded (every third trial is
    one, with a row step when it has the coset); a refused start answered with done + reject leaves
    exactly those bits in STATUS, and the next accepted start clears them. The row step's own edges
    (above 1 without the coset flag, p, p - 1, 2^64 - 1) follow as fixed trials."""
    tb = ControlTB(dut)
    await tb.start(backpressure)
    p, rmap = tb.params, tb.rmap
    prime = p.prime_field.p
    shifts = [0, 1, 7, 1 << 32, 1 << 63, prime - 1, prime, prime + 1, (1 << 64) - 1, random.getrandbits(64)]
    steps = [0, 1, 2, prime - 1, prime, prime + 1, (1 << 64) - 1, random.getrandbits(64), random.randrange(2, prime)]
    accepted = 0
    for trial in range(24 if backpressure == "none" else 10):
        log_n = random.choice([p.min_log_n, p.max_log_n, random.randint(p.min_log_n, p.max_log_n),
                               p.max_log_n + 1, 0])
        top = 1 << (p.max_log_n - min(log_n, p.max_log_n))
        batch = random.choice([0, 1, top, top + 1, random.randint(1, top), 0xFFFF_FFFF])
        flags = random.choice([0, R.FLAG_INVERSE, R.FLAG_COSET, R.FLAG_INVERSE | R.FLAG_COSET,
                               1 << random.randint(2, 31), R.FLAG_COSET | 1 << 31])
        shift, row_step = random.choice(shifts), random.choice(steps)
        near = log_n if p.min_log_n <= log_n <= p.max_log_n else p.max_log_n
        input_log_m = random.choice([0, near, near - 1, near - 2, random.randint(0, 40)])
        chain_log_n = random.choice([0, near, near + 1, near + 2, near + 5, random.randint(0, 40)])
        if trial % 3 == 0:          # a start the build runs, so the decoded run is compared too
            log_n, flags, shift, input_log_m, chain_log_n = _accepted_start(rmap)
            batch = random.randint(1, rmap.max_batch(max(log_n, chain_log_n)))
            row_step = random.choice([0, 1, random.randrange(2, prime), prime - 1] if flags & R.FLAG_COSET
                                     else [0, 1])
        # the op: the NTT's mostly, else one no operation has or the build does not carry (bad_op)
        op = 0 if trial % 3 == 0 else random.choice([0, 0, 1, 2, 1 << 31, random.getrandbits(32)])
        accepted += await _refusal_trial(tb, f"trial {trial}", log_n, flags, batch, shift, input_log_m,
                                         chain_log_n, row_step, op)
    # the row step's edges on an otherwise good coset start (and without the coset flag)
    log_n, _, shift, input_log_m, chain_log_n = _accepted_start(rmap)
    for flags, row_step in ((R.FLAG_COSET, prime - 1), (R.FLAG_COSET, prime), (R.FLAG_COSET, (1 << 64) - 1),
                            (R.FLAG_COSET | R.FLAG_INVERSE, 2), (0, 2), (R.FLAG_INVERSE, prime - 1), (0, 1),
                            (R.FLAG_COSET, 1 << 32)):
        accepted += await _refusal_trial(tb, "row step edge", log_n, flags, 1, shift, input_log_m, chain_log_n,
                                         row_step)
    assert accepted >= 1
    tb.finish()


async def _refusal_trial(tb, what: str, log_n: int, flags: int, batch: int, shift: int, input_log_m: int,
                         chain_log_n: int, row_step: int, op: int = 0) -> int:
    """One start of test_refusals with these argument registers: its refusal and STATUS checked against
    RegisterMap.check_start, an accepted one's decoded run too. 1 when the start was accepted."""
    rmap, status = tb.rmap, tb.rmap.id_offset("STATUS")
    await tb.check_write(rmap.arg("input_log_m").offset, input_log_m)
    await tb.check_write(rmap.arg("chain_log_n").offset, chain_log_n)
    await tb.check_write(rmap.arg("log_n").offset, log_n)
    await tb.check_write(rmap.arg("flags").offset, flags)
    await tb.check_write(rmap.arg("batch").offset, batch)
    for name, value in rmap.split_shift(shift).items():
        await tb.check_write(rmap.arg(name).offset, value)
    await tb.check_write(rmap.arg("row_step_lo").offset, row_step & 0xFFFF_FFFF)
    await tb.check_write(rmap.arg("row_step_hi").offset, row_step >> 32)
    await tb.check_write(rmap.arg("op").offset, op)
    want = rmap.check_start(log_n, flags, batch, shift, input_log_m, chain_log_n, row_step, op=op)
    seen = await tb.start_run()
    what = (f"{what}: log_n {log_n} flags {flags:#x} batch {batch} shift {shift:#x} "
            f"input_log_m {input_log_m} chain_log_n {chain_log_n} row_step {row_step:#x} op {op:#x}")
    assert seen["refused"] == want, what
    # the decoded run is only defined for a start the kernel runs
    assert want or seen["run"] == expected_run(log_n, flags, batch, shift, input_log_m, chain_log_n,
                                               row_step), what
    await tb.check_read(status, "cleared by the start")
    await tb.pulse_done(reject=bool(want), settle=0)
    got = await tb.check_read(status, f"after {what}")
    assert got == want
    await tb.check_read(R.CTRL, "done")
    return int(not want)


def _accepted_start(rmap) -> tuple[int, int, int, int, int]:
    """Random (log_n, flags, coset_shift, input_log_m, chain_log_n) of a start the build accepts with a
    batch of 1 .. max_batch(max(log_n, chain_log_n))."""
    sizes = rmap.supported_log_n
    log_n = random.choice(sizes)
    flags = random.choice([0, R.FLAG_INVERSE, R.FLAG_COSET, R.FLAG_INVERSE | R.FLAG_COSET])
    shift = random.randint(1, (1 << 64) - (1 << 32))
    input_log_m = random.choice([0] + [m for m in sizes if rmap.lde_pair_ok(m, log_n)])
    chain_log_n = random.choice([0] + [t for t in sizes if rmap.lde_pair_ok(log_n, t)])
    return log_n, flags, shift, input_log_m, chain_log_n
