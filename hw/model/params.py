"""Build parameters: the one frozen dataclass shared by gateware, benches, host and build scripts."""

from dataclasses import dataclass, asdict, fields

from .field import DEFAULT_FIELD, Field, get as get_field

__all__ = ["BuildParams", "DEFAULT"]

_LANES = (1, 2, 4, 8, 16, 32)
_CHANNELS = (2, 4, 8, 16, 32)
#: Lanes of a field's default build, by point width: the 32 HBM channels carry twice as many 32-bit points
#: as 64-bit ones at the same clocks, so a 31-bit field's default build runs twice the lanes.
_DEFAULT_LANES = {64: 16, 32: 32}
#: The default clocks, in MHz, and where each figure comes from (``BuildParams.clock_note`` prints them with
#: every projected time). The NTT clock is the one every ntt-domain block (butterfly, lane, twiddle generator,
#: the DMA's engine side) fits by the open-flow timing estimate (scripts/timing_estimate.py; the tables and
#: their commands in docs/performance.md, "Timing estimate"; docs/build.md, "The clock the projections
#: assume"): every ntt-domain row of the Goldilocks table is at most 4 LUT levels, 2,150 ps, within the 2,222
#: ps of 450 MHz (the lane, the coset generator and the DMA at small builds' stand-in parameters, where Yosys
#: cannot finish the default build's), and so is every row of the BabyBear table (the 31-bit builds'). The
#: DMA clock is the HBM pseudo-channels' AXI port limit, which the link asks for (the estimate's dma-domain
#: rows: docs/build.md).
DEFAULT_NTT_MHZ = 450.0
DEFAULT_DMA_MHZ = 450.0
CLOCK_SOURCES = {"ntt": "the clock the open-flow timing estimate supports for every ntt-domain block, "
                        "docs/build.md",
                 "dma": "the HBM ports' limit"}


