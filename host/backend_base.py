"""The device interface every backend implements, and the golden-model backend.

A backend owns its device memory: ``run(points, inverse, coset=None, order="nn")`` moves the points in
(1-D, or a (B, N) batch of rows), runs the transform (inverse with 1/N, coset shift g, input and output
orders "nn" / "nr" / "rn" / "rr"), moves the result out and returns it. On a card (sim, xrt) ``run`` is a
thin layer over the one card path, :meth:`Backend.execute`: ``execute(run, buffers)`` starts the kernel
once with a :class:`hw.model.run.Run` of any operation (hw.model.ops) on the HBM buffers it names, waits
and returns the kernel's status record; ``run`` builds the NTT's runs (``Run.ntt``, through
host/kernel_plan.py) and moves the points around them. A new operation is then a Run and a model, not a
method on every backend. The model backend has no kernel: it keeps its whole-array ``run`` (no build
limit) and refuses ``execute`` (:class:`NoKernel`). ``timings`` holds the seconds each phase took in the last run
(``to-device``, ``kernel``, ``from-device``), ``report`` any further lines a device has to say
(kernel cycles, projected time, the size the kernel ran, ...) and ``kernel_log_n`` log2 of the size its
kernel transformed in the last run (None for a device without a kernel, such as the model), and
``steps`` one :func:`step_record` per step of the last call (one for a transform; an LDE's inverse,
zero-extension and coset forward), which the run report lists. The registry of backends by name is
host/backends.py.

A backend that can keep arrays on its card between transforms declares :class:`ResidentArrays`; the
driver it hands out for them declares :class:`CardDriver` (host/api/device.py checks both with
isinstance).

Every backend computes in one prime field, its ``field`` (a :class:`hw.model.field.Field`; default
Goldilocks): the model in any preset its ``field`` keyword names, a card (sim, xrt) in its build's
(``params.field``), refusing any other with :func:`check_build_field`. Points go in and come out of
``run`` as uint64 arrays whatever the field.
"""

import abc
import difflib
import functools
import inspect
import time

import numpy as np

from nantucket.hw.model import field as F
from nantucket.hw.model import ntt as ntt_model
from nantucket.hw.model.params import BuildParams

__all__ = ["Backend", "DeviceError", "NoKernel", "step_record", "STEP_KEYS", "fill_step_cycles", "flat_steps", "ModelBackend", "ResidentArrays", "CardDriver", "keyword_names",
           "unknown_keyword_error", "keywords_checked", "check_params", "check_build_field"]


class DeviceError(RuntimeError):
    """A device failed to run a transform (the message says which device and why)."""


class NoKernel(DeviceError):
    """:meth:`Backend.execute` on a backend without a kernel (the model): it computes whole arrays."""


def keyword_names(func) -> tuple[str, ...] | None:
    """The keywords ``func`` (a function or a class) accepts, in signature order; None when it takes any
    (``**kwargs``)."""
    names = []
    for p in inspect.signature(func).parameters.values():
        if p.kind is p.VAR_KEYWORD:
            return None
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self":
            names.append(p.name)
    return tuple(names)


def unknown_keyword_error(what: str, unknown, valid) -> TypeError:
    """The TypeError for keywords ``what`` does not take: names them, the valid ones, and the closest
    valid name of a typo (a misspelt option must never be dropped silently)."""
    unknown = list(unknown)
    names = ", ".join(repr(k) for k in unknown)
    hint = ""
    close = difflib.get_close_matches(str(unknown[0]), list(valid), n=1)
    if close:
        hint = f"; did you mean {close[0]!r}?"
    return TypeError(f"{what}: unknown keyword{'s' if len(unknown) > 1 else ''} {names} "
                     f"(valid: {', '.join(valid) or 'none'}){hint}")


