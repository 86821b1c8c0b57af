"""HBM models that live inside the simulated design (no Python work per cycle), and the DMA loopback top.

:class:`HbmChannelModel` is one pseudo-channel: an AXI4 slave memory (256-bit beats) with

- a configurable read latency (each AR becomes serviceable ``latency`` cycles after it was accepted),
- a bandwidth cap of ``hbm_num / hbm_den`` beats per AXI cycle (one pseudo-channel's port at its clock
  limit, :data:`HBM_PORT_MHZ` = 450 MHz x 32 B, against the DMA's clock: 1/1 at 450 MHz, 3/2 at 300 MHz, so
  the AXI port itself is the limit; read and write beats of one channel share it),
- refresh: for ``refresh_cycles`` of every ``refresh_period`` cycles it neither accepts requests or write
  data nor returns read data (default 320 ns of every 1.6 us = 20 %: 144 / 720 DMA cycles at 450 MHz),

The defaults of the cycle counts (read latency, refresh, cap) are times (:func:`hbm_timing`), converted to
DMA cycles at the model's ``dma_mhz`` (the build's ``BuildParams.dma_mhz`` in the DMA and kernel benches).

- optional random stalls on every ready (AR, AW, W) and valid (R, B) from an LFSR,
- protocol checks (sticky ``err`` bits): access outside the window, a burst crossing 4 KiB, WLAST on the
  wrong beat, a size/burst type other than full-width INCR; and a histogram of burst lengths,
- error injection: while ``inject_rresp`` / ``inject_bresp`` is not 0 (OKAY), every R beat / B response
  issued carries that code (2 SLVERR, 3 DECERR), as a failing HBM controller or a bad address would;
- a backdoor port (one beat per cycle) for preload and read-back from a testbench;
- ``store=False`` drops the memory (reads return their beat address): a timing-only model for full-size
  throughput runs, whose Verilog would otherwise carry millions of initialised words;
- ``files="name"`` keeps the data in a plain Verilog array instead (module ``nt_sim_hbm_ram``, no
  initialiser, so a 2^24-point buffer costs nothing to emit) with two more ports: ``bd_load`` reads
  ``<dir>/<name>.load.hex`` into the memory and ``bd_dump`` writes the whole memory to
  ``<dir>/<name>.dump.hex`` ($readmemh / $writememh format, one 256-bit beat per line; ``<dir>`` is the
  simulator's plusarg ``+nantucket_hbm_dir=``, default the working directory). Verilator only: it needs
  the design emitted by hw.flow.catalog.verilog_of. :func:`write_load_file` / :func:`read_dump_file` are the
  host's side of that exchange.

It is written in the ``sync`` domain; instantiate it under a DomainRenamer (the loopback top puts it on
``dma``). Because it is ordinary Amaranth, Verilator runs it at full speed and pysim runs it too.

:class:`DmaLoopback` is the bench top: a :class:`hw.dma.DmaEngine`, one model per HBM channel, and in
place of the NTT engine a small FIFO looping ``points_out`` back to ``points_in`` (optionally stalling
both sides at random). Channel c's window starts at ``c << 28`` (its own 256 MiB pseudo-channel) and the
DMA's buffer starts ``guard_beats`` beats into it, so guard regions surround every buffer.
"""

import os
import re
from types import SimpleNamespace

import numpy as np
from amaranth.hdl import Array, Cat, ClockSignal, DomainRenamer, Elaboratable, Instance, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nantucket.hw.axi import Axi4Signature
from nantucket.hw.dma import DmaEngine
from nantucket.hw.dma.engine import READ_FIFO_BEATS, WRITE_FIFO_BEATS
from nantucket.hw.model.layout import BEAT_BYTES, CHANNEL_WINDOW_BYTES, PAGE_BYTES
from nantucket.hw.model.params import BuildParams
from nantucket.hw.run import run_layout
from nantucket.hw.shared import VerilogCollector

__all__ = ["HbmChannelModel", "channel_models", "DmaLoopback", "ERR_RANGE", "ERR_4K", "ERR_WLAST", "ERR_PROTO",
           "CHANNEL_SPAN", "HBM_DIR_PLUSARG", "memory_file", "write_load_file", "read_dump_file"]

# The HBM model's timing, defined once as times (the channel models, the kernel harness and the DMA benches
# read it through hbm_timing): a read returns its first beat 106.7 ns after the address (32 cycles of the
# first 300 MHz DMA clock), each controller refreshes 320 ns of every 1.6 us (20 %, taking no request
# meanwhile), and a pseudo-channel's AXI port moves at most one 32-byte beat per cycle of its 450 MHz limit.
HBM_PORT_MHZ = 450.0
HBM_LATENCY_NS = 320 / 3
REFRESH_PERIOD_NS = 1600.0
REFRESH_NS = 320.0


