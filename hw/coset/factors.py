# amaranth: UnusedElaboratable=no
"""``CosetFactors``: the engine's one coset factor generator, composed of its units (hw/coset/__init__.py)."""

from amaranth.hdl import Module, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nantucket.hw.model import coset as coset_model
from nantucket.hw.model.params import BuildParams
from nantucket.hw.run import run_layout
from nantucket.hw.shared import share

from .chain import ChainJob
from .common import CosetBuild
from .control import PassControl
from .rows import RowStepUpdater
from .stream import FactorStream, TableMemories
from .tables import TableBuilder
from .words import FrameWords

# The file's first line: the multipliers built here are emitted once and instantiated (hw/shared.py), so
# those the shared modules stand for are never elaborated, and a generator made for its figures only is
# never elaborated at all; the warning would only be noise.

__all__ = ["CosetFactors"]

class CosetFactors(wiring.Component):
    """The engine's coset factor generator (hw/coset/__init__.py).

    Ports:
      start      pulse: a pass starts (the engine's restart); ``pass2`` and the run's fields are taken
      run        the run (hw.run.run_layout): ``coset`` 1: a coset pass (else ``ready`` stays 1 and the
                 factors are unused); ``inverse`` 0: factors for the lane inputs, 1: the outputs;
                 ``log_n``: N = 2^n; ``coset_shift``: g, stable while a pass runs (any value while
                 idle: the chains follow it)
      pass2      the pass
      en         the lanes' enable: the factor stream advances with it once ready
      ready      1 when no coset pass is starting, or the first factors of the pass are at the output
      o_f0, o_f1 the factors of the pair at the lanes' multipliers on this enabled cycle
      o_k        every lane's frame word
    ``output_offsets[f]``: enabled cycles from a lane's input to its output multipliers at frame size f
    (the lane's published figure), so that inverse factors meet the outputs they belong to.

    Units (each with its figures and ``model()``): ``chain_job`` (ChainJob), ``control`` (PassControl),
    ``builder`` (TableBuilder), ``rows`` (RowStepUpdater), ``stream`` (FactorStream), ``words``
    (FrameWords). Its figures compose theirs: latency, chain_cycles, setup_cycles(f, cached),
    update_cycles(f), ...; model(shift, log_n, pass_index, inverse, cycles) and frame_word_model(...).
    """

    #: Table sets: 0 and 1 the passes' (the shift's, kept while it stays), the step's, two work sets.
    STEP_SET, WORK_SETS = TableMemories.STEP_SET, TableMemories.WORK_SETS
    #: The frame words' operand register in front of their unit (cycles a product takes more).
    WORD_ISSUE = FrameWords.WORD_ISSUE

    def __init__(self, params: BuildParams, output_offsets: dict[int, int], input_offset: int = 1):
        if not isinstance(params, BuildParams):
            raise TypeError(f"params: expected BuildParams, got {type(params).__name__}")
        k = params.log_core
        missing = [f for f in range(2, k + 1) if f not in output_offsets]
        if missing:
            raise ValueError(f"output_offsets: no offset for frame sizes {missing}")
        if not isinstance(input_offset, int) or input_offset < 1:
            raise ValueError(f"input_offset: must be an int >= 1, got {input_offset!r}")
        self._params = params
        self._build = b = CosetBuild(params, output_offsets, input_offset)
        self._field, self._general, self._one = b.field, b.general, b.one
        super().__init__({
            "start": In(1), "pass2": In(1), "run": In(run_layout(params)), "en": In(1),
            "ready": Out(1), "o_f0": Out(b.width), "o_f1": Out(b.width),
            "o_k": Out(unsigned(b.width)).array(params.lanes),
        })
        # the four multiply/reduce units: LO's and HI's (the build, then the stream), the chain job's (and
        # the element update's), the frame words'
        self._mul_units = [b.general.unit() for _ in range(4)]
        unit_lo, unit_hi, unit_chain, unit_words = self._mul_units
        self.chain_job = ChainJob(b, self.run, unit_chain)
        self.control = PassControl(b, self, self.chain_job)
        self.builder = TableBuilder(b, self.control, self.chain_job)
        self.memories = TableMemories(b)
        self.rows = RowStepUpdater(b, self, self.control, self.builder, self.memories, unit_chain)
        self.stream = FactorStream(b, self.control, self.builder, self.rows, self.memories, unit_lo, unit_hi)
        self.words = FrameWords(b, self, self.control, self.chain_job, unit_words)
        self.control.follow(self.builder, self.stream, self.rows, self.words)

    def elaborate(self, platform):
        m = Module()
        unit_lo, unit_hi, unit_chain, _ = self._mul_units
        for name, u in zip(("unit_lo", "unit_hi", "unit_chain", "unit_words"), self._mul_units):
            m.submodules[name] = share(u)
        m.submodules.chain_job, m.submodules.control = self.chain_job, self.control
        m.submodules.builder, m.submodules.rows = self.builder, self.rows
        m.submodules.stream, m.submodules.words = self.stream, self.words
        # the chain unit's operands: an AND-OR of its users' terms, which never overlap (the chain job and
        # the element update: the update runs in a stepping pass, whose chains are there; a priority mux
        # of the three was 5 LUT levels from the job's flags in the 31-bit fields)
        chain, rows = self.chain_job, self.rows
        m.d.comb += [unit_chain.i_valid.eq(chain.op_valid | rows.op_valid),
                     unit_chain.i_a.eq(chain.op_a | rows.op_a), unit_chain.i_b.eq(chain.op_b | rows.op_b)]
        m.d.comb += [self.o_f0.eq(unit_lo.o_p), self.o_f1.eq(unit_hi.o_p)]
        return m

    # -- figures, composed from the units' -------------------------------------------------------------

    @property
    def ROUND(self) -> int:
        """Cycles of a chain round: issue the square and the product, take both."""
        return self.chain_job.round_cycles

    @property
    def encodes(self) -> bool:
        return self._build.encodes

    @property
    def exponent_rounds(self) -> int:
        return self.chain_job.exponent_rounds

    @property
    def latency(self) -> int:
        """Enabled cycles from a stream position to its factors: the stream's."""
        return self.stream.latency

    @property
    def mul_units(self) -> int:
        return len(self._mul_units)

    @property
    def dsp_tiles(self) -> int:
        return self.mul_units * self._general.dsp_tiles

    def offset(self, log_frame: int, inverse: bool) -> int:
        return self._build.offset(log_frame, inverse)

    def word_lead(self, log_frame: int, inverse: bool) -> int:
        return self.words.lead(log_frame, inverse)

    @property
    def word_levels(self) -> int:
        return self.words.levels

    def frame_word_setup_cycles(self, stepping: bool = False, cached: bool = False) -> int:
        return self.words.setup_cycles(stepping, cached)

    def frame_word_job_cycles(self, element_start: bool = False, stepping: bool = False) -> int:
        return self.words.job_cycles(element_start, stepping)

    @property
    def chain_cycles(self) -> int:
        """Cycles of the background job for a new shift (ChainJob.cycles)."""
        return self.chain_job.cycles

    def level_cycles(self, level: int, last: bool) -> int:
        return self.builder.level_cycles(level, last)

    def build_cycles(self, log_frame: int) -> int:
        return self.builder.build_cycles(log_frame)

    def setup_cycles(self, log_frame: int, cached: bool = False, stepping: bool = False,
                     words_cached: bool | None = None) -> int:
        """With the chains already computed for the shift, ``ready`` is 1 from this many cycles after the
        cycle of a streaming pass's ``start`` on: the later of the stream (the pass control's latch and
        checks, the tables: none when ``cached``, this pass's set built for the same shift, direction and
        n; with a row step also the step's set; priming the stream) and the frame words
        (``frame_word_setup_cycles``; ``words_cached``, default ``cached``: the last streaming pass had the
        same shift, direction and n)."""
        tables = (0 if cached else self.build_cycles(log_frame)) + (self.build_cycles(log_frame) if stepping else 0)
        words_cached = cached if words_cached is None else words_cached
        return max(PassControl.latency + tables + self.stream.latency, self.words.setup_cycles(stepping, words_cached))

    def update_cycles(self, log_frame: int) -> int:
        return self.rows.update_cycles(log_frame)

    def new_word_cycles(self, log_frame: int) -> int:
        """At most how many cycles a coset call whose shift or row step is new spends beyond the same call
        on a kept shift: the chain job, the shift's two passes' table sets and a stepping call's two step
        sets (element stalls not included: ``step_stall_cycles``)."""
        return self.chain_cycles + 2 * self.build_cycles(log_frame)

    def step_stall_cycles(self, log_frame: int, log_n: int) -> int:
        return self.rows.step_stall_cycles(log_frame, log_n)

    def frame_word_stall_cycles(self, log_n: int, pass_index: int, inverse: bool, batch: int = 1,
                                cached: bool = False, first: int | None = None) -> int:
        """Cycles ``ready`` is low in a streaming pass without a row step and with no other stalls, after
        it first rose: a swap (the round's first pair at the multipliers, one enabled cycle ahead) waits
        for the job computing its words, which starts at the previous swap (the first one where round 0's
        words are out) and takes ``frame_word_job_cycles``: rounds of 2^(f-1) cycles shorter than a job.
        ``first``: the pass's first enabled cycle, in cycles from start (default: when ``ready`` rises)."""
        if not coset_model.streams(pass_index, inverse):
            return 0
        f = coset_model.pass_frame(log_n, pass_index)
        period = 1 << (f - 1)
        per = (1 << (log_n - f)) // self._params.lanes          # rounds an element
        ready = self.setup_cycles(f, cached) if first is None else first     # cycles from start, as below
        swap = ready + self.offset(f, inverse) - 1 + period - 1  # round 1's, with no stall
        done = self.frame_word_setup_cycles(cached=cached) - 1 + self.frame_word_job_cycles(per == 1)
        total = 0
        for g in range(1, max(batch, 1) * per):
            actual = max(swap, done)
            total += actual - swap
            done = actual + self.frame_word_job_cycles((g + 1) % per == 0)
            swap = actual + period
        return total

    # -- models ----------------------------------------------------------------------------------------

    def model(self, shift: int, log_n: int, pass_index: int, inverse: bool, cycles: int, *,
              row_step: int = 0, batch: int = 1) -> list[tuple[int, int]]:
        """Bit-exact reference: the factor pairs ``o_f0``, ``o_f1`` on the first ``cycles`` enabled cycles
        from ``ready`` on (hw.model.coset.factor_stream, started where the lanes' multipliers are), as the
        multiplier's words (``encode``: the values themselves in Goldilocks). With ``row_step`` s > 1 the
        cycles of element r (every ``element_cycles``, inverse: from the lanes' output offset on; the last
        element's stream after it) carry the stream of g s^r."""
        f = coset_model.pass_frame(log_n, pass_index)
        offset = self.offset(f, inverse)
        each = coset_model.element_cycles(self._params, log_n)
        elements = max(batch, 1) if row_step > 1 else 1
        streams = [coset_model.factor_stream(coset_model.element_shift(shift, row_step, e, self._field), log_n,
                                             pass_index, inverse, self._field) for e in range(elements)]
        period = streams[0].shape[0]
        first = (-offset) % period
        word = self._general.encode
        out = []
        for t in range(cycles):
            e = min(elements - 1, max(0, t - offset) // each)
            pair = streams[e][(first + t) % period]
            out.append((word(int(pair[0])), word(int(pair[1]))))
        return out

    def frame_word_model(self, shift: int, log_n: int, pass_index: int, inverse: bool, cycles: int, *,
                         row_step: int = 0, batch: int = 1) -> list[tuple[int, ...]]:
        """Bit-exact reference: ``o_k`` on the first ``cycles`` enabled cycles of a coset pass
        (FrameWords.model)."""
        return self.words.model(shift, log_n, pass_index, inverse, cycles, row_step=row_step, batch=batch)
