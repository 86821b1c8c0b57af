"""A dual-clock FIFO of stream payloads whose every path stays a few LUT levels: the DMA's own, in place of
``amaranth.lib.fifo.AsyncFIFO``.

The same scheme as Amaranth's (Cummings' "style #2": a binary and a Gray pointer per side, each Gray
pointer crossed to the other side through a 2-stage :class:`~amaranth.lib.cdc.FFSynchronizer`, the words
in a memory written on one clock and read on the other), with the logic between registers cut down. By
the open-flow estimate (docs/performance.md) Amaranth's FIFO was both DMA domains' worst path: in the
write domain the crossed read pointer's Gray-to-binary decode, a ripple of 7 XORs for 128 words, into
its level; in the read domain the empty compare (crossed pointer against the read pointer), then the
read, the pointer's +1 and its Gray code, 6 LUT levels. Here:

- each side keeps its pointer's successors (binary and Gray) in registers beside it, so a read or a
  write only picks between registers, and the successors' own +1 runs from a register;
- ``r_stream.valid`` (not empty) and ``w_stream.ready`` (not full) are registers. Not empty: three words
  or more a cycle ago, or one or more and no read since (compares of registers, registered; the
  handshake only combines them). Not full: worked out for both outcomes of the cycle's write and picked
  by it (``exact_full``), or from the writer's level register alone, two cycles old, with room for the
  writes since kept in reserve (see the class doc);
- the crossed read pointer's decode (for the writer's level) goes through two register stages of one
  LUT each (:func:`gray_decode_registered`) where Amaranth's has one of a LUT per pointer bit.

Costs against Amaranth's FIFO. A write is visible to the reader 4 read-clock edges after the write's
edge at the earliest (2 to 3 synchronizer edges, the compare's register, the not-empty register): 2 read
cycles more than Amaranth's, whose empty is a compare on the synchronizer's output. A FIFO that held
fewer than three words a cycle ago gives a word every third read cycle only; from three words on, one a
cycle. ``w_level`` (words written but not known read: the writer's view, which lags reads by the
crossing and counts a write from the cycle after it, as Amaranth's does) is a register as Amaranth's, and
sees a read a write cycle later (the decode's second stage). Without ``exact_full`` a FIFO waits for room
up to 2 write cycles longer than Amaranth's, and may stop 2 words short of its depth after a pause in the
writes. None of this costs the DMA throughput: its FIFOs are 128 to 512 words deep, far deeper than the
crossing's round trip, the read FIFOs are kept filled by the read masters' credits, and a write FIFO that
runs near empty on the dma side does so because the dma side drains it faster than the ntt side fills it
(scripts/bench_dma.py measures the passes).

Reset: the write domain's reset empties the FIFO (as Amaranth's): it resets the write side, and through an
:class:`~amaranth.lib.cdc.AsyncFFSynchronizer` the read side's pointers, which the read domain's own
reset does not touch (a read-domain reset alone keeps the words). Without ``exact_full`` the write side
takes no word for 5 write cycles after its reset, until the read pointer of after the reset has crossed
and its level has settled (decoded from the read pointer of before the reset, the level was too low and
a word was taken with no room). Hold the write reset for at least a cycle of each clock
(hw/formal/fifo_reset.py proves that enough).

Crossings (hw/flow/crossings.py): the two pointer synchronizers sample registers (``w_gry``, ``r_gry``)
directly; the memory is a dual-clock RAM; the reset synchronizer takes the write domain's reset.
"""

from amaranth.hdl import Cat, Module, Mux, ResetSignal, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import AsyncFFSynchronizer, FFSynchronizer
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["AsyncFifo", "gray_encode", "gray_decode", "gray_decode_registered"]


def gray_encode(value):
    """The Gray code of an unsigned value."""
    return value ^ value[1:]


def gray_int(value: int) -> int:
    """The Gray code of an int."""
    return value ^ (value >> 1)


def gray_decode(gray):
    """Binary of a Gray-coded value: bit i is the XOR of the Gray bits i and up."""
    return Cat(*(gray[i:].xor() for i in range(len(gray))))


#: write edges after a write reset before a FIFO without exact_full takes a word: the crossed read
#: pointer's 2 stages, the decode's 2 and the level register (AsyncFifo.elaborate)
_LEVEL_SETTLE = 5

#: Gray bits a block of :func:`gray_decode_registered`'s first stage
DECODE_BLOCK = 4


