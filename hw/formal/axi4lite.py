"""AXI4-Lite slave-side properties (AMBA AXI, IHI 0022, the AXI4-Lite chapter), reusable on any slave
with the members of :class:`hw.axi.AxiLiteSignature` (seen from the slave: ``awvalid`` ... come in).

:func:`slave_checks` adds to a :class:`hw.formal.props.Props`:

- **assumes** (the master's duties and nothing more): AWVALID, WVALID and ARVALID held until their
  READY with address, data and strobes stable; BREADY and RREADY any time.
- **asserts** (the slave's): BVALID and RVALID held until their READY, the response (and RDATA)
  stable meanwhile; a B only for a write whose AW and W were both taken and not yet answered, an R only
  for a taken AR not yet answered (one response per request, only to issued requests; at most
  ``max_writes`` writes and ``max_reads`` reads outstanding, the counts never wrap); every response OKAY (``okay_only``);
  any address answered: a complete write or a read gets its response, and an address or data offered
  while nothing of its channel is outstanding is taken, within ``max_wait`` cycles (the bounded form of
  "answered": smtbmc has no liveness).
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Mux, Signal

from nantucket.hw.axi import RESP_OKAY

__all__ = ["slave_checks"]


def _waited(m, domain, cond, limit, name):
    """Consecutive cycles ``cond`` has held (saturating above ``limit``)."""
    c = Signal(range(limit + 2), name=name)
    m.d[domain] += c.eq(Mux(cond, Mux(c > limit, c, c + 1), 0))
    return c


def slave_checks(p, m, axil, *, max_writes=2, max_reads=1, max_wait=16, okay_only=True, domain="sync"):
    """AW, W, B, AR and R of one AXI4-Lite slave port (``axil``), into ``p``. Returns a SimpleNamespace
    of the handshakes (``aw_fire`` ...), the outstanding counts (``writes_aw``, ``writes_w``,
    ``reads``) and the bounded waits' counters (``waited``: name -> cycles), for a wrapper's invariants."""
    fire = {}
    for ch, v, r in (("aw", axil.awvalid, axil.awready), ("w", axil.wvalid, axil.wready),
                     ("b", axil.bvalid, axil.bready), ("ar", axil.arvalid, axil.arready),
                     ("r", axil.rvalid, axil.rready)):
        fire[ch] = Signal(name=f"mon_{ch}_fire")
        m.d.comb += fire[ch].eq(v & r)
    for ch, v, r, payload in (("aw", axil.awvalid, axil.awready, axil.awaddr),
                              ("w", axil.wvalid, axil.wready, Cat(axil.wdata, axil.wstrb)),
                              ("ar", axil.arvalid, axil.arready, axil.araddr)):
        held, stable, stalled = p.hold_rules(v, r, payload, ch)
        p.assumes(f"{ch}_valid_held", held)
        p.assumes(f"{ch}_payload_stable", stable)
    for ch, v, r, payload in (("b", axil.bvalid, axil.bready, axil.bresp),
                              ("r", axil.rvalid, axil.rready, Cat(axil.rdata, axil.rresp))):
        held, stable, stalled = p.hold_rules(v, r, payload, ch)
        p.asserts(f"{ch}_valid_held", held, when=stalled)
        p.asserts(f"{ch}_payload_stable", stable, when=stalled)
    out = {}
    for name, up, down, limit in (("aw", fire["aw"], fire["b"], max_writes), ("w", fire["w"], fire["b"], max_writes),
                                  ("ar", fire["ar"], fire["r"], max_reads)):
        out[name] = Signal((limit + 1).bit_length() + 1, name=f"mon_{name}_outstanding")
        m.d[domain] += out[name].eq(out[name] + up - down)
        p.asserts(f"{name}_outstanding_bounded", out[name] <= limit, reach=out[name] == limit)
    p.asserts("b_only_for_writes", when=axil.bvalid, cond=((out["aw"] != 0) & (out["w"] != 0)))
    p.asserts("r_only_for_reads", when=axil.rvalid, cond=(out["ar"] != 0))
    if okay_only:
        p.asserts("b_okay", when=axil.bvalid, cond=(axil.bresp == RESP_OKAY))
        p.asserts("r_okay", when=axil.rvalid, cond=(axil.rresp == RESP_OKAY))
    # each bounded wait: (what waits, the case it is about: a request made)
    waits = {
        "b_answers_write": ((out["aw"] != 0) & (out["w"] != 0) & ~axil.bvalid, (out["aw"] != 0) & (out["w"] != 0)),
        "r_answers_read": ((out["ar"] != 0) & ~axil.rvalid, out["ar"] != 0),
        "aw_taken": (axil.awvalid & ~axil.awready & (out["aw"] == 0), axil.awvalid & (out["aw"] == 0)),
        "w_taken": (axil.wvalid & ~axil.wready & (out["w"] == 0), axil.wvalid & (out["w"] == 0)),
        "ar_taken": (axil.arvalid & ~axil.arready & (out["ar"] == 0), axil.arvalid & (out["ar"] == 0)),
    }
    waited = {}
    for name, (cond, case) in waits.items():
        waited[name] = _waited(m, domain, cond, max_wait, f"mon_wait_{name}")
        p.asserts(f"{name}_in_time", waited[name] <= max_wait, reach=case)
    return SimpleNamespace(**{f"{k}_fire": v for k, v in fire.items()}, writes_aw=out["aw"],
                           writes_w=out["w"], reads=out["ar"], waited=waited)