def hbm_timing(dma_mhz: float) -> dict:
    """The model's cycle counts at a DMA clock of ``dma_mhz``: ``latency``, ``refresh_period``,
    ``refresh_cycles`` (DMA cycles, rounded) and the bandwidth cap ``hbm_num / hbm_den`` beats per DMA cycle
    (HBM_PORT_MHZ / dma_mhz as a fraction with a denominator of at most 64)."""
    from fractions import Fraction
    if isinstance(dma_mhz, bool) or not isinstance(dma_mhz, (int, float)) or not dma_mhz > 0:
        raise ValueError(f"dma_mhz: expected a positive number, got {dma_mhz!r}")
    cycles = lambda ns: max(1, round(ns * dma_mhz / 1000))                                  # noqa: E731
    cap = Fraction(HBM_PORT_MHZ / dma_mhz).limit_denominator(64)
    if cap.numerator > 64:
        cap = Fraction(64, 1)
    return {"latency": cycles(HBM_LATENCY_NS), "refresh_period": cycles(REFRESH_PERIOD_NS),
            "refresh_cycles": cycles(REFRESH_NS), "hbm_num": cap.numerator, "hbm_den": cap.denominator}


# The cycle counts at the default build's DMA clock (scripts that take them as option defaults).
_DEFAULT_TIMING = hbm_timing(BuildParams().dma_mhz)
HBM_LATENCY = _DEFAULT_TIMING["latency"]
REFRESH_PERIOD = _DEFAULT_TIMING["refresh_period"]
REFRESH_CYCLES = _DEFAULT_TIMING["refresh_cycles"]

ERR_RANGE, ERR_4K, ERR_WLAST, ERR_PROTO = 1, 2, 4, 8
CHANNEL_SPAN = CHANNEL_WINDOW_BYTES      # bytes of one pseudo-channel's address window
HIST = 9                    # burst-length histogram: lengths 1..8, then "longer"


#: Width of an AXI burst length (AxLEN).
_LEN_BITS = 8


def _lfsr_step(state, width=32):
    """Galois LFSR x^32 + x^22 + x^2 + x + 1 (maximal)."""
    taps = (1 << 31) | (1 << 21) | (1 << 1) | 1
    return Mux(state[0], (state >> 1) ^ taps, state >> 1)


def _int(name, v, lo, hi=None):
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"{name}: expected an int, got {type(v).__name__}")
    if v < lo or (hi is not None and v > hi):
        raise ValueError(f"{name}: must be in {lo}..{hi if hi is not None else 'inf'}, got {v}")


class _Port:
    """addr / en / data of a memory port (the file memory's, or the timing-only model's stand-ins)."""

    def __init__(self, abits):
        self.addr = Signal(abits)
        self.en = Signal()
        self.data = Signal(BEAT_BYTES * 8)


class _FakeReadPort(_Port):
    """Timing-only model: a read returns its beat address."""

    def __init__(self, abits, m):
        super().__init__(abits)
        with m.If(self.en):
            m.d.sync += self.data.eq(self.addr)


HBM_DIR_PLUSARG = "nantucket_hbm_dir"
LOAD_SUFFIX, DUMP_SUFFIX = ".load.hex", ".dump.hex"


def memory_file(directory, stem: str, kind: str) -> str:
    """Path of a file memory's exchange file: ``kind`` "load" (host -> model) or "dump" (model -> host)."""
    suffix = {"load": LOAD_SUFFIX, "dump": DUMP_SUFFIX}[kind]
    return os.path.join(str(directory), stem + suffix)

_RAM_MODULE = "nt_sim_hbm_ram"
_RAM_VERILOG = f"""\
// Simulation-only memory of the HBM channel model (sim/hbm.py): a plain array with no initialiser, two
// synchronous read ports, one write port, and whole-memory load/dump through hex files.
module {_RAM_MODULE} #(parameter integer DEPTH = 1, parameter integer ABITS = 1, parameter NAME = "hbm") (
  input clk,
  input rd_en, input [ABITS-1:0] rd_addr, output reg [255:0] rd_data,
  input [ABITS-1:0] bd_addr, output reg [255:0] bd_rdata,
  input wr_en, input [ABITS-1:0] wr_addr, input [255:0] wr_data,
  input load, input dump
);
  reg [255:0] mem [0:DEPTH-1];
  string dir;
  initial begin
    if (!$value$plusargs("{HBM_DIR_PLUSARG}=%s", dir)) dir = ".";
  end
  always @(posedge clk) begin
    if (rd_en) rd_data <= mem[rd_addr];
    bd_rdata <= mem[bd_addr];
    if (wr_en) mem[wr_addr] <= wr_data;
    if (load) $readmemh({{dir, "/", NAME, "{LOAD_SUFFIX}"}}, mem);
    if (dump) $writememh({{dir, "/", NAME, "{DUMP_SUFFIX}"}}, mem);
  end
endmodule
"""