def keywords_checked(label=None):
    """Decorator: a call with a keyword the function does not take raises :func:`unknown_keyword_error`
    (Python's own message names no valid keyword). ``label`` names the callable in the message (default its
    qualified name); a callable ``label`` is given the call's first argument (a method's object) and
    returns the name (a method declared once for several classes, each naming itself)."""
    def wrap(func):
        valid = keyword_names(func)
        accepted = frozenset(valid)
        what = None if callable(label) else (label or func.__qualname__.replace(".__init__", ""))

        @functools.wraps(func)
        def checked(*args, **kwargs):
            if not accepted.issuperset(kwargs):
                raise unknown_keyword_error(what or label(args[0]), [k for k in kwargs if k not in accepted], valid)
            return func(*args, **kwargs)
        return checked
    return wrap


def check_params(params) -> BuildParams | None:
    """``params`` of a backend: a BuildParams or None (TypeError naming it otherwise)."""
    if params is not None and not isinstance(params, BuildParams):
        raise TypeError(f"params: expected BuildParams or None, got {type(params).__name__} {params!r:.60}")
    return params


def check_build_field(field, params: BuildParams | None, device: str) -> F.Field:
    """``field`` (a name or Field) for a card whose build is ``params`` (None: the default build,
    Goldilocks): the Field when the build computes in it, else a one-line ValueError naming both, raised
    before the card is touched. ``device`` names the card in the message ("the sim card")."""
    field = F.get(field, "field")
    built = params.prime_field if params is not None else F.DEFAULT_FIELD
    if built is not field:
        raise ValueError(f"field: {device}'s build computes in {built.name}, not {field.name}")
    return field


#: The fields of a step record, in the order the report shows them.
STEP_KEYS = ("step", "log_n", "rows", "where", "kernel_calls", "cycles", "projected_s", "cpu_s", "seconds",
             "host_work", "parts")


def step_record(step: str, log_n: int, *, where: str = "host", kernel_calls: int = 0, cycles: int | None = None,
                projected_s: float | None = None, cpu_s: float | None = None, host_work: str = "none",
                rows: int | None = None, seconds: float | None = None, parts: list | None = None) -> dict:
    """One step of a call as the report lists it (a JSON-ready dict): ``step`` its name ("transform";
    an LDE's "inverse", "zero-extension", "coset forward"; a transform past one kernel call's "columns",
    "twiddles", "rows", host/large.py), ``log_n`` the size it works on (each transform's), ``rows`` how many
    transforms of that size (None where the caller does not say), ``where`` it ran ("card", "host", or
    "card and host"), ``kernel_calls``, the kernel's NTT ``cycles`` over them (None where no device counts
    them), ``projected_s`` those cycles at the build's NTT clock, ``cpu_s`` the host CPU time of a step
    computed on the host (the model), ``seconds`` the host's wall time of the step, its kernel calls
    included (None where not timed), ``host_work`` what the host computed for it beyond the layout step
    ("none" when nothing), ``parts`` the steps of a composite step (a step that itself ran as a four-step
    over kernel calls: their kernel calls and cycles add up to the step's), else None."""
    return {"step": step, "log_n": int(log_n), "rows": None if rows is None else int(rows), "where": where,
            "kernel_calls": int(kernel_calls), "cycles": cycles, "projected_s": projected_s, "cpu_s": cpu_s,
            "seconds": seconds, "host_work": host_work, "parts": parts}


def fill_step_cycles(steps: list[dict], cycles: list, ntt_mhz: float) -> list:
    """Give ``steps`` (whose kernel calls are, in order, the calls whose NTT cycles ``cycles`` lists) their
    ``cycles`` and ``projected_s`` (at ``ntt_mhz``) where every call of a step was counted, a composite
    step's from its ``parts``; returns the cycles left over (none when the steps made exactly those calls)."""
    rest = list(cycles)
    for st in steps:
        if st.get("parts"):
            rest = fill_step_cycles(st["parts"], rest, ntt_mhz)
            got = [p.get("cycles") for p in st["parts"] if p["kernel_calls"]]
        else:
            got, rest = rest[:st["kernel_calls"]], rest[st["kernel_calls"]:]
        if st["kernel_calls"] and len(got) and all(c is not None for c in got):
            st["cycles"] = int(sum(got))
            st["projected_s"] = st["cycles"] / (ntt_mhz * 1e6)
    return rest