def gray_decode_registered(m, domain: str, gray, name: str):
    """:func:`gray_decode` of ``gray`` in two register stages (2 cycles of ``domain``), one LUT each:
    first each bit's XOR of the Gray bits from it to the top of its block of ``DECODE_BLOCK``, then the
    XOR of that with the parities of the blocks above (the first stage's value at each block's lowest
    bit). Written as one XOR per bit, synthesis rebuilt the decode as the ripple b[i] = b[i + 1] ^ g[i]
    (a LUT per pointer bit in series), which the register between the stages rules out."""
    n, k = len(gray), DECODE_BLOCK
    part = Signal(n, name=f"{name}_part")
    binary = Signal(n, name=name)
    m.d[domain] += part.eq(Cat(*(gray[i:min(n, (i // k + 1) * k)].xor() for i in range(n))))
    m.d[domain] += binary.eq(Cat(*(Cat(part[i], *(part[b] for b in range((i // k + 1) * k, n, k))).xor()
                                   for i in range(n))))
    return binary


class AsyncFifo(wiring.Component):
    """``w_stream`` (domain ``w_domain``) -> ``r_stream`` (domain ``r_domain``) in order, ``depth`` words
    of ``width`` bits (a power of two). ``level=True`` adds ``w_level`` (write domain, see the module doc).

    ``exact_full`` picks how ``w_stream.ready`` (not full, a register) is worked out:

    - False (default; ``depth`` >= 4): from the writer's level register alone, full when it held
      ``depth`` - 2 words or more two cycles ago; three writes in a row still fit, so a write every cycle
      fills the FIFO to the top, one after a pause may wait with up to 2 words free. Nothing of the writer
      (its valid) is on the path: for writers that look at ``ready``.
    - True (``depth`` >= 2): exact by the crossed read pointer: worked out for both outcomes of the
      cycle's write and picked by it, so the writer's valid is on the path to it. For a writer whose valid
      is a register and that fills the FIFO by its own count to the last word (AxiReadMaster)."""

    def __init__(self, *, width: int, depth: int, w_domain: str, r_domain: str, level: bool = False,
                 exact_full: bool = False):
        if not isinstance(width, int) or isinstance(width, bool) or width < 1:
            raise ValueError(f"width: expected a positive int, got {width!r}")
        least = 2 if exact_full else 4
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < least or depth & (depth - 1):
            raise ValueError(f"depth: expected a power of two >= {least}, got {depth!r}")
        if w_domain == r_domain:
            raise ValueError(f"r_domain: must differ from w_domain ({w_domain!r})")
        self._width, self._depth, self._level, self._exact = width, depth, level, bool(exact_full)
        self._w_domain, self._r_domain = w_domain, r_domain
        members = {"w_stream": In(stream.Signature(width)), "r_stream": Out(stream.Signature(width))}
        if level:
            members["w_level"] = Out(range(depth + 1))
        super().__init__(members)

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def width(self) -> int:
        return self._width

    @property
    def exact_full(self) -> bool:
        return self._exact

    def elaborate(self, platform):
        m = Module()
        bits = self._depth.bit_length()            # log2(depth) + 1: the wrap bit tells full from empty
        wd, rd = m.d[self._w_domain], m.d[self._r_domain]

        # -- write side --------------------------------------------------------------------------------
        w_bin, w_gry = Signal(bits), Signal(bits)
        w_bin_inc, w_gry_inc = Signal(bits, init=1), Signal(bits, init=1)      # their successors
        full = Signal(init=not self._exact)        # without exact_full, full until the level settles
        r_gry_w = Signal(bits)                     # the read pointer, crossed
        do_write = Signal()
        m.d.comb += [self.w_stream.ready.eq(~full), do_write.eq(self.w_stream.valid & ~full)]
        with m.If(do_write):
            wd += [w_bin.eq(w_bin_inc), w_bin_inc.eq(w_bin_inc + 1),
                   w_gry.eq(w_gry_inc), w_gry_inc.eq(gray_encode((w_bin_inc + 1)[:bits]))]
        # the writer's level: words written (before this cycle's) less the crossed read pointer's
        level = self.w_level if self._level else Signal(range(self._depth + 1), name="w_level")
        if self._level or not self._exact:
            r_bin_w = gray_decode_registered(m, self._w_domain, r_gry_w, "r_bin_w")
            wd += level.eq(w_bin - r_bin_w)
        if self._exact:
            # full when the write pointer is the read pointer one lap ahead: in Gray, the top two bits
            # inverted; after this cycle's write or without it
            lap = r_gry_w ^ (0b11 << (bits - 2))
            wd += full.eq(Mux(do_write, w_gry_inc == lap, w_gry == lap))
        else:
            # level(t) is the fill at t - 1 (or more: the read pointer lags); full at t + 1 if it was
            # depth - 2 or more. A write at t + 1 then finds at most depth - 3 + 2 words (the writes at
            # t - 1 and t) and fits.
            # After a write reset the crossed read pointer is the read side's of before the reset until the
            # reset pointer (0) has crossed (2 stages), the decode's 2 stages and the level register took
            # it: full is held (from its reset value) for those 5 write edges. (Decoded stale, the level
            # was too low and a word was taken with no room.)
            settle = Signal(range(_LEVEL_SETTLE + 1), init=_LEVEL_SETTLE, name="w_settle")
            with m.If(settle != 0):
                wd += settle.eq(settle - 1)
            wd += full.eq((level >= self._depth - 2) | (settle != 0))

        # -- read side ---------------------------------------------------------------------------------
        # reset only through r_rst (the write domain's reset, see the module doc)
        r_bin = Signal(bits, reset_less=True)
        r_gry = Signal(bits, reset_less=True)
        r_bin_inc = Signal(bits, init=1, reset_less=True)
        r_gry_inc = Signal(bits, init=1, reset_less=True)
        r_bin_inc2 = Signal(bits, init=2, reset_less=True)           # and the one after
        r_gry_inc2 = Signal(bits, init=gray_int(2), reset_less=True)
        nonempty = Signal(reset_less=True)
        three = Signal()                            # three words or more in the FIFO a cycle ago
        w_gry_r = Signal(bits)                     # the write pointer, crossed
        m.submodules.w_gry_cdc = FFSynchronizer(w_gry, w_gry_r, o_domain=self._r_domain, stages=2)
        m.submodules.r_gry_cdc = FFSynchronizer(r_gry, r_gry_w, o_domain=self._w_domain, stages=2)
        r_rst = Signal()
        m.submodules.rst_cdc = AsyncFFSynchronizer(ResetSignal(self._w_domain, allow_reset_less=True), r_rst,
                                                   o_domain=self._r_domain)
        do_read = Signal()
        m.d.comb += [self.r_stream.valid.eq(nonempty), do_read.eq(self.r_stream.ready & nonempty)]
        # not empty after this cycle: three words or more a cycle ago (two reads since leave one), or a word
        # a cycle ago and no read in that cycle or this one. Both terms are registers of compares of
        # registers, which the reader's handshake only combines (the exact next value, both
        # pointers' compares picked by the cycle's read, was 5 LUT levels behind the handshake, and a
        # pointer compare behind it still 5: synthesis chains the compare's terms). A FIFO that held fewer
        # than three words a cycle ago gives a word every third cycle; from three on, one a cycle.
        # (each compare a register of its own: the three's AND before the register was 5 LUT levels)
        some, two, read_q = Signal(reset_less=True), Signal(reset_less=True), Signal(reset_less=True)
        past_two = Signal(reset_less=True)
        m.d.comb += three.eq(some & two & past_two)
        rd += [some.eq(w_gry_r != r_gry), two.eq(w_gry_r != r_gry_inc), past_two.eq(w_gry_r != r_gry_inc2),
               read_q.eq(do_read), nonempty.eq(three | (~do_read & ~read_q & some))]
        with m.If(do_read):
            rd += [r_bin.eq(r_bin_inc), r_bin_inc.eq(r_bin_inc2), r_bin_inc2.eq(r_bin_inc2 + 1),
                   r_gry.eq(r_gry_inc), r_gry_inc.eq(r_gry_inc2),
                   r_gry_inc2.eq(gray_encode((r_bin_inc2 + 1)[:bits]))]
        with m.If(r_rst):
            rd += [r_bin.eq(0), r_bin_inc.eq(1), r_bin_inc2.eq(2), r_gry.eq(0), r_gry_inc.eq(1),
                   r_gry_inc2.eq(gray_int(2)), nonempty.eq(0), some.eq(0), two.eq(0), past_two.eq(0)]

        # -- storage -----------------------------------------------------------------------------------
        m.submodules.storage = storage = Memory(shape=self._width, depth=self._depth, init=[])
        w_port = storage.write_port(domain=self._w_domain)
        r_port = storage.read_port(domain=self._r_domain)
        m.d.comb += [
            w_port.addr.eq(w_bin[:-1]), w_port.data.eq(self.w_stream.payload), w_port.en.eq(do_write),
            # the word at the read pointer after this cycle's read, there the next cycle
            r_port.addr.eq(Mux(do_read, r_bin_inc, r_bin)[:-1]), r_port.en.eq(1),
            self.r_stream.payload.eq(r_port.data),
        ]
        return m
