"""Merkle commitments on a device: ``dev.commit(arrays, scheme=...)`` and ``dev.lde_commit(trace, blowup,
shift, scheme=...)`` (docs/commitments.md, "On a device").

:class:`CommitCalls` is a mixin written only against the public device API (``lde``, ``numpy``, ``field``,
``name``, ``transfers``, a DeviceArray's ``shape``/``axis``/``ext``/``device``, the futures the device's
calls return), so one definition serves the model, a card (sim, xrt), several cards (MultiDevice) and a
cluster; its methods delegate to :func:`device_commit` and :func:`device_lde_commit`, which take the device
as their first argument (``nantucket.commit(..., backend=...)`` uses them on any device).

A committed array's leaves: for each evaluation index (along the array's ``axis``), the values of every
polynomial, each extension element's ``ext`` limbs in limb order, the way Plonky3's ``ExtensionMmcs``
flattens a matrix of extension elements into base-field rows. Until the card has its hash engine the tree
is built on the host from the LDE brought back over the link (every backend: "tree on the host"); the host
memory the tree's layers take is checked before anything is fetched (:func:`tree_bytes`, host/memory.py).

Each commitment carries ``.report`` (:func:`commit_report`): its permutations and where they ran, the bytes
each way over the link, the projected time of each part (link in, kernel, tree, link out; the tree at the
published CPU rate of its permutations, :data:`PUBLISHED_CPU`) and what was measured.
"""

from __future__ import annotations

import concurrent.futures as cf
import threading
import time
from numbers import Integral

import numpy as np

from nantucket.host.backend_base import keywords_checked
from nantucket.host.memory import check_fits, format_bytes
from nantucket.hw.model import field as F
from nantucket.hw.model.commit import Commitment, Dimensions
from nantucket.hw.model.commit import scheme as get_scheme
from nantucket.hw.model.commit.layers import padded_len
from nantucket.hw.model.commit.mmcs import MerkleTreeMmcs
from nantucket.hw.model.commit.sponge import HashOrNoop, PaddingFreeSponge, Rp64Sponge
from nantucket.hw.model.platform import PCIE_FROM_CARD_GBPS, PCIE_LINK, PCIE_TO_CARD_GBPS

from . import checks as C
from .futures import DeviceFuture, check_wait

__all__ = ["CommitCalls", "device_commit", "device_lde_commit", "leaf_matrix", "permutation_counts",
           "tree_bytes", "commit_report", "report_lines", "scheme_order", "check_cap_height", "transfers_of",
           "check_tree_memory",
           "PUBLISHED_CPU", "HOST_TREE"]

#: What the report's "Host work" says while the card has no hash engine.
HOST_TREE = "tree on the host"

#: Published one-core CPU time of one permutation (seconds) and its source, for the permutations a
#: scheme's tree uses (the figures of docs/performance.md's commitments section; a packed call's time
#: divided by its lanes). A permutation without a published figure is absent: its tree time is not projected.
PUBLISHED_CPU: dict[str, tuple[float, str]] = {
    "poseidon2-babybear-16": (1.157e-6 / 4, "Plonky3 Poseidon2-16 BabyBear, 4 packed lanes in 1.157 us, aarch64 NEON "
                                            "(github.com/Plonky3/Plonky3/pull/1023)"),
    "poseidon2-babybear-24": (1.81e-6 / 4, "Plonky3 Poseidon2-24 BabyBear, 4 packed lanes in 1.81 us, aarch64 NEON "
                                           "(github.com/Plonky3/Plonky3/pull/1023)"),
    "poseidon2-koalabear-16": (0.92e-6 / 4, "Plonky3 Poseidon2-16 KoalaBear, 4 packed lanes in 0.92 us, aarch64 NEON "
                                            "(github.com/Plonky3/Plonky3/pull/1023)"),
    "poseidon-goldilocks-12": (0.77e-6, "plonky2 Poseidon-12 Goldilocks, 0.77 us, Apple M1 one core "
                                        "(github.com/0xPolygonZero/plonky2/pull/294)"),
}

#: Bytes per digest element the model's layers hold (every field's values are uint64 inside).
_DIGEST_ELEMENT_BYTES = 8
_MEMORY_CHECK_MIN_BYTES = 16 << 20

_executor_lock = threading.Lock()
_executor: cf.ThreadPoolExecutor | None = None