def flat_steps(steps: list[dict]) -> list[dict]:
    """The leaves of ``steps`` in order (a composite step replaced by its parts, recursively): the steps
    that each made their own kernel calls."""
    out = []
    for st in steps:
        out += flat_steps(st["parts"]) if st.get("parts") else [st]
    return out


class Backend:
    """Base class: a device that can transform a vector of points."""

    name = "abstract"
    #: the field the device computes in (a backend computing in another sets its own)
    field: F.Field = F.DEFAULT_FIELD

    def __init__(self):
        self.timings: dict[str, float] = {}
        self.report: dict[str, str] = {}
        self.kernel_log_n: int | None = None
        #: the steps of the last call (step_record each), for the run report
        self.steps: list[dict] = []
        #: bytes run() moved between host memory and the device beyond the one round trip of the points
        #: its caller gave (a transform past one kernel call moves them to the card and back once per
        #: kernel step), counted as the link moves them (the field's word a point, 4 bytes in a 31-bit
        #: field) like the API's ``Device.transfers``, over the backend's life: what a projection of the
        #: link's time adds to the caller's count
        self.extra_transfers = {"to-device": 0, "from-device": 0}
        #: the step records of the last few composite runs (transforms past one kernel call, host/large.py),
        #: each with the range of kernel calls it made: (first call, end), for :meth:`parts_of`
        self._composites: list[tuple[int, int, list[dict]]] = []

    def supports(self, n_points: int) -> str | None:
        """None when n_points can be transformed, else a one-line reason."""
        return None

    def run(self, points: np.ndarray, inverse: bool = False, *, coset: int | None = None,
            order: str = "nn") -> np.ndarray:
        """The transform of every row of ``points`` (1-D: one transform; 2-D: a batch), as a new array of
        the same shape. See :func:`hw.model.ntt.transform` for the definitions. On a card: the
        :class:`hw.model.run.Run` of each kernel call (``Run.ntt``), each given to :meth:`execute`."""
        raise NotImplementedError

    def execute(self, run, buffers):
        """The card path: start the kernel once with ``run`` (a :class:`hw.model.run.Run` of any operation
        the build carries) on ``buffers`` (the HBM buffers the run names: a set of this backend's
        :class:`CardDriver`, ``allocate``), wait for it and return its status record
        (:class:`hw.model.record.StatusRecord`). A start the build refuses (an op it does not carry:
        STATUS.bad_op, a size, ...) is the card's named error before anything is sent. A backend without
        a kernel raises :class:`NoKernel`."""
        raise NoKernel(f"{self.name}: no kernel to start a run on (this backend computes whole arrays: run())")

    def note_resident(self, n: int, rows: int, calls: int, inverse: bool, coset, order: str) -> None:
        """A transform ran on device-resident data (host/api/resident.py) in ``calls`` kernel calls:
        a backend with a report updates it, as :meth:`run` would."""

    def calls_made(self) -> int:
        """How many kernel calls this backend has made so far (0 for a device without a kernel)."""
        return 0

    def call_cycles(self, calls: int) -> list[int | None]:
        """The kernel's NTT cycles of each of the last ``calls`` kernel calls (None where nothing counts
        them: a card reports its own measured counts instead)."""
        return [None] * calls

    def note_composite(self, first: int, end: int, steps: list[dict]) -> None:
        """A run past one kernel call made kernel calls ``first`` .. ``end`` - 1 (in :meth:`calls_made`'s
        count) in ``steps`` (its step records): kept a while, so that the step of a composite call that ran
        it (an LDE's inverse or coset forward) gets them as its ``parts``."""
        self._composites = (self._composites + [(first, end, steps)])[-8:]

    def parts_of(self, first: int, end: int) -> list[dict] | None:
        """The step records of the runs past one kernel call noted (:meth:`note_composite`) between kernel
        calls ``first`` and ``end``, when they made every call of that range, else None."""
        parts = [st for f, e, steps in self._composites if first <= f and e <= end for st in steps]
        if not parts or sum(st["kernel_calls"] for st in parts) != end - first:
            return None
        return parts

    def _attach_parts(self, steps: list[dict]) -> None:
        """A step of ``steps`` (the last kernel calls made, in order) that ran as a four-step over kernel
        calls gets that run's steps as its ``parts`` (host/large.py), the cycles they counted, and the
        host work they did."""
        first = self.calls_made() - sum(st["kernel_calls"] for st in steps)
        for st in steps:
            calls = st["kernel_calls"]
            parts = self.parts_of(first, first + calls) if calls and not st.get("parts") else None
            first += calls
            if parts is None:
                continue
            st["parts"] = parts
            got = [p.get("cycles") for p in parts if p["kernel_calls"]]
            if st.get("cycles") is None and got and all(c is not None for c in got):
                st["cycles"] = sum(got)
                st["projected_s"] = sum(p["projected_s"] for p in parts if p["kernel_calls"])
            work = [f"{p['step']}: {p['host_work']}" for p in parts if not p["host_work"].startswith("none")]
            if work and st["host_work"].startswith("none"):
                st["host_work"] = "as a four-step over kernel calls (" + "; ".join(work) + ")"
                st["where"] = "card and host"

    def note_steps(self, steps: list[dict]) -> None:
        """The steps of a composite call (an LDE) that ran through this backend (host/api/device.py): kept
        in ``steps`` (a step that ran as a four-step over kernel calls with that run's steps as its
        ``parts``); a backend with a report sums them up there: its "Kernel calls" and, where the host
        computed something, its "Host work" say it step by step."""
        self._attach_parts(steps)
        self.steps = list(steps)
        calls = sum(st["kernel_calls"] for st in steps)
        self.report["Kernel calls"] = self.report.get("Kernel calls") if self.report.get("Kernel calls", "").startswith(
            f"{calls} calls:") else (f"{calls} call{'s' if calls != 1 else ''}: " + ", ".join(
                f"{st['step']} {st['kernel_calls']}" for st in steps))
        work = [f"{st['step']}: {st['host_work']}" for st in steps if not st["host_work"].startswith("none")]
        if work:
            self.report["Host work"] = "; ".join(work)

    def locate(self, index: int) -> str | None:
        """Where output point ``index`` of the last run lived in device memory, as a short text such as
        ``"HBM channel 3, byte 0x1a40"``, or None when the device has no such notion (the model)."""
        return None

    def close(self) -> None:
        pass