class _FileRam(Elaboratable):
    """The ``files=`` memory: an instance of the hand-written module above (see the module doc)."""

    def __init__(self, depth: int, abits: int, name: str):
        self.depth, self.abits, self.name = depth, abits, name
        self.rd, self.bd_rd, self.wr = _Port(abits), _Port(abits), _Port(abits)
        self.load = Signal()
        self.dump = Signal()

    def elaborate(self, platform):
        if not isinstance(platform, VerilogCollector):
            raise TypeError("HbmChannelModel(files=...): only simulated in Verilator, emitted through "
                            "hw.flow.catalog.verilog_of (hw.flow.runner does)")
        platform.add_module(_RAM_MODULE, _RAM_VERILOG)
        return Instance(_RAM_MODULE, p_DEPTH=self.depth, p_ABITS=self.abits, p_NAME=self.name,
                        i_clk=ClockSignal("sync"),
                        i_rd_en=self.rd.en, i_rd_addr=self.rd.addr, o_rd_data=self.rd.data,
                        i_bd_addr=self.bd_rd.addr, o_bd_rdata=self.bd_rd.data,
                        i_wr_en=self.wr.en, i_wr_addr=self.wr.addr, i_wr_data=self.wr.data,
                        i_load=self.load, i_dump=self.dump)


_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)


def write_load_file(path, chunks, beat_bytes: int = BEAT_BYTES) -> int:
    """Write a ``$readmemh`` file for ``bd_load``: ``chunks`` is ``[(first beat, bytes-like), ...]``
    (little-endian beats, each chunk a whole number of beats), each chunk after an ``@address`` line.
    Returns the bytes of data written. An empty list writes an empty file (the load changes nothing)."""
    total = 0
    with open(path, "wb") as f:
        for beat, buf in chunks:
            raw = np.frombuffer(buf, dtype=np.uint8)
            if raw.size % beat_bytes:
                raise ValueError(f"{path}: a chunk of {raw.size} bytes is not a whole number of beats")
            words = raw.reshape(-1, beat_bytes)[:, ::-1]              # most significant byte first
            text = np.empty((words.shape[0], 2 * beat_bytes + 1), dtype=np.uint8)
            text[:, 0:-1:2] = _HEX[words >> 4]
            text[:, 1:-1:2] = _HEX[words & 15]
            text[:, -1] = ord("\n")
            f.write(f"@{beat:x}\n".encode())
            f.write(text.tobytes())
            total += raw.size
    return total