def _tree_executor() -> cf.ThreadPoolExecutor:
    """The one thread that builds the trees of ``wait=False`` calls, in submission order."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="nantucket-tree")
        return _executor


# -- shapes -------------------------------------------------------------------------------------------------

def leaf_matrix(values: np.ndarray, axis: int, ext: int | None) -> np.ndarray:
    """An array's values (numpy, in the array's own shape) as the (N, width) matrix whose row i is leaf i:
    the values of every polynomial at evaluation index i (along ``axis``), each extension element's limbs in
    limb order (``ext``: the trailing axis)."""
    values = np.asarray(values)
    n = values.shape[axis]
    return np.ascontiguousarray(np.moveaxis(values, axis, 0).reshape(n, -1))


def _dims_of(shape, axis: int) -> Dimensions:
    n = int(shape[axis])
    return Dimensions(n, int(np.prod(shape)) // n if n else 0)


def scheme_order(scheme, order=None) -> str:
    """The LDE order ``lde_commit`` uses: ``order`` (checked: its output letter must be the scheme's row
    order) or, by default, natural input and the scheme's row order (bit-reversed for Plonky3 and plonky2,
    natural for Winterfell)."""
    s = get_scheme(scheme)
    want = "r" if s.bit_reversed else "n"
    if order is None:
        return "n" + want
    order = C.check_order(order)
    if order[1] != want:
        raise ValueError(f"order: {s.name} commits the LDE in {'bit-reversed' if want == 'r' else 'natural'} "
                         f"row order, so the output order must be {want!r} (e.g. {'n' + want!r}), got {order!r}")
    return order


# -- what a tree costs ----------------------------------------------------------------------------------------

def _blocks(hasher, width: int) -> int:
    """Permutation calls the leaf hasher makes per row of ``width`` elements."""
    if isinstance(hasher, HashOrNoop):
        return 0 if width <= hasher.digest else _blocks(hasher.sponge, width)
    if isinstance(hasher, PaddingFreeSponge):
        return -(-width // hasher.rate)
    if isinstance(hasher, Rp64Sponge):
        return -(-width // hasher.RATE)
    raise TypeError(f"hasher: no permutation count for {hasher!r}")


def permutation_counts(scheme, dimensions, cap_height: int = 0) -> dict:
    """The permutation calls one commit to matrices of these ``dimensions`` makes, from the shapes alone:
    ``{"leaves": n, "nodes": n, "total": n, "by_permutation": {name: n}}`` (leaf sponges, injected rows'
    hashes included, under the scheme's leaf permutation; every compression under its node permutation)."""
    s = get_scheme(scheme)
    tree = s.tree
    dims = [Dimensions(*d) for d in dimensions]
    if isinstance(tree, MerkleTreeMmcs):
        max_h = tree.check_heights([d.height for d in dims], cap_height)
        by_height: dict[int, int] = {}
        for d in dims:
            by_height[d.height] = by_height.get(d.height, 0) + d.width
        leaves = sum(h * _blocks(tree.hasher, w) for h, w in by_height.items())
        nodes, curr = 0, padded_len(max_h)
        while curr > 1:
            raw = curr // 2
            nodes, curr = nodes + raw, padded_len(raw)
        nodes += sum(h for h in by_height if h != max_h)        # C(parent, H(injected rows)) per injected row
    else:
        rows = tree.check_heights([d.height for d in dims], cap_height)
        leaves = rows * _blocks(tree.hasher, sum(d.width for d in dims))
        nodes = rows - (1 << cap_height)
    leaf_perm, node_perm = s.permutations[0], s.permutations[-1]
    by = {leaf_perm: leaves}
    by[node_perm] = by.get(node_perm, 0) + nodes
    return {"leaves": leaves, "nodes": nodes, "total": leaves + nodes, "by_permutation": by}


def tree_bytes(scheme, dimensions) -> int:
    """Host bytes a commit to these ``dimensions`` allocates: the fetched values, their uint64 copies and the
    leaves' concatenation, and every digest layer (a 2^24-leaf 8-element tree: 2^25 digests, 2 GiB as the
    model holds them, uint64; 1 GiB as 31-bit digests)."""
    s = get_scheme(scheme)
    dims = [Dimensions(*d) for d in dimensions]
    values = sum(d.height * d.width for d in dims) * 8
    max_h = max((d.height for d in dims), default=0)
    digests, curr = 0, padded_len(max_h)
    while curr > 1:
        digests, curr = digests + curr, padded_len(curr // 2)
    digests += 1
    return 3 * values + digests * s.digest * _DIGEST_ELEMENT_BYTES


def check_tree_memory(scheme, dims, what: str) -> None:
    """MemoryTooSmall (host/memory.py) when the host cannot hold :func:`tree_bytes` of these dimensions."""
    nbytes = tree_bytes(scheme, dims)
    if nbytes >= _MEMORY_CHECK_MIN_BYTES:
        check_fits(nbytes, what)


# -- the report -----------------------------------------------------------------------------------------------

def _on_cpu(dev) -> bool:
    """The model computes on this host: nothing crosses a link."""
    return str(getattr(dev, "name", "")).split(" ")[0] == "model"      # a cluster: "model on 2 workers"


def _moved(before: dict, after: dict) -> dict:
    return {k: int(after.get(k, 0)) - int(before.get(k, 0)) for k in ("to-device", "from-device")}


def transfers_of(dev) -> dict:
    """The device's bytes moved so far (``transfers``), zeros where it counts none (a cluster)."""
    t = getattr(dev, "transfers", None)
    return dict(t) if isinstance(t, dict) else {"to-device": 0, "from-device": 0}


def _kernel_projection(steps, params=None) -> tuple[float | None, str]:
    """The LDE's kernel time: its steps' projected seconds (their counted cycles at the NTT clock), else,
    where the card counts no cycles (a card without them, the stand-in), the build's ideal cycles of each
    kernel step's size and rows at its NTT clock (``params``: the backend's BuildParams)."""
    ran = [st for st in steps or () if st.get("kernel_calls")]
    if not ran:
        return None, "no kernel run"
    if all(st.get("projected_s") is not None for st in ran):
        return sum(st["projected_s"] for st in ran), "the kernel's counted cycles at the NTT clock"
    if params is None or not hasattr(params, "ideal_cycles"):
        return None, "no cycles counted"
    try:
        cycles = sum(params.ideal_cycles(st["log_n"]) * max(1, st.get("rows") or 1) for st in ran)
    except ValueError:          # a step below the build's native sizes: no ideal-cycle figure
        return None, "no cycles counted, a size the build does not run natively"
    return cycles / (params.ntt_mhz * 1e6), f"the build's ideal cycles at its {params.ntt_mhz:g} MHz NTT clock"


def _lde_where(steps) -> str:
    places = {st.get("where", "host") for st in steps or ()}
    return "card" if places == {"card"} else "host" if places <= {"host"} else "card and host"


def commit_report(dev, scheme, dims, cap_height: int, *, moved: dict, steps=None, measured: dict,
                  lde: bool) -> dict:
    """What one commit on ``dev`` did (a JSON-ready dict; docs/commitments.md, "Reports"): its permutations,
    where they ran, the bytes each way over the link (``moved``: the device's ``transfers`` over the call),
    the projected time of each part and the published CPU rates the tree's projection used; ``steps``: the
    LDE's step records (host.backend_base.step_record), ``measured``: seconds measured on this host."""
    s = get_scheme(scheme)
    perms = permutation_counts(s, dims, cap_height)
    link = not _on_cpu(dev)
    rates = {p: PUBLISHED_CPU.get(p) for p in perms["by_permutation"]}
    tree_s = None if any(r is None for r in rates.values()) else \
        sum(n * rates[p][0] for p, n in perms["by_permutation"].items())
    if not lde:
        kernel_s, kernel_how = 0.0, "no LDE"
    elif link:
        kernel_s, kernel_how = _kernel_projection(steps, getattr(getattr(dev, "backend", None), "params", None))
    else:       # the model: the LDE's CPU time on this host (its steps', else the call's wall time)
        cpu = [st.get("cpu_s") for st in steps or ()]
        kernel_s = sum(cpu) if cpu and None not in cpu else measured.get("lde")
        kernel_how = "the golden model on this host's CPU"
    parts = {"link_in": moved["to-device"] / (PCIE_TO_CARD_GBPS * 1e9) if link else 0.0,
             "kernel": kernel_s, "tree": tree_s,
             "link_out": moved["from-device"] / (PCIE_FROM_CARD_GBPS * 1e9) if link else 0.0}
    known = [v for v in parts.values() if v is not None]
    parts["total"] = sum(known) if len(known) == 4 else None
    cards = getattr(dev, "cards", None)
    if not isinstance(cards, list):         # a cluster: its workers (ClusterDevice.workers())
        workers = getattr(dev, "workers", None)
        cards = workers() if callable(workers) else workers
    return {"scheme": s.name, "field": s.field, "dimensions": [list(d) for d in dims], "cap_height": cap_height,
            "leaves": max(d[0] for d in dims), "permutations": perms,
            "where": {**({"lde": _lde_where(steps) if link else "host"} if lde else {}), "tree": "host"},
            "host_work": HOST_TREE, "device": getattr(dev, "name", type(dev).__name__),
            "cards": len(cards) if isinstance(cards, list) else 1,
            "transfers_bytes": moved if link else {"to-device": 0, "from-device": 0},
            "link": {"name": PCIE_LINK, "to_card_gbps": PCIE_TO_CARD_GBPS, "from_card_gbps": PCIE_FROM_CARD_GBPS}
            if link else None,
            "projected_s": parts, "kernel_projection": kernel_how,
            "cpu_rates": {p: None if r is None else {"seconds": r[0], "source": r[1]} for p, r in rates.items()},
            "measured_s": measured, "lde_steps": list(steps or [])}


def _ms(v) -> str:
    return "not projected" if v is None else f"{v * 1e3:.3f} ms"


def report_lines(report: dict) -> list[tuple[str, str]]:
    """The report as ``(label, text)`` lines (the CLI prints them ``Label..... text``)."""
    perms, parts = report["permutations"], report["projected_s"]
    by = ", ".join(f"{n:,} {p}" for p, n in perms["by_permutation"].items())
    lines = [("Permutations", f"{perms['total']:,} ({perms['leaves']:,} leaf hashes, {perms['nodes']:,} "
                              f"compressions; {by}), on the {report['where']['tree']}"),
             ("Host work", f"{report['host_work']}: the card has no hash engine yet" if report["link"] else
              f"{report['host_work']} (the golden model)")]
    if "lde" in report["where"]:
        lines.append(("LDE", f"on the {report['where']['lde']}"))
    if report["link"]:
        moved = report["transfers_bytes"]
        lines.append(("Link", f"{moved['to-device']:,} bytes to the card, {moved['from-device']:,} back "
                              f"({report['link']['name']}, {PCIE_TO_CARD_GBPS:g} / {PCIE_FROM_CARD_GBPS:g} GB/s)"))
        if report["cards"] > 1:
            lines.append(("Gathered", f"the rows of {report['cards']} cards on the host, one tree"))
    rates = [f"{p}: {r['seconds'] * 1e6:.3f} us ({r['source']})" if r else f"{p}: no published rate"
             for p, r in report["cpu_rates"].items()]
    lines.append(("Projected", f"link in {_ms(parts['link_in'])}, kernel {_ms(parts['kernel'])}, tree "
                               f"{_ms(parts['tree'])} on one CPU core, link out {_ms(parts['link_out'])}; "
                               f"total {_ms(parts['total'])}"))
    lines.append(("CPU rate", "; ".join(rates)))
    lines.append(("Measured", ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in report["measured_s"].items())))
    return lines


# -- the calls ------------------------------------------------------------------------------------------------

def check_cap_height(cap_height) -> int:
    if isinstance(cap_height, bool) or not isinstance(cap_height, Integral):
        raise TypeError(f"cap_height: expected an int >= 0, got {type(cap_height).__name__} {cap_height!r:.40}")
    if cap_height < 0:
        raise ValueError(f"cap_height: must not be negative, got {cap_height}")
    return int(cap_height)


def _scheme_on(dev, scheme, exact: bool):
    """The scheme, checked against the device's field (the same p; ``exact``: the same preset, whose roots
    of unity an LDE uses)."""
    s = get_scheme(scheme)
    want, have = F.get(s.field), dev.field
    if (want.name != have.name) if exact else (want.p != have.p):
        what = f"the {want.name} preset's LDE" if exact else f"{want.name} elements"
        raise ValueError(f"scheme: {s.name} commits {what}; this device computes in {have.name} "
                         f"(open it with field={want.name!r})")
    return s


def _items(dev, arrays) -> list:
    """``arrays``: one array (a DeviceArray, an array of several devices, or a future of one) of ``dev``, or
    a non-empty list of them."""
    items = list(arrays) if isinstance(arrays, (list, tuple)) else [arrays]
    if not items:
        raise ValueError("arrays: no arrays given")
    for i, a in enumerate(items):
        name = "arrays" if not isinstance(arrays, (list, tuple)) else f"arrays[{i}]"
        owner = getattr(a, "device", None)
        if isinstance(a, np.ndarray) or owner is None or isinstance(owner, str) or \
                not (hasattr(a, "shape") or isinstance(a, cf.Future)):       # numpy's .device is "cpu"
            raise TypeError(f"{name}: expected an array of this device (dev.asarray(x, axis=0) puts a matrix "
                            f"whose rows are the leaves there; nantucket.commit takes host matrices), got "
                            f"{type(a).__name__}")
        if owner is not dev:
            raise ValueError(f"{name}: an array of another device ({getattr(owner, 'name', owner)!r}), not of "
                             f"{getattr(dev, 'name', dev)!r}")
    return items


def _array(a):
    return a.result() if isinstance(a, cf.Future) else a


def _check_shapes(s, arrays, cap_height: int, what: str) -> list[Dimensions]:
    dims = [_dims_of(a.shape, a.axis) for a in arrays]
    s.tree.check_heights([d.height for d in dims], cap_height)
    check_tree_memory(s, dims, what)
    return dims


def _build(dev, s, arrays, values, cap_height, before, started, steps=None, lde_s=None) -> Commitment:
    """The tree over the fetched ``values`` of ``arrays``, its report attached as ``.report``."""
    fetched = time.perf_counter()
    arrays = [_array(a) for a in arrays]
    dims = _check_shapes(s, arrays, cap_height, f"commit: the {s.name} tree on the host")
    mats = [leaf_matrix(v, a.axis, a.ext) for v, a in zip(values, arrays)]
    t0 = time.perf_counter()
    c = Commitment(mats, s, cap_height)
    tree_s = time.perf_counter() - t0
    c.matrices = tuple(mats)            # the committed leaves' matrices, (N, width) each, on the host
    measured = {**({"lde": lde_s} if lde_s is not None else {}),
                "fetch": fetched - started - (lde_s or 0.0), "tree": tree_s}
    c.report = commit_report(dev, s, dims, cap_height, moved=_moved(before, transfers_of(dev)), steps=steps,
                             measured=measured, lde=lde_s is not None)
    return c


def _settle(dev, what: str, futures: list, finish) -> DeviceFuture:
    """A DeviceFuture of ``finish(results)``, run on the tree thread once every future of ``futures`` is done."""
    out = DeviceFuture(dev, what)
    left = [len(futures)]
    lock = threading.Lock()

    def run():
        try:
            out.set_result(finish([f.result() for f in futures]))
        except BaseException as exc:       # the caller's future holds it
            out.set_exception(exc)

    def one_done(_):
        with lock:
            left[0] -= 1
            last = left[0] == 0
        if last:
            _tree_executor().submit(run)

    for f in futures:
        f.add_done_callback(one_done)
    return out


def device_commit(dev, arrays, *, scheme, cap_height: int = 0, wait: bool = True, since: dict | None = None,
                  steps: list | None = None, lde_s: float | None = None):
    """``dev.commit``: the :class:`Commitment` of ``arrays`` (see :meth:`CommitCalls.commit`). A caller that
    made the arrays with earlier calls gives the report those calls: ``since`` the device's ``transfers``
    before them, ``steps`` their LDE step records and ``lde_s`` their seconds."""
    s = _scheme_on(dev, scheme, exact=False)
    cap_height, wait = check_cap_height(cap_height), check_wait(wait)
    items = _items(dev, arrays)
    known = [a for a in items if not isinstance(a, cf.Future)]
    if len(known) == len(items):
        _check_shapes(s, known, cap_height, f"commit: the {s.name} tree on the host")
    before = transfers_of(dev) if since is None else dict(since)
    started = time.perf_counter() - (lde_s or 0.0)
    if wait:
        values = [dev.numpy(a) for a in items]
        return _build(dev, s, items, values, cap_height, before, started, steps, lde_s)
    fetches = [dev.numpy(a, wait=False) for a in items]
    return _settle(dev, "commit", fetches,
                   lambda values: _build(dev, s, items, values, cap_height, before, started, steps, lde_s))


def _trace_dims(trace, axis, ext, blowup: int) -> list[Dimensions] | None:
    """The committed LDE's dimensions, where the trace's shape says them before any work."""
    shape = getattr(trace, "shape", None)
    if shape is None or isinstance(trace, cf.Future):
        return None
    if hasattr(trace, "axis"):
        axis = trace.axis if axis is None else axis
    nd = len(shape) - (0 if ext is None else 1)
    axis = (nd - 1 if nd > 1 else 0) if axis is None else axis % max(nd, 1)
    d = _dims_of(shape, axis)
    return [Dimensions(d.height * blowup, d.width)]


def device_lde_commit(dev, trace, blowup, shift=None, *, scheme, axis=None, ext=None, order=None,
                      cap_height: int = 0, wait: bool = True):
    """``dev.lde_commit``: ``(Commitment, DeviceArray)`` (see :meth:`CommitCalls.lde_commit`)."""
    s = _scheme_on(dev, scheme, exact=True)
    order = scheme_order(s, order)
    blowup = C.check_blowup(blowup)
    shift = s.lde_shift if shift is None else C.check_shift(shift, "shift", dev.field)
    cap_height, wait = check_cap_height(cap_height), check_wait(wait)
    dims = _trace_dims(trace, axis, ext, blowup)
    if dims is not None:
        s.tree.check_heights([d.height for d in dims], cap_height)
        check_tree_memory(s, dims, f"lde_commit: the {s.name} tree on the host")
    backend = getattr(dev, "backend", None)
    before, started = transfers_of(dev), time.perf_counter()
    if wait:
        lde = dev.lde(trace, blowup, shift, order=order, axis=axis, ext=ext)
        lde_s, steps = time.perf_counter() - started, list(getattr(backend, "steps", None) or [])
        values = dev.numpy(lde)
        return _build(dev, s, [lde], [values], cap_height, before, started, steps, lde_s), lde
    lde_f = dev.lde(trace, blowup, shift, order=order, axis=axis, ext=ext, wait=False)
    values_f = dev.numpy(lde_f, wait=False)

    def finish(results):
        lde_s = time.perf_counter() - started      # to the values' arrival: the LDE's wall time not apart
        steps = list(getattr(backend, "steps", None) or [])
        c = _build(dev, s, [lde_f.result()], results, cap_height, before, started, steps, lde_s)
        return c, lde_f.result()
    return _settle(dev, "lde_commit", [values_f], finish)


class CommitCalls:
    """Mixin giving a device ``commit`` and ``lde_commit`` over the device's public calls."""

    __slots__ = ()

    @keywords_checked(lambda self: f"{getattr(self, 'front', type(self).__name__)}.commit")
    def commit(self, arrays, *, scheme, cap_height: int = 0, wait: bool = True):
        """The Merkle commitment (a :class:`~nantucket.hw.model.commit.Commitment`, ``.report`` its
        report) of ``arrays``: one array of this device or a list of them (different heights as the
        scheme's tree accepts them). Leaf i: the values at evaluation index i (along each array's ``axis``)
        of every polynomial, an extension element's limbs in limb order; a (N, W) trace put on the device
        with ``axis=0`` commits its rows, as Plonky3 does. The scheme's field must have the device's p.
        The tree is built on the host from the values brought back (the card has no hash engine yet).
        ``wait=False``: a DeviceFuture of it."""
        return device_commit(self, arrays, scheme=scheme, cap_height=cap_height, wait=wait)

    @keywords_checked(lambda self: f"{getattr(self, 'front', type(self).__name__)}.lde_commit")
    def lde_commit(self, trace, blowup, shift=None, *, scheme, axis=None, ext=None, order=None,
                   cap_height: int = 0, wait: bool = True):
        """The PCS step in one call: the coset LDE of ``trace`` (as :meth:`lde`: ``blowup``, ``shift``,
        None for the scheme's own, ``axis``, ``ext``), its rows in the scheme's order (``order`` None:
        natural in, bit-reversed out for Plonky3 and plonky2, natural out for Winterfell), then its
        commitment: ``(Commitment, DeviceArray)``, the LDE left on the device to open rows from later
        (``.rows``). The device must compute in the scheme's field preset. ``wait=False``: a DeviceFuture
        of the pair."""
        return device_lde_commit(self, trace, blowup, shift, scheme=scheme, axis=axis, ext=ext, order=order,
                                 cap_height=cap_height, wait=wait)