class ResidentArrays(abc.ABC):
    """A backend whose arrays of some sizes may live in its card's memory between transforms
    (host/api/resident.py)."""

    @abc.abstractmethod
    def driver_for(self, n_points: int) -> "CardDriver | None":
        """The driver that holds arrays of ``n_points`` per row on the card, or None: such arrays stay
        in host memory and each transform is one :meth:`Backend.run`."""

    def call_driver(self, n_points: int) -> "CardDriver | None":
        """The driver for the kernel runs of one call of ``n_points`` per row whose buffers are released
        (or handed to a resident array by :meth:`driver_for`) before the call returns, such as an LDE
        chained on the card: by default :meth:`driver_for`'s. A backend whose arrays stay staged may
        still run such a call on its card (the sim backend)."""
        return self.driver_for(n_points)


class CardDriver(abc.ABC):
    """What host/api/resident.py holds arrays on a card with: buffer sets (``allocate``), moving rows in
    and out of them (``upload``, ``upload_padded``, ``download``) and kernel runs on them in place
    (``execute``, one :class:`hw.model.run.Run` of any operation; ``execute_run``, the same without the
    record). Attributes: ``kernel_computes`` (the transforms
    the kernel computes itself) and ``rmap`` (its :class:`hw.model.regmap.RegisterMap`)."""

    kernel_computes: frozenset
    rmap: object

    @abc.abstractmethod
    def batch_limit(self, log_n: int) -> int:
        """The most transforms of 2^log_n points one kernel run takes."""

    @abc.abstractmethod
    def layout_for(self, log_n: int):
        """The HBM placement (hw.model.layout.HbmLayout) of a run of 2^log_n points."""

    @abc.abstractmethod
    def allocate(self, layout, batch: int = 1):
        """A new buffer set for ``batch`` transforms of ``layout``'s size."""

    @abc.abstractmethod
    def upload(self, bufs, rows: np.ndarray, *, reverse: bool = False, buffer: str = "input",
               sink=None) -> int:
        """Place (B, N) rows into ``bufs`` as ``buffer`` of an N-point run; returns the bytes moved."""

    @abc.abstractmethod
    def upload_padded(self, bufs, rows: np.ndarray, *, sink=None) -> int:
        """Place (B, M) rows as the zero-extended input of a run of ``bufs``' size; returns the bytes moved."""

    @abc.abstractmethod
    def download(self, bufs, batch: int, *, reverse: bool = False, buffer: str = "output", sink=None,
                 log_n: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """The first ``batch`` rows of ``buffer`` in ``bufs``, as a new (batch, N) host array (or written
        into ``out``, any strided array of batch x N points, and returned)."""

    def download_regions(self, bufs, regions, *, reverse: bool = False, buffer: str = "output") -> np.ndarray:
        """The rows ``regions`` (indices into the set's batch, any order, repeats allowed) of ``buffer`` in
        ``bufs`` as a new (len(regions), N) host array, moving only those rows where the driver can (by
        default: the whole batch, then picked)."""
        rows = self.download(bufs, bufs.batch, reverse=reverse, buffer=buffer)
        return rows[list(regions)]

    def copy_rows(self, dst, pieces, *, log_n: int, buffer: str = "input") -> int:
        """Copy rows of 2^log_n points, placed as ``buffer`` of a 2^log_n-point run, from other sets into
        ``dst`` (sized for 2^log_n points or more: where :meth:`upload` of those rows would put them), their
        placement (either order) kept. ``pieces``: (src set, first source row, first row in ``dst``, rows).
        Returns the bytes moved over the link each way: a driver copies on the card where it can
        (host.xrt: ``bo.copy``, 0 bytes); by default through the host (each piece's rows downloaded and,
        with the rows before them in ``dst``, uploaded again; the pieces must cover rows 0.. of ``dst``).
        """
        got = {}
        for src, s0, d0, rows in pieces:
            part = self.download_regions(src, range(s0, s0 + rows), buffer=buffer)
            for i in range(rows):
                got[d0 + i] = part[i]
        if sorted(got) != list(range(len(got))):
            raise ValueError("pieces: the rows copied must be rows 0.. of dst, each once")
        rows = np.stack([got[r] for r in range(len(got))])
        return self.upload(dst, rows, buffer=buffer)

    @abc.abstractmethod
    def execute(self, run, buffers):
        """Run the kernel once with the arguments of ``run`` on ``buffers`` (a set of :meth:`allocate`) in
        place; returns its status record (:meth:`Backend.execute`)."""

    def execute_run(self, bufs, run) -> None:
        """:meth:`execute` of ``run`` on ``bufs``, its record left to the driver's report."""
        self.execute(run, bufs)


class ModelBackend(Backend):
    """The golden model on the host CPU; its device memory is a numpy array. It computes in ``field``
    (a preset's name or a Field, default "goldilocks"); ``params`` are checked and otherwise unused (the
    model has no build: their ``field`` does not choose the model's)."""

    name = "model"

    @keywords_checked()
    def __init__(self, params: BuildParams | None = None, field="goldilocks"):
        super().__init__()
        self.params = check_params(params)
        self.field = F.get(field, "field")
        self.memory = np.zeros(0, dtype=np.uint64)

    def run(self, points, inverse=False, *, coset=None, order="nn"):
        t0 = time.perf_counter()
        self.memory = np.array(points, dtype=np.uint64, copy=True)
        t1 = time.perf_counter()
        self.memory = ntt_model.transform(self.memory, inverse=inverse, coset=coset, order=order,
                                          field=self.field)
        t2 = time.perf_counter()
        out = self.memory.copy()
        t3 = time.perf_counter()
        self.timings = {"to-device": t1 - t0, "kernel": t2 - t1, "from-device": t3 - t2}
        return out