_NIBBLE = np.full(256, 255, dtype=np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _NIBBLE[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _NIBBLE[_c] = 10 + _i


def read_dump_file(path, depth: int, beat_bytes: int = BEAT_BYTES) -> np.ndarray:
    """The memory a ``bd_dump`` wrote: uint8 array of ``depth * beat_bytes`` little-endian bytes.
    Raises ValueError naming the file and line on anything but ``depth`` lines of hex digits."""
    with open(path, "rb") as f:
        blob = f.read()
    # (file line number, text) of every word line; $writememh may add // comments
    lines = [(n + 1, ln.strip()) for n, ln in enumerate(blob.split(b"\n"))
             if ln.strip() and not ln.startswith(b"//")]
    if len(lines) != depth:
        raise ValueError(f"{path}: expected {depth} words, found {len(lines)} lines")
    width = 2 * beat_bytes
    for lineno, text in lines:
        if len(text) > width:
            raise ValueError(f"{path}:{lineno}: more than {width} hex digits: {text[:80]!r}")
    digits = np.frombuffer(b"".join(text.rjust(width, b"0") for _, text in lines),
                           dtype=np.uint8).reshape(depth, width)
    nib = _NIBBLE[digits]
    if (nib == 255).any():
        lineno, text = lines[int(np.flatnonzero((nib == 255).any(axis=1))[0])]
        raise ValueError(f"{path}:{lineno}: not a hex word: {text[:80]!r}")
    words = (nib[:, 0::2] << 4) | nib[:, 1::2]
    return np.ascontiguousarray(words[:, ::-1]).reshape(-1)


class HbmChannelModel(wiring.Component):
    """One HBM pseudo-channel (see the module doc). ``latency``, ``refresh_period``, ``refresh_cycles``,
    ``hbm_num`` and ``hbm_den`` default to :func:`hbm_timing` at ``dma_mhz`` (default: the default build's
    DMA clock)."""

    def __init__(self, *, depth_beats: int, window_base: int = 0, latency: int | None = None,
                 refresh_period: int | None = None, refresh_cycles: int | None = None, refresh_phase: int = 0,
                 stall_rate: int = 64, seed: int = 1, hbm_num: int | None = None, hbm_den: int | None = None,
                 queue: int = 16, addr_width: int = 64, init=(), store: bool = True, files: str | None = None,
                 dma_mhz: float | None = None):
        timing = hbm_timing(BuildParams().dma_mhz if dma_mhz is None else dma_mhz)
        latency = timing["latency"] if latency is None else latency
        refresh_period = timing["refresh_period"] if refresh_period is None else refresh_period
        refresh_cycles = timing["refresh_cycles"] if refresh_cycles is None else refresh_cycles
        if (hbm_num is None) != (hbm_den is None):
            raise ValueError("hbm_num, hbm_den: give both or neither")
        if hbm_num is None:
            hbm_num, hbm_den = timing["hbm_num"], timing["hbm_den"]
        _int("depth_beats", depth_beats, 1)
        _int("window_base", window_base, 0)
        _int("latency", latency, 1, 4096)
        _int("refresh_period", refresh_period, 2)
        _int("refresh_cycles", refresh_cycles, 0, refresh_period - 1)
        _int("refresh_phase", refresh_phase, 0)
        _int("stall_rate", stall_rate, 0, 255)
        _int("seed", seed, 1, 2**32 - 1)
        _int("hbm_num", hbm_num, 1, 64)
        _int("hbm_den", hbm_den, 1, 64)
        _int("queue", queue, 2, 256)
        if files is not None:
            if not isinstance(files, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", files):
                raise ValueError(f"files: expected a file stem of letters, digits, '_', '.', '-', got {files!r}")
            if not store or list(init):
                raise ValueError("files: needs store=True and no init (the memory is loaded from a file)")
        if window_base % PAGE_BYTES:
            raise ValueError(f"window_base: must be 4 KiB aligned, got {window_base:#x}")
        self._depth = depth_beats
        self._base = window_base
        self._latency = latency
        self._refresh = (refresh_period, refresh_cycles, refresh_phase % refresh_period)
        self._stall_rate = stall_rate
        self._seed = seed
        self._cap = (hbm_num, hbm_den)
        self._queue = queue
        self._init = list(init)
        self._store = bool(store)
        self._files = files
        axi = Axi4Signature(addr_width=addr_width, data_width=BEAT_BYTES * 8)
        members = {
            "axi": In(axi),
            "refresh_en": In(1),
            "stall_en": In(1),
            "inject_rresp": In(2),
            "inject_bresp": In(2),
            "bd_addr": In(range(depth_beats)),
            "bd_we": In(1),
            "bd_wdata": In(BEAT_BYTES * 8),
            "bd_rdata": Out(BEAT_BYTES * 8),
            "err": Out(4),
            "rd_hist": Out(data.ArrayLayout(32, HIST)),
            "wr_hist": Out(data.ArrayLayout(32, HIST)),
            "rd_beats": Out(32),
            "wr_beats": Out(32),
        }
        if files is not None:
            members.update({"bd_load": In(1), "bd_dump": In(1)})
        super().__init__(members)

    @property
    def depth_beats(self) -> int:
        return self._depth

    @property
    def window_base(self) -> int:
        return self._base

    @property
    def latency(self) -> int:
        return self._latency

    @property
    def files(self) -> str | None:
        """The file stem of ``bd_load`` / ``bd_dump`` (None: an Amaranth memory, no file ports)."""
        return self._files

    @property
    def refresh_fraction(self) -> float:
        return self._refresh[1] / self._refresh[0]

    def elaborate(self, platform):
        m = Module()
        abits = max(1, (self._depth - 1).bit_length())
        rd, wr = self._memory(m, abits)
        t = self._timing(m)
        err = Signal(4)
        m.d.comb += self.err.eq(err)
        # reads before writes: a write error's update of ``err`` is the later assignment of a cycle
        self._reads(m, rd, t, err, abits)
        self._writes(m, wr, t, err, abits)
        return m

    def _memory(self, m, abits):
        """The channel's storage: (AXI read port, write port shared by AXI and the back door)."""
        if self._files is not None:
            m.submodules.mem = ram = _FileRam(self._depth, abits, self._files)
            rd, wr = ram.rd, ram.wr
            m.d.comb += [ram.bd_rd.addr.eq(self.bd_addr), self.bd_rdata.eq(ram.bd_rd.data),
                         ram.load.eq(self.bd_load), ram.dump.eq(self.bd_dump)]
        elif self._store:
            m.submodules.mem = mem = Memory(shape=BEAT_BYTES * 8, depth=self._depth, init=self._init)
            rd = mem.read_port(transparent_for=())
            bd_rd = mem.read_port()
            wr = mem.write_port()
            m.d.comb += [bd_rd.addr.eq(self.bd_addr), self.bd_rdata.eq(bd_rd.data)]
        else:
            # timing-only model (throughput runs of full-size transforms): reads return the beat address,
            # writes are counted and dropped
            rd = _FakeReadPort(abits, m)
            wr = _Port(abits)
        return rd, wr

    def _timing(self, m):
        """Time, refresh windows, random stalls and the bandwidth cap, as a namespace: ``now``,
        ``refresh``, ``stall`` (AR, AW, W ready; R, B valid), ``tok_r`` / ``tok_w`` (a read / write beat
        may go) and ``use_r`` / ``use_w`` (one goes: the readers and writers drive these)."""
        now = Signal(32)
        m.d.sync += now.eq(now + 1)
        period, cycles, phase = self._refresh
        rcount = Signal(range(period), init=phase)
        m.d.sync += rcount.eq(Mux(rcount == period - 1, 0, rcount + 1))
        refresh = Signal()
        m.d.comb += refresh.eq(self.refresh_en & (rcount < cycles))
        lfsr = Signal(32, init=self._seed)
        m.d.sync += lfsr.eq(_lfsr_step(lfsr))
        stall = Signal(5)   # AR, AW, W ready; R, B valid
        for i in range(5):
            m.d.comb += stall[i].eq(self.stall_en & (Cat(lfsr[i * 6:i * 6 + 6], lfsr[(i + 3) % 32]) < self._stall_rate // 2))

        # bandwidth cap: a token bucket refilled by hbm_num per cycle, a beat costs hbm_den
        num, den = self._cap
        tokens = Signal(range(2 * (num + den) + 1), init=den)
        tok_r = Signal()
        tok_w = Signal()
        use_r = Signal()
        use_w = Signal()
        m.d.comb += [tok_r.eq(tokens >= den), tok_w.eq(tokens >= den * (1 + use_r))]
        nxt = tokens + num - Mux(use_r, den, 0) - Mux(use_w, den, 0)
        m.d.sync += tokens.eq(Mux(nxt > 2 * den, 2 * den, nxt))
        return SimpleNamespace(now=now, refresh=refresh, stall=stall, tok_r=tok_r, tok_w=tok_w,
                               use_r=use_r, use_w=use_w)

    def _check(self, m, abits, addr, length, size, burst, write):
        """(beat index in the window, out of range, crosses 4 KiB, not INCR of whole aligned beats)."""
        off = Signal(64, name=f"{'aw' if write else 'ar'}_off")
        m.d.comb += off.eq(addr - self._base)
        bad_range = (addr < self._base) | (off + (length + 1) * BEAT_BYTES > self._depth * BEAT_BYTES)
        bad_4k = (addr[:12] + (length + 1) * BEAT_BYTES) > PAGE_BYTES
        bad_proto = (addr[:5] != 0) | (size != 5) | (burst != 1)
        return off[5:5 + abits], bad_range, bad_4k, bad_proto

    def _reads(self, m, rd, t, err, abits):
        """AR queue (each burst due ``latency`` cycles after its address) and R beats."""
        axi, lbits = self.axi, _LEN_BITS
        ar_q = SyncFIFO(width=abits + lbits + 32, depth=self._queue)
        m.submodules.ar_q = ar_q
        ar_fire = Signal()
        m.d.comb += [axi.arready.eq(ar_q.w_rdy & ~t.refresh & ~t.stall[0]), ar_fire.eq(axi.arvalid & axi.arready)]
        ar_beat, ar_range, ar_4k, ar_proto = self._check(m, abits, axi.araddr, axi.arlen, axi.arsize, axi.arburst,
                                                         False)
        m.d.comb += [ar_q.w_en.eq(ar_fire), ar_q.w_data.eq(Cat(ar_beat, axi.arlen, t.now + self._latency))]
        with m.If(ar_fire):
            m.d.sync += err.eq(err | Mux(ar_range, ERR_RANGE, 0) | Mux(ar_4k, ERR_4K, 0) | Mux(ar_proto, ERR_PROTO, 0))
            for i in range(HIST):
                sel = (axi.arlen == i) if i < HIST - 1 else (axi.arlen >= HIST - 1)
                with m.If(sel):
                    m.d.sync += self.rd_hist[i].eq(self.rd_hist[i] + 1)
        head_beat = ar_q.r_data[:abits]
        head_len = ar_q.r_data[abits:abits + lbits]
        head_due = ar_q.r_data[abits + lbits:]
        cur_active = Signal()
        cur_addr = Signal(abits)
        cur_left = Signal(lbits)
        o_valid = Signal()
        o_last = Signal()
        o_resp = Signal(2)
        advance = Signal()
        issue = Signal()
        load = Signal()
        m.d.comb += [
            advance.eq(~o_valid | axi.rready),
            issue.eq(cur_active & advance & ~t.refresh & ~t.stall[3] & t.tok_r),
            t.use_r.eq(issue),
            load.eq(ar_q.r_rdy & ((t.now - head_due)[31] == 0) & (~cur_active | (issue & (cur_left == 0)))),
            ar_q.r_en.eq(load),
            rd.addr.eq(cur_addr),
            rd.en.eq(advance),
            axi.rvalid.eq(o_valid),
            axi.rdata.eq(rd.data),
            axi.rlast.eq(o_last),
            axi.rresp.eq(o_resp),
        ]
        with m.If(issue):
            m.d.sync += [o_valid.eq(1), o_last.eq(cur_left == 0), o_resp.eq(self.inject_rresp),
                         cur_addr.eq(cur_addr + 1),
                         cur_left.eq(cur_left - 1), self.rd_beats.eq(self.rd_beats + 1)]
            with m.If(cur_left == 0):
                m.d.sync += cur_active.eq(0)
        with m.Elif(advance):
            m.d.sync += o_valid.eq(0)
        with m.If(load):
            m.d.sync += [cur_active.eq(1), cur_addr.eq(head_beat), cur_left.eq(head_len)]

    def _writes(self, m, wr, t, err, abits):
        """AW queue, W beats (into the memory, or the back door's write when ``bd_we``) and B responses."""
        axi, lbits = self.axi, _LEN_BITS
        aw_q = SyncFIFO(width=abits + lbits, depth=self._queue)
        m.submodules.aw_q = aw_q
        aw_fire = Signal()
        m.d.comb += [axi.awready.eq(aw_q.w_rdy & ~t.refresh & ~t.stall[1]), aw_fire.eq(axi.awvalid & axi.awready)]
        aw_beat, aw_range, aw_4k, aw_proto = self._check(m, abits, axi.awaddr, axi.awlen, axi.awsize, axi.awburst,
                                                         True)
        m.d.comb += [aw_q.w_en.eq(aw_fire), aw_q.w_data.eq(Cat(aw_beat, axi.awlen))]
        with m.If(aw_fire):
            m.d.sync += err.eq(err | Mux(aw_range, ERR_RANGE, 0) | Mux(aw_4k, ERR_4K, 0) | Mux(aw_proto, ERR_PROTO, 0))
            for i in range(HIST):
                sel = (axi.awlen == i) if i < HIST - 1 else (axi.awlen >= HIST - 1)
                with m.If(sel):
                    m.d.sync += self.wr_hist[i].eq(self.wr_hist[i] + 1)
        w_cnt = Signal(lbits)
        b_pending = Signal(range(self._queue + 1))
        w_fire = Signal()
        w_end = Signal()
        wl_beat = aw_q.r_data[:abits]
        wl_len = aw_q.r_data[abits:abits + lbits]
        m.d.comb += [
            axi.wready.eq(aw_q.r_rdy & ~t.refresh & ~t.stall[2] & t.tok_w & (b_pending < self._queue)),
            w_fire.eq(axi.wvalid & axi.wready),
            t.use_w.eq(w_fire),
            w_end.eq(w_fire & (w_cnt == wl_len)),
            aw_q.r_en.eq(w_end),
            wr.en.eq(w_fire | self.bd_we),
            wr.addr.eq(Mux(self.bd_we, self.bd_addr, wl_beat + w_cnt)),
            wr.data.eq(Mux(self.bd_we, self.bd_wdata, axi.wdata)),
        ]
        with m.If(w_fire):
            m.d.sync += [w_cnt.eq(Mux(w_end, 0, w_cnt + 1)), self.wr_beats.eq(self.wr_beats + 1)]
            with m.If(axi.wlast != (w_cnt == wl_len)):
                m.d.sync += err.eq(err | ERR_WLAST)
            with m.If(axi.wstrb != (1 << BEAT_BYTES) - 1):
                m.d.sync += err.eq(err | ERR_PROTO)
        # B: a registered valid that never drops before its handshake
        b_valid = Signal()
        b_fire = Signal()
        b_resp = Signal(2)
        m.d.comb += [axi.bvalid.eq(b_valid), axi.bresp.eq(b_resp), b_fire.eq(b_valid & axi.bready)]
        pend_next = b_pending + w_end - b_fire
        m.d.sync += b_pending.eq(pend_next)
        with m.If(~b_valid | axi.bready):
            # b_pending counts responses not yet handshaken, including the one presented now
            m.d.sync += [b_valid.eq((b_pending - b_fire + w_end != 0) & ~t.stall[4]), b_resp.eq(self.inject_bresp)]


def channel_models(channels: int, *, seed: int = 1, refresh_period: int | None = None, files: str | None = None,
                   dma_mhz: float | None = None, **options) -> list:
    """One HbmChannelModel per pseudo-channel, channel c's window at ``c * CHANNEL_SPAN`` (the address
    XRT gives a buffer in HBM[c]), refresh phases and stall seeds spread over the channels as on a card
    whose controllers refresh independently. ``files="hbm"`` gives channel c the file memory ``hbm<c>``.
    ``options`` go to every model; the timing defaults to :func:`hbm_timing` at ``dma_mhz`` (default: the
    default build's DMA clock)."""
    if refresh_period is None:
        refresh_period = hbm_timing(BuildParams().dma_mhz if dma_mhz is None else dma_mhz)["refresh_period"]
    return [HbmChannelModel(window_base=c * CHANNEL_SPAN, refresh_period=refresh_period, dma_mhz=dma_mhz,
                            refresh_phase=(c * 2654435761 + seed * 97) % refresh_period,
                            seed=(seed * 1000003 + c * 7919) % (2**32 - 1) + 1,
                            files=None if files is None else f"{files}{c}", **options)
            for c in range(channels)]


class DmaLoopback(wiring.Component):
    """DmaEngine + one HbmChannelModel per channel + a loopback FIFO standing in for the NTT engine.
    ``log_n``, ``batch``, ``input_log_m`` and ``chain_log_n`` go to the engine (the run's size, default the
    build's largest, the transforms per pass, default 1, and the zero-extension / chain modes, default off); the channel models hold buffers of the largest size between guards
    (so B x N <= 2^max_log_n).

    Counters (``ntt`` domain) for throughput: ``ntt_cycles`` from the first ``points_out`` transfer to the
    last ``points_in`` transfer of the pass, ``out_xfers`` / ``in_xfers`` payloads moved.
    """

    def __init__(self, params: BuildParams, *, fifo_beats: int = READ_FIFO_BEATS,
                 write_fifo_beats: int = WRITE_FIFO_BEATS, latency: int | None = None,
                 refresh_period: int | None = None, refresh_cycles: int | None = None, stall_rate: int = 64,
                 loop_stall_rate: int = 64, guard_beats: int = 8, loop_depth: int = 4, seed: int = 1,
                 store: bool = True, hbm_num: int | None = None, hbm_den: int | None = None):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        _int("guard_beats", guard_beats, 0)
        _int("loop_stall_rate", loop_stall_rate, 0, 255)
        _int("loop_depth", loop_depth, 1, 64)
        self._params = params
        self._dma = DmaEngine(params, fifo_beats=fifo_beats, write_fifo_beats=write_fifo_beats)
        lay = self._dma.layout
        self._guard = guard_beats
        self._depth = lay.beats_per_channel + 2 * guard_beats
        self._models = channel_models(params.channels, depth_beats=self._depth, latency=latency,
                                      refresh_period=refresh_period, refresh_cycles=refresh_cycles,
                                      stall_rate=stall_rate, seed=seed, store=store,
                                      hbm_num=hbm_num, hbm_den=hbm_den, dma_mhz=params.dma_mhz)
        self._loop_stall = loop_stall_rate
        self._loop_depth = loop_depth
        self._seed = seed
        chans = params.channels
        super().__init__({
            "start": In(1), "pass_index": In(2),
            "run": In(run_layout(params), init={"log_n": params.max_log_n, "batch": 1}),
            "busy": Out(1), "done": Out(1),
            "refresh_en": In(1), "stall_en": In(1), "loop_stall_en": In(1),
            "bd_chan": In(range(chans)), "bd_addr": In(range(self._depth)), "bd_we": In(1),
            "bd_wdata": In(BEAT_BYTES * 8), "bd_rdata": Out(BEAT_BYTES * 8),
            "err": Out(data.ArrayLayout(4, chans)),
            "rd_hist": Out(data.ArrayLayout(32, HIST)), "wr_hist": Out(data.ArrayLayout(32, HIST)),
            "ntt_cycles": Out(32), "out_xfers": Out(32), "in_xfers": Out(32), "dma_cycles": Out(32),
        })

    @property
    def params(self) -> BuildParams:
        return self._params

    @property
    def dma(self) -> DmaEngine:
        return self._dma

    @property
    def guard_beats(self) -> int:
        return self._guard

    @property
    def depth_beats(self) -> int:
        """Beats of each channel model: guard + buffer + guard."""
        return self._depth

    def buffer_base(self, channel: int) -> int:
        return channel * CHANNEL_SPAN + self._guard * BEAT_BYTES

    def elaborate(self, platform):
        m = Module()
        p = self._params
        m.submodules.dma = dma = self._dma
        for c, model in enumerate(self._models):
            m.submodules[f"hbm{c}"] = hbm = DomainRenamer("dma")(model)
            wiring.connect(m, dma.m_axi[c], hbm.axi)
            m.d.comb += [
                dma.base[c].eq(self.buffer_base(c)),
                hbm.refresh_en.eq(self.refresh_en), hbm.stall_en.eq(self.stall_en),
                hbm.bd_addr.eq(self.bd_addr), hbm.bd_wdata.eq(self.bd_wdata),
                hbm.bd_we.eq(self.bd_we & (self.bd_chan == c)),
                self.err[c].eq(hbm.err),
            ]
        m.d.comb += self.bd_rdata.eq(Array([mod.bd_rdata for mod in self._models])[self.bd_chan])
        for i in range(HIST):
            m.d.comb += [self.rd_hist[i].eq(sum(mod.rd_hist[i] for mod in self._models)),
                         self.wr_hist[i].eq(sum(mod.wr_hist[i] for mod in self._models))]
        m.d.comb += [dma.start.eq(self.start), dma.pass_index.eq(self.pass_index), dma.run.eq(self.run),
                     self.busy.eq(dma.busy), self.done.eq(dma.done)]

        # the "engine": a FIFO from points_out to points_in, with random stalls on both sides
        loop = DomainRenamer("ntt")(SyncFIFO(width=dma.payload_width, depth=self._loop_depth))
        m.submodules.loop = loop
        lfsr = Signal(32, init=(self._seed * 2246822519) % (2**32 - 1) + 1)
        m.d.ntt += lfsr.eq(_lfsr_step(lfsr))
        stall_take = Signal()
        stall_give = Signal()
        m.d.comb += stall_take.eq(self.loop_stall_en & (lfsr[0:8] < self._loop_stall))
        hold = Signal()          # points_in.valid may only drop after a transfer
        with m.If(~dma.points_in.valid | dma.points_in.ready):
            m.d.ntt += hold.eq(self.loop_stall_en & (lfsr[8:16] < self._loop_stall))
        m.d.comb += stall_give.eq(hold)
        m.d.comb += [
            dma.points_out.ready.eq(loop.w_rdy & ~stall_take),
            loop.w_en.eq(dma.points_out.valid & dma.points_out.ready),
            loop.w_data.eq(dma.points_out.payload),
            dma.points_in.valid.eq(loop.r_rdy & ~stall_give),
            dma.points_in.payload.eq(loop.r_data),
            loop.r_en.eq(dma.points_in.valid & dma.points_in.ready),
        ]

        # throughput counters
        busy_n = Signal()
        m.submodules.sync_busy = FFSynchronizer(dma.busy, busy_n, o_domain="ntt")
        busy_prev = Signal()
        m.d.ntt += busy_prev.eq(busy_n)
        out_fire = dma.points_out.valid & dma.points_out.ready
        in_fire = dma.points_in.valid & dma.points_in.ready
        streaming = Signal()
        with m.If(busy_n & ~busy_prev):
            m.d.ntt += [self.ntt_cycles.eq(0), self.out_xfers.eq(0), self.in_xfers.eq(0), streaming.eq(0)]
        with m.Else():
            with m.If(out_fire):
                m.d.ntt += [self.out_xfers.eq(self.out_xfers + 1), streaming.eq(1)]
            with m.If(in_fire):
                m.d.ntt += self.in_xfers.eq(self.in_xfers + 1)
                with m.If(self.in_xfers
                          == ((self.run.batch << self.run.log_n) >> (p.points_per_cycle.bit_length() - 1)) - 1):
                    m.d.ntt += streaming.eq(0)
            with m.If(streaming | out_fire):
                m.d.ntt += self.ntt_cycles.eq(self.ntt_cycles + 1)
        with m.If(self.start & ~dma.busy):
            m.d.dma += self.dma_cycles.eq(0)
        with m.Elif(dma.busy):
            m.d.dma += self.dma_cycles.eq(self.dma_cycles + 1)
        return m