@dataclass(frozen=True)
class BuildParams:
    """What a nantucket build is made of.

    lanes:     L, parallel 2^k-point pipelines (the reference's "chains"); 2L points per NTT cycle.
    log_core:  k, log2 of the points one lane transforms at a time (2..12); N = 2^(2k) natively.
    channels:  C, HBM pseudo-channels (AXI4 masters); half are read and half written in each pass.
    dma_mhz / ntt_mhz: the two kernel clocks, in MHz: "dma" (ap_clk: control, DMA, the HBM AXI ports; 450,
               the HBM ports' limit) and "ntt" (ap_clk_2: the engine; DEFAULT_NTT_MHZ, the clock every
               ntt-domain block fits by the open-flow timing estimate). Every consumer reads them: the Vitis
               link's kernel frequency, the clock-crossing constraints, the simulated clocks and the HBM
               model's cycle counts, the open-flow timing estimate's periods and every projected time.
    field:     the prime field and root chain, by name (hw.model.field.FIELDS; default "goldilocks").
    commit:    the operations the build carries beyond the NTT: the commitment schemes of its on-card
               commitment engine, by their scheme strings (hw.model.commit.SCHEMES; one string is taken as
               a tuple of one; each over the build's prime field; empty by default: the NTT alone). The
               identification word COMMIT (hw.model.regmap) and :meth:`tag` carry them.
    """

    lanes: int = _DEFAULT_LANES[64]
    log_core: int = 12
    channels: int = 32
    dma_mhz: float = DEFAULT_DMA_MHZ
    ntt_mhz: float = DEFAULT_NTT_MHZ
    field: str = DEFAULT_FIELD.name
    commit: tuple = ()

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in (int, "int") and (not isinstance(v, int) or isinstance(v, bool)):
                raise TypeError(f"{f.name}: expected an int, got {type(v).__name__}")
            if f.type in (float, "float") and not isinstance(v, (int, float)):
                raise TypeError(f"{f.name}: expected a number, got {type(v).__name__}")
        if self.lanes not in _LANES:
            raise ValueError(f"lanes: must be one of {_LANES}, got {self.lanes}")
        if not 2 <= self.log_core <= 12:
            raise ValueError(f"log_core: must be in 2..12, got {self.log_core}")
        if self.channels not in _CHANNELS:
            raise ValueError(f"channels: must be one of {_CHANNELS}, got {self.channels}")
        if self.lanes > (1 << self.log_core):
            raise ValueError(f"lanes: {self.lanes} lanes exceed the {1 << self.log_core} columns of a "
                             f"2^{self.log_core} core")
        if isinstance(self.field, Field):
            object.__setattr__(self, "field", self.field.name)
        get_field(self.field)                 # a TypeError or ValueError naming the presets
        if 2 * self.log_core > self.prime_field.two_adicity:
            raise ValueError(f"log_core: 2^{2 * self.log_core} points exceed {self.field}'s largest transform "
                             f"(2^{self.prime_field.two_adicity})")
        for name in ("dma_mhz", "ntt_mhz"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name}: must be positive, got {getattr(self, name)}")
        object.__setattr__(self, "commit", _commit_schemes(self.commit, self.prime_field))

    @property
    def prime_field(self) -> Field:
        """The :class:`~nantucket.hw.model.field.Field` this build computes in."""
        return get_field(self.field)

    def clock_mhz(self, domain: str) -> float:
        """The clock of a kernel domain: "dma" (control, DMA, HBM ports: ap_clk) or "ntt" (the engine)."""
        if domain not in ("dma", "ntt"):
            raise ValueError(f"domain: expected 'dma' or 'ntt', got {domain!r}")
        return self.dma_mhz if domain == "dma" else self.ntt_mhz

    def clock_note(self) -> str:
        """Both clocks and where each comes from, for a report's projected time: "<ntt_mhz> MHz NTT (the
        clock the open-flow timing estimate supports for every ntt-domain block, ...) / <dma_mhz> MHz DMA
        (the HBM ports' limit)", the sources from CLOCK_SOURCES; a clock other than the default is "set for
        this build"."""
        def one(domain: str, default: float) -> str:
            mhz = self.clock_mhz(domain)
            return (f"{mhz:g} MHz {domain.upper()} "
                    f"({CLOCK_SOURCES[domain] if mhz == default else 'set for this build'})")
        return f"{one('ntt', DEFAULT_NTT_MHZ)} / {one('dma', DEFAULT_DMA_MHZ)}"

    def period_ps(self, domain: str) -> int:
        """The clock period of a domain in whole picoseconds (timing estimates, constraints)."""
        return round(1e6 / self.clock_mhz(domain))

    def sim_period_ps(self, domain: str) -> int:
        """The period a simulation clocks a domain with: the nearest even number of picoseconds (the
        simulators' clocks need a whole half period)."""
        return 2 * round(5e5 / self.clock_mhz(domain))

    @property
    def core_points(self) -> int:
        """Points per lane transform, 2^k."""
        return 1 << self.log_core

    @property
    def log_n(self) -> int:
        """log2 of the native transform size, 2k."""
        return 2 * self.log_core

    @property
    def n_points(self) -> int:
        """The largest transform, N = 2^(2k): what buffers sized for any run of this build hold."""
        return 1 << self.log_n

    # -- run-time sizes ------------------------------------------------------------------------------
    # A run of size N = 2^n splits n = n1 + n2 with n1 = ceil(n/2) (pass 1 transforms columns of 2^n1
    # points) and n2 = floor(n/2) (pass 2 transforms rows of 2^n2 points); the lanes switch their frame
    # size between the passes. The DMA moves units of L points of one matrix row and needs every buffer
    # to have at least C/2 rows per column block, hence the smallest native size.

    @property
    def min_log_n(self) -> int:
        """Smallest n the kernel transforms natively: both passes need 2^n2 >= max(4, L, C/2)."""
        return min(self.log_n, 2 * max(2, (self.lanes - 1).bit_length(), (self.channels // 2 - 1).bit_length()))

    @property
    def max_log_n(self) -> int:
        """Largest n the kernel transforms, 2k."""
        return self.log_n

    def check_log_n(self, log_n) -> int:
        """log_n itself if this build transforms 2^log_n points natively, else ValueError naming it."""
        if not isinstance(log_n, int) or isinstance(log_n, bool):
            raise TypeError(f"log_n: expected an int, got {type(log_n).__name__}")
        if not self.min_log_n <= log_n <= self.max_log_n:
            raise ValueError(f"log_n: the {self.tag()} build transforms 2^{self.min_log_n} .. 2^{self.max_log_n} "
                             f"points natively, got log_n = {log_n}")
        return log_n

    def pass_log_sizes(self, log_n: int | None = None) -> tuple[int, int]:
        """(n1, n2): log2 of the pass-1 transform size (ceil(n/2)) and of the pass-2 one (floor(n/2))."""
        n = self.log_n if log_n is None else self.check_log_n(log_n)
        return (n + 1) // 2, n // 2

    def ideal_cycles(self, log_n: int | None = None) -> int:
        """Ideal NTT cycles for a whole transform of 2^log_n points: two passes of N / 2L."""
        n = self.log_n if log_n is None else self.check_log_n(log_n)
        return 2 * (1 << n) // self.points_per_cycle

    @property
    def points_per_cycle(self) -> int:
        """Points the engine consumes (and produces) per NTT cycle: two per lane."""
        return 2 * self.lanes

    @property
    def cycles_per_pass(self) -> int:
        """Ideal NTT cycles for one pass over N points."""
        return self.n_points // self.points_per_cycle

    @classmethod
    def default_for(cls, field=DEFAULT_FIELD.name, **given) -> "BuildParams":
        """The default build of ``field`` (a name or Field), with the fields in ``given`` replaced: k = 12,
        32 channels, and the lanes the HBM bandwidth feeds: 16 of 64-bit Goldilocks points
        (L16_k12_C32, :data:`DEFAULT`), 32 of a 31-bit field's (L32_k12_C32_babybear)."""
        name = get_field(field, "field").name
        lanes = _DEFAULT_LANES[get_field(name).point_bits]
        return cls(**({"lanes": lanes, "field": name} | given))

    @classmethod
    def smallest_for(cls, n_points: int, *, check=None, **given) -> "BuildParams":
        """The build with the smallest core that transforms n_points (up to 2^24).

        Fields in ``given`` are kept as they are; channels default to 4 and lanes to the fewest of 4, 8
        that ``check`` accepts (the HBM kernel takes 4 Goldilocks lanes, a 31-bit field's 8: a unit fills
        whole beats); log_core, unless given, is the smallest k >= 2 with 2^(2k) >= n_points for which the
        parameters are valid and ``check(params)`` (e.g. the kernel's HbmLayout) raises no ValueError.
        Raises ValueError saying what cannot be met.
        """
        if not isinstance(n_points, int) or isinstance(n_points, bool):
            raise TypeError(f"n_points: expected an int, got {type(n_points).__name__}")
        if n_points < 1:
            raise ValueError(f"n_points: must be >= 1, got {n_points}")
        fixed = {"channels": 4} | given
        lane_counts = [given["lanes"]] if "lanes" in given else [4, 8]
        if "log_core" in given:
            cores = [given["log_core"]]
        else:
            k_min = max(2, -(-(n_points - 1).bit_length() // 2))       # ceil(ceil(log2 n) / 2)
            if k_min > 12:
                raise ValueError(f"{n_points} points: the largest build (k = 12) transforms at most "
                                 f"2^24 points")
            cores = range(k_min, 13)
        error = None
        for k, lanes in ((k, lanes) for k in cores for lanes in lane_counts):
            try:
                params = cls(**(fixed | {"log_core": k, "lanes": lanes}))
                if check is not None:
                    check(params)
            except ValueError as e:     # the options need a larger core or more lanes (or can never work)
                error = e
                continue
            if params.n_points < n_points:
                raise ValueError(f"{n_points} points: the {params.tag()} build transforms at most "
                                 f"2^{params.log_n} points")
            return params
        raise error

    def as_dict(self) -> dict:
        """The fields by name (``commit`` only when the build carries schemes, so the digests of the
        builds without them stay what they were)."""
        out = asdict(self)
        if not self.commit:
            del out["commit"]
        return out

    def tag(self) -> str:
        """A short name for build directories: L16_k12_C32, with the field's name after it when it is not
        the default one (L16_k12_C32_babybear)."""
        tag = f"L{self.lanes}_k{self.log_core}_C{self.channels}"
        tag = tag if self.field == DEFAULT_FIELD.name else f"{tag}_{self.field}"
        return tag if not self.commit else f"{tag}_{'+'.join(self.commit)}"


def _commit_schemes(commit, field: Field) -> tuple:
    """BuildParams.commit as a tuple of distinct scheme names over ``field``, in the order given (a
    TypeError or ValueError naming the scheme otherwise)."""
    if isinstance(commit, str):
        commit = (commit,)
    if not isinstance(commit, (tuple, list)):
        raise TypeError(f"commit: expected a scheme name or a tuple of them, got {type(commit).__name__}")
    if not commit:
        return ()
    from .commit.schemes import scheme            # the hash constants load only for a build that commits
    out = []
    for name in commit:
        s = scheme(name)
        if get_field(s.field).p != field.p:
            raise ValueError(f"commit: {s.name} hashes {s.field} values; this build computes in {field.name}")
        if s.name in out:
            raise ValueError(f"commit: {s.name} named twice")
        out.append(s.name)
    return tuple(out)


DEFAULT = BuildParams()
