# amaranth: UnusedElaboratable=no
"""The pass control: the run's fields latched at a pass's start, the table sets kept, the pass's states."""

from amaranth.hdl import Cat, Elaboratable, Module, Mux, Signal

from .common import CosetBuild, OneHot

__all__ = ["PassControl"]


class PassControl(Elaboratable):
    """A pass: latch the run's fields at ``start``, WAIT for the chains, BUILD the tables (none when this
    pass's set is kept), PRIME the stream (``FactorStream.latency`` cycles), STREAM (also the idle state:
    outside a coset pass the factors are not used). Two sets of tables, one per pass, each kept with the
    (inverse, n) it was built for until the shift changes: a run repeated with the same arguments builds
    nothing. Drives ``ready``; publishes the latched fields, ``stepping``, ``cached``, ``chains_ok``,
    the state flags (``states``), ``begin`` (WAIT decides: the set-up's first cycle), ``building``,
    ``stream_en`` (the stream advances) and ``moving`` (it advances unless stalled).

    ``latency``: cycles from the start to WAIT's decision (latch, the registered compares, ``chains_ok``);
    the units it sequences are given by ``follow`` (they read its signals, it reads theirs)."""

    #: Cycles from a streaming pass's start to WAIT's first decision (chains there): one to latch, two to
    #: check the chains.
    latency = 3

    def __init__(self, build: CosetBuild, ports, chain):
        self._b, self._ports, self._chain = build, ports, chain
        k, nmax = build.k, build.nmax
        # coset_q: this pass streams (forward pass 1, inverse pass 2); rows_q: forward pass 2 (row words)
        self.coset_q, self.inv_q, self.rows_q = Signal(name="coset_q"), Signal(name="inverse_q"), Signal(name="rows_q")
        # stepping: a coset run with a row step s > 1, from the chain job's registered parts of the step
        # (the step's 63-bit OR latched at the start was 6 LUT levels): ``stepping_now`` in the cycle after
        # the start (the set-up's first decisions), ``stepping`` registered from it after that
        self.stepping, self.stepping_now = Signal(name="stepping"), Signal(name="stepping_now")
        self.coset_run = Signal(name="coset_run")
        self.table_set, self.log_n_q = Signal(name="table_set"), Signal(range(nmax + 1), name="log_n_q")
        self.frame = Signal(range(k + 1), name="frame", init=k)
        self.offset = Signal(range(nmax + 1), name="chain_offset")
        self.batch_q = Signal(len(ports.run.batch), name="batch_q")
        self.streams_now = Signal(name="streams_now")      # the run's fields at the start: this pass streams
        self.tag = Signal(2 + len(self.log_n_q), name="table_tag")
        self.tags = [Signal(len(self.tag), name=f"tags{i}") for i in range(2)]
        self.hits = [Signal(name=f"tag{i}_hit") for i in range(2)]
        self.cached, self.chains_ok = Signal(name="cached"), Signal(name="chains_ok")
        self.states = OneHot("pass", ("WAIT", "BUILD", "PRIME", "STREAM"), init="STREAM")
        self.begin, self.building = Signal(name="pass_begin"), Signal(name="building")
        self.stream_en, self.moving = Signal(name="stream_en"), Signal(name="stream_moving")
        self._units = None

    def follow(self, builder, stream, rows, words):
        """The units whose progress the states follow: the table build's end, the stream's prime, the row
        steps' and the frame words' stalls."""
        self._units = (builder, stream, rows, words)

    def elaborate(self, platform):
        m = Module()
        ports, run = self._ports, self._ports.run
        m.d.comb += self.stepping_now.eq(self.coset_run & self._chain.step_on)
        m.d.sync += self.stepping.eq(self.stepping_now)
        n1, n2 = (run.log_n + 1) >> 1, run.log_n >> 1
        m.d.comb += self.streams_now.eq(run.coset & (ports.pass2 == run.inverse))
        with m.If(ports.start):
            m.d.sync += [self.coset_q.eq(self.streams_now), self.inv_q.eq(run.inverse), self.table_set.eq(ports.pass2),
                         self.rows_q.eq(run.coset & ~run.inverse & ports.pass2),
                         self.log_n_q.eq(run.log_n), self.coset_run.eq(run.coset),
                         self.batch_q.eq(Mux(run.batch == 0, 1, run.batch)),
                         self.frame.eq(Mux(ports.pass2, n2, n1)),
                         self.offset.eq(Mux(run.inverse, Mux(ports.pass2, n1, 0), Mux(ports.pass2, 0, n2)))]
        self._chains_ok(m)
        self._sequence(m)
        self._table_sets(m)
        _, _, rows, words = self._units
        st = self.states
        m.d.comb += ports.ready.eq(~self.coset_q | (st["STREAM"] & ~rows.stall & words.ok & ~words.stall))
        m.d.comb += self.moving.eq(st["PRIME"] | (st["STREAM"] & ports.en))
        return m

    def _chains_ok(self, m):
        """From the chain job's registered compares of each key with its operand (the 64-bit compares in
        front of the pass's set-up were 8 LUT levels): the run is stable from the start on, so in WAIT they
        are of this pass's shift and step (not in the cycle after a job began: ``fresh``), and registered
        once more, cleared at the start (so WAIT's first decision comes a cycle after the latched fields and
        compares are this pass's: +1 cycle of set-up, ``latency``)."""
        chain = self._chain
        with m.If(self._ports.start):
            m.d.sync += self.chains_ok.eq(0)
        with m.Else():
            m.d.sync += self.chains_ok.eq(~chain.busy & ~chain.fresh & chain.chains[0].ok & chain.same[0]
                                          & (~self.stepping_now | (chain.chains[1].ok & chain.same[1])))

    def _sequence(self, m):
        builder, stream, rows, _ = self._units
        st = self.states
        with st.during(m, "WAIT"):
            with m.If(self.chains_ok):
                with m.If(self.cached & ~self.stepping):
                    st.goto("PRIME")
                with m.Else():
                    st.goto("BUILD")
        with st.during(m, "BUILD"):
            m.d.comb += self.building.eq(1)
            with m.If(builder.done):
                st.goto("PRIME")
        with st.during(m, "PRIME"):
            m.d.comb += self.stream_en.eq(~rows.stall)
            with m.If(~rows.stall & stream.prime_last):
                st.goto("STREAM")
        with st.during(m, "STREAM"):
            m.d.comb += self.stream_en.eq(self._ports.en & ~rows.stall)
            with m.If(self._ports.start & self.streams_now):
                st.goto("WAIT")
        m.d.comb += self.begin.eq(st["WAIT"] & self.chains_ok)

    def _table_sets(self, m):
        """Whether this pass's set holds its tables, registered from the latched fields (the tag compare in
        front of the pass's states was 7 LUT levels): per set, registered (the select and compare in one
        were 5 LUT levels), valid from the second cycle after the latch, when WAIT may first decide. A set's
        tag is written when its last level is done; a new shift drops every set."""
        builder = self._units[0]
        m.d.comb += self.tag.eq(Cat(self.log_n_q, self.inv_q, 1))
        m.d.sync += [hit.eq(t == self.tag) for hit, t in zip(self.hits, self.tags)]
        m.d.comb += self.cached.eq(Mux(self.table_set, self.hits[1], self.hits[0]))
        with m.If(builder.set_done & ~builder.build_step):
            with m.If(self.table_set):
                m.d.sync += self.tags[1].eq(self.tag)
            with m.Else():
                m.d.sync += self.tags[0].eq(self.tag)
        with m.If(self._chain.new_shift):                      # tables of another shift: none is valid
            m.d.sync += [t.eq(0) for t in self.tags] + [h.eq(0) for h in self.hits]
