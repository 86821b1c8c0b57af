"""AXI4 master-side properties (AMBA AXI, IHI 0022), reusable on any master with single-ID, in-order
INCR bursts: the members of :class:`hw.axi.Axi4ReadSignature` / :class:`hw.axi.Axi4WriteSignature`
(``araddr``, ``arlen``, ...; any object with those attributes will do).

:func:`read_master_checks` and :func:`write_master_checks` add to a :class:`hw.formal.props.Props`:

- **asserts** (the master's duties): VALID held until READY and its payload stable on AR, AW and W
  (A3.2.1); bursts legal for a ``data_width`` port (INCR, AxSIZE the full beat, AxLEN below
  ``max_burst``: 16 for the AXI3 ports of the Vitis shell's HBM, 256 for AXI4), address aligned to the
  beat, no burst crossing a 4 KB boundary (A3.4.1); WLAST on exactly the last beat of each burst (W after
  its AW, as a single-ID master writing in order does: asserted too); outstanding bursts and beats within
  the given limits (``max_bursts`` / ``max_beats``; the monitor's counts are wide enough never to wrap).
- **assumes** (the slave's freedom, nothing more): any READY at any time; R beats and B responses only
  for issued requests (an R beat for an accepted AR not yet fully answered; a B for a burst whose AW and
  last W were both accepted), in order (one ID), their payloads stable while VALID waits for READY.

Each returns the monitor's counters (a namespace of Signals) for the wrapper's own design-specific
properties. The rules are stated per channel, so a failure names the channel and the rule.
"""

from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Signal

from nantucket.hw.axi import BURST_INCR

__all__ = ["read_master_checks", "write_master_checks", "burst_rules"]


def _count(m, domain, width, up=0, down=0, name="count"):
    """A monitor counter: +up -down each cycle (both Values), ``width`` bits."""
    c = Signal(width, name=name)
    m.d[domain] += c.eq(c + up - down)
    return c


def burst_rules(p, prefix, valid, addr, length, size, burst, *, data_width, max_burst):
    """The burst's form on an address channel (``prefix``: "ar" or "aw"): legal, aligned, inside 4 KB."""
    beat_bytes = data_width // 8
    size_code = beat_bytes.bit_length() - 1
    p.asserts(f"{prefix}_burst_incr", when=valid, cond=(burst == BURST_INCR))
    p.asserts(f"{prefix}_size_full_beat", when=valid, cond=(size == size_code))
    p.asserts(f"{prefix}_len_legal", when=valid, cond=(length < max_burst))
    p.asserts(f"{prefix}_addr_beat_aligned", when=valid, cond=(addr[:size_code] == 0))
    offset = Cat(addr[:12], 0)                            # 13 bits: offset + bytes up to 8 KB
    p.asserts(f"{prefix}_inside_4k", when=valid, cond=(offset + (length + 1) * beat_bytes <= 4096))


