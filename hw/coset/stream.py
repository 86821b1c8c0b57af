# amaranth: UnusedElaboratable=no
"""The factor tables' memories and the stream: the factor pair of each enabled cycle, HI x LO."""

from amaranth.hdl import Cat, Elaboratable, Module, Mux, Signal, unsigned
from amaranth.lib.memory import Memory

from nantucket.hw.model import coset as coset_model

from .common import CosetBuild

__all__ = ["TableMemories", "FactorStream"]


class TableMemories:
    """LO and HI, five sets each (``SETS``: 0 and 1 the passes' (the shift's, kept while it stays), the
    row step's, two work sets for the elements of a stepping pass), with their ports: one write port each
    (the build's, else the element update's), read ports 0 and 1 the stream's (port 0 also the build's),
    2 and 3 the element update's (current set, step's set)."""

    #: Table sets: 0 and 1 the passes', the step's, two work sets.
    STEP_SET, WORK_SETS, SETS, SET_BITS = 2, (3, 4), 5, 3

    def __init__(self, build: CosetBuild):
        k = build.k
        self.lo_bits, self.hi_bits = max(k // 2, 1), max(k - k // 2, 1)
        self.lo = Memory(shape=unsigned(build.width), depth=self.SETS << self.lo_bits, init=[])
        self.hi = Memory(shape=unsigned(build.width), depth=self.SETS << self.hi_bits, init=[])
        self.lo_w, self.hi_w = self.lo.write_port(), self.hi.write_port()
        self.lo_r = [self.lo.read_port(domain="sync") for _ in range(4)]
        self.hi_r = [self.hi.read_port(domain="sync") for _ in range(4)]


class FactorStream(Elaboratable):
    """The stream: on every enabled cycle the factors b^i = HI[i >> s] x LO[i & (2^s - 1)] of the two
    positions the lanes' output scales meet (the lane input order forward, offset by the input register;
    the output order inverse, offset by the lanes' latency to their output scales), on two units (``unit_a``
    LO's, ``unit_b`` HI's), which the table build uses in its BUILD state. Owns the tables' memories (the
    build's writes first, else the element update's), the stream position and the PRIME count (``latency``
    enabled cycles from a position to its factors at the units' outputs: a table read, a multiply).

    Publishes ``prime_last`` (the prime's last cycle); the factors are ``unit_a.o_p``, ``unit_b.o_p``.
    ``model()``: the pairs from a set of tables."""

    def __init__(self, build: CosetBuild, ctl, builder, rows, memories: TableMemories, unit_a, unit_b):
        self._b, self._ctl, self._builder, self._rows, self._mem = build, ctl, builder, rows, memories
        self._units = (unit_a, unit_b)
        self.prime = Signal(range(self.latency + 1), name="prime_cycle")
        self.prime_last = Signal(name="prime_last")
        self.pos = Signal(max(build.k - 1, 1), name="position")

    # -- figures -------------------------------------------------------------------------------------

    @property
    def latency(self) -> int:
        """Enabled cycles from a stream position to its factors: table read, multiply."""
        return 1 + self._b.mul_latency

    def model(self, tables: tuple[list[int], list[int]], log_frame: int, inverse: bool, cycles: int,
              first: int = 0) -> list[tuple[int, int]]:
        """Bit-exact reference: the pairs on ``cycles`` enabled cycles from frame position ``first`` on,
        from (LO, HI) as the multiplier's words (``TableBuilder.model``): the product of the two words
        (hw.model.coset.factor_positions' positions), through the multiplier's model."""
        lo, hi = tables
        s, mul = log_frame // 2, self._b.general.model
        # (a product of two words is the word of the product)
        pos = coset_model.factor_positions(log_frame, inverse)
        pairs = [tuple(mul(hi[int(i) >> s], lo[int(i) & ((1 << s) - 1)]) for i in pair) for pair in pos]
        return [pairs[(first + t) % len(pairs)] for t in range(cycles)]

    # -- the hardware --------------------------------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        m.submodules.lo, m.submodules.hi = self._mem.lo, self._mem.hi
        self._prime(m)
        self._position(m)
        self._datapath(m, self._addresses(m))
        return m

    def _prime(self, m):
        ctl, b = self._ctl, self._b
        with m.If(ctl.begin):
            m.d.sync += [self.prime.eq(0), self.prime_last.eq(self.latency == 1)]
        with m.If(self._builder.set_done):
            m.d.sync += [self.prime.eq(0), self.prime_last.eq(self.latency == 1)]
        with m.If(ctl.states["PRIME"] & ~self._rows.stall):
            m.d.sync += [self.prime.eq(self.prime + 1), self.prime_last.eq(self.prime == self.latency - 2)]

    def _position(self, m):
        """The stream position: the pair at the multipliers ``latency`` enabled cycles from now."""
        ctl, b, pos = self._ctl, self._b, self.pos
        with m.If(ctl.states["WAIT"]):
            with m.Switch(ctl.frame):
                for f in range(2, b.k + 1):
                    with m.Case(f):
                        period = 1 << (f - 1)
                        m.d.sync += pos.eq(Mux(ctl.inv_q, (-b.offsets[f]) % period, (-b.input_offset) % period))
                with m.Default():                       # not a frame size: no stream
                    m.d.sync += pos.eq(0)
        with m.Elif(ctl.stream_en):
            with m.Switch(ctl.frame):
                for f in range(2, b.k + 1):
                    with m.Case(f):
                        m.d.sync += pos.eq((pos + 1)[:f - 1])
                with m.Default():
                    m.d.sync += pos.eq(0)

    def _addresses(self, m):
        """Stream addresses of the two positions (see hw.model.coset.factor_positions)."""
        ctl, k, pos = self._ctl, self._b.k, self.pos
        lo_a = [Signal(self._mem.lo_bits, name=f"lo_addr{i}") for i in range(2)]
        hi_a = [Signal(self._mem.hi_bits, name=f"hi_addr{i}") for i in range(2)]
        with m.Switch(ctl.frame):
            for f in range(2, k + 1):
                s, a = f // 2, f - f // 2
                with m.Case(f):
                    with m.If(ctl.inv_q):                   # (2t, 2t + 1)
                        twice = pos << 1
                        m.d.comb += [lo_a[0].eq(twice[:s]), lo_a[1].eq(twice[:s] | 1),
                                     hi_a[0].eq(twice[s:f]), hi_a[1].eq(twice[s:f])]
                    with m.Else():                          # (r + 2^s m, r + 2^s m + 2^(f-1))
                        r, mm = pos[a - 1:f - 1], pos[:a - 1]
                        m.d.comb += [lo_a[0].eq(r), lo_a[1].eq(r), hi_a[0].eq(mm), hi_a[1].eq(mm | (1 << (a - 1)))]
            with m.Default():                               # not a frame size: no stream
                m.d.comb += [addr.eq(0) for addr in lo_a + hi_a]
        return lo_a, hi_a

    def _datapath(self, m, addresses):
        """The reads (the build's entry on port 0 while building, else the stream's), the writes (the
        build's, else the element update's) and the two units' operands (the build's entry and chain word,
        else the stream's HI and LO)."""
        ctl, builder, rows, mem, b = self._ctl, self._builder, self._rows, self._mem, self._b
        unit_a, unit_b = self._units
        building, stream_en = ctl.building, ctl.stream_en
        write_set = Mux(builder.build_step, mem.STEP_SET, ctl.table_set)
        read_set = Mux(building, write_set, Mux(rows.at_edge, rows.nxt, rows.cur))
        for i in range(2):
            for rd, addr in ((mem.lo_r[i], addresses[0][i]), (mem.hi_r[i], addresses[1][i])):
                idx = Mux(building & (i == 0), builder.read_index, addr)
                m.d.comb += [rd.addr.eq(Cat(idx[:len(addr)], read_set)), rd.en.eq(building | stream_en)]
        with m.If(rows.w_valid):
            for wp, sel, bits in ((mem.lo_w, rows.w_lo, mem.lo_bits), (mem.hi_w, ~rows.w_lo, mem.hi_bits)):
                m.d.comb += [wp.en.eq(sel), wp.addr.eq(Cat(rows.w_entry[:bits], rows.w_set)), wp.data.eq(rows.w_data)]
        for wp, unit, width in ((mem.lo_w, unit_a, mem.lo_bits), (mem.hi_w, unit_b, mem.hi_bits)):
            with m.If(building | unit.o_valid):         # else the element update's
                m.d.comb += [wp.en.eq(builder.init | unit.o_valid),
                             wp.addr.eq(Cat(Mux(builder.init, 0, builder.dest)[:width], write_set)),
                             wp.data.eq(Mux(builder.init, b.one, unit.o_p))]
        lo_r, hi_r = mem.lo_r, mem.hi_r
        m.d.comb += [
            unit_a.en.eq(building | stream_en), unit_b.en.eq(building | stream_en),
            unit_a.i_valid.eq(builder.issued & builder.lo_on), unit_b.i_valid.eq(builder.issued),
            unit_a.i_a.eq(lo_r[0].data),
            unit_a.i_b.eq(Mux(building, builder.lo_word, hi_r[0].data)),
            unit_b.i_a.eq(Mux(building, hi_r[0].data, lo_r[1].data)),
            unit_b.i_b.eq(Mux(building, builder.hi_word, hi_r[1].data)),
        ]