def read_master_checks(p, m, axi, *, data_width=256, max_burst=16, max_bursts=64, max_beats=512,
                       domain="sync"):
    """AR and R of one read master (``axi``), into ``p`` (the wrapper's Props). Returns ``SimpleNamespace``
    of: ``ar_fire``, ``r_fire``, ``beats_out`` (asked for, not arrived), ``bursts_out`` (ARs accepted,
    not fully answered), ``requested`` / ``arrived`` (beats, since the start of the proof)."""
    ar_fire = Signal(name="mon_ar_fire")
    r_fire = Signal(name="mon_r_fire")
    m.d.comb += [ar_fire.eq(axi.arvalid & axi.arready), r_fire.eq(axi.rvalid & axi.rready)]
    held, stable, stalled = p.hold_rules(axi.arvalid, axi.arready,
                                Cat(axi.araddr, axi.arlen, axi.arsize, axi.arburst), "ar")
    p.asserts("ar_valid_held", held, when=stalled)
    p.asserts("ar_payload_stable", stable, when=stalled)
    burst_rules(p, "ar", axi.arvalid, axi.araddr, axi.arlen, axi.arsize, axi.arburst,
                data_width=data_width, max_burst=max_burst)
    wide = (max_beats + max_burst + 1).bit_length() + 1
    beats_out = _count(m, domain, wide, up=ar_fire * (axi.arlen + 1), down=r_fire, name="mon_r_beats_out")
    # bursts: the beat count inside the head burst finds its last beat (the design may ignore RLAST)
    lens = Array(Signal(8, name=f"mon_ar_len{i}") for i in range(max_bursts + 1))
    head, tail = Signal(range(max_bursts + 1), name="mon_ar_head"), Signal(range(max_bursts + 1), name="mon_ar_tail")
    in_burst = Signal(8, name="mon_r_beat")
    bursts_out = Signal(range(max_bursts + 2), name="mon_r_bursts_out")
    last = Signal(name="mon_r_last")
    m.d.comb += last.eq(in_burst == lens[head])
    step = lambda ptr: ptr.eq((ptr + 1) % (max_bursts + 1))
    with m.If(ar_fire):
        m.d[domain] += [lens[tail].eq(axi.arlen), step(tail)]
    with m.If(r_fire):
        m.d[domain] += in_burst.eq(in_burst + 1)
        with m.If(last):
            m.d[domain] += [in_burst.eq(0), step(head)]
    m.d[domain] += bursts_out.eq(bursts_out + ar_fire - (r_fire & last))
    p.asserts("ar_outstanding_beats", beats_out <= max_beats, reach=beats_out > max_beats // 2)
    p.asserts("ar_outstanding_bursts", bursts_out <= max_bursts, reach=bursts_out >= 2)
    # the slave: R only for an issued AR, its payload held while it waits; RLAST on each burst's last beat
    p.assumes("r_only_requested", ~axi.rvalid | (beats_out != 0))
    p.assumes("r_last_on_last", ~axi.rvalid | (axi.rlast == last))
    r_held, r_stable, r_held_when = p.hold_rules(axi.rvalid, axi.rready, Cat(axi.rdata, axi.rresp, axi.rlast), "r")
    p.assumes("r_valid_held", r_held)
    p.assumes("r_payload_stable", r_stable)
    return SimpleNamespace(ar_fire=ar_fire, r_fire=r_fire, beats_out=beats_out, bursts_out=bursts_out,
                           r_last=last, ar_lens=lens, ar_head=head, ar_tail=tail, r_beat=in_burst)


def write_master_checks(p, m, axi, *, data_width=256, max_burst=16, max_bursts=16, domain="sync"):
    """AW, W and B of one write master (``axi``), into ``p``. ``max_bursts``: bursts the master may have
    awaiting B (and so ahead of their W). Returns ``SimpleNamespace`` of ``aw_fire``, ``w_fire``,
    ``b_fire``, ``w_bursts_ahead`` (AWs whose last W is not yet taken) and ``b_out`` (bursts awaiting B)."""
    aw_fire, w_fire, b_fire = (Signal(name=f"mon_{n}_fire") for n in ("aw", "w", "b"))
    m.d.comb += [aw_fire.eq(axi.awvalid & axi.awready), w_fire.eq(axi.wvalid & axi.wready),
                 b_fire.eq(axi.bvalid & axi.bready)]
    for ch, valid, ready, payload in (
            ("aw", axi.awvalid, axi.awready, Cat(axi.awaddr, axi.awlen, axi.awsize, axi.awburst)),
            ("w", axi.wvalid, axi.wready, Cat(axi.wdata, axi.wstrb, axi.wlast))):
        held, stable, stalled = p.hold_rules(valid, ready, payload, ch)
        p.asserts(f"{ch}_valid_held", held, when=stalled)
        p.asserts(f"{ch}_payload_stable", stable, when=stalled)
    burst_rules(p, "aw", axi.awvalid, axi.awaddr, axi.awlen, axi.awsize, axi.awburst,
                data_width=data_width, max_burst=max_burst)
    # the AWs whose W beats are not all taken, their lengths in order: W's beat count finds WLAST's place
    depth = max_bursts + 1
    lens = Array(Signal(8, name=f"mon_aw_len{i}") for i in range(depth))
    head, tail = Signal(range(depth), name="mon_aw_head"), Signal(range(depth), name="mon_aw_tail")
    ahead = Signal(range(depth + 1), name="mon_w_bursts_ahead")
    in_burst = Signal(8, name="mon_w_beat")
    last = Signal(name="mon_w_last")
    m.d.comb += last.eq(in_burst == lens[head])
    step = lambda ptr: ptr.eq((ptr + 1) % depth)
    with m.If(aw_fire):
        m.d[domain] += [lens[tail].eq(axi.awlen), step(tail)]
    with m.If(w_fire):
        m.d[domain] += in_burst.eq(in_burst + 1)
        with m.If(last):
            m.d[domain] += [in_burst.eq(0), step(head)]
    w_done = w_fire & last
    m.d[domain] += ahead.eq(ahead + aw_fire - w_done)
    p.asserts("w_after_its_aw", when=axi.wvalid, cond=(ahead != 0))
    p.asserts("w_last_exact", when=w_fire, cond=(axi.wlast == last))
    # bursts awaiting B: AW accepted; B answerable once its last W is taken too
    b_out = Signal(range(depth + 2), name="mon_b_out")
    b_ready_bursts = Signal(range(depth + 2), name="mon_b_answerable")
    m.d[domain] += [b_out.eq(b_out + aw_fire - b_fire), b_ready_bursts.eq(b_ready_bursts + w_done - b_fire)]
    p.asserts("aw_outstanding_bursts", b_out <= max_bursts, reach=b_out == max_bursts)
    p.asserts("w_outstanding_bursts", ahead <= max_bursts, reach=ahead >= 2)
    p.assumes("b_only_written", ~axi.bvalid | (b_ready_bursts != 0))
    b_held, b_stable, b_held_when = p.hold_rules(axi.bvalid, axi.bready, axi.bresp, "b")
    p.assumes("b_valid_held", b_held)
    p.assumes("b_payload_stable", b_stable)
    return SimpleNamespace(aw_fire=aw_fire, w_fire=w_fire, b_fire=b_fire, w_bursts_ahead=ahead, b_out=b_out,
                           b_answerable=b_ready_bursts, w_last=last, aw_lens=lens, aw_head=head, aw_tail=tail,
                           w_beat=in_burst)
