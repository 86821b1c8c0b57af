"""Opening devices: :func:`open` gives a Device (one card or the model), a MultiDevice (``devices=``,
host/api/multi.py) or a ClusterDevice (``cluster=``, host/api/cluster.py)."""

from numbers import Integral

from nantucket.host.backends import check_options
from nantucket.hw.model import field as F  # noqa: F401

from . import checks as C
from .device import make_device
from .futures import DEFAULT_MAX_PENDING, check_max_pending
from .multi import MultiDevice

__all__ = ["open", "open_local", "check_devices"]


def open(backend: str = "model", *, field="goldilocks", devices=None, cluster=None, max_pending=None,
         **options):
    """Open a device: ``backend`` is a name of host.backends (model, sim, xrt, ...), ``field`` the prime
    field it computes in (a name of hw.model.field.FIELDS or a Field; default "goldilocks"), ``options``
    its constructor's (params=BuildParams(...) for every backend; refresh, stalls, progress, cycle_budget
    for sim; xclbin, device, timeout_s, progress, ... for xrt). An option the backend does not take is a
    TypeError naming it and the valid ones (host.backends.backend_options). A card (sim, xrt) refuses a
    field its build does not compute in (ValueError naming both); a registered backend without a
    ``field`` keyword computes in Goldilocks only.

    ``devices``: several cards as one device (host/api/multi.py): a count (cards 0 .. count-1), or on
    xrt a list of card indices. ``cluster``: a dask.distributed Client or a scheduler address, each worker
    opening its own device (host/api/cluster.py). ``max_pending``: the calls a device holds before a
    further ``wait=False`` call blocks (default 4; futures.py)."""
    if not isinstance(backend, str):
        raise TypeError(f"backend: expected a backend name (str), got {type(backend).__name__}")
    field = C.check_field(field)
    max_pending = DEFAULT_MAX_PENDING if max_pending is None else check_max_pending(max_pending)
    check_options(backend, options, f"open({backend!r})")
    if cluster is not None:
        from .cluster import open_cluster      # Dask is optional: imported only for a cluster
        if devices is not None:
            check_devices(devices, backend, options)
        # the workers open their devices with open_local (sent to them by reference)
        return open_cluster(cluster, backend, open_local, field=field, devices=devices, max_pending=max_pending,
                            **options)
    return open_local(backend, field, devices, max_pending, options)


def open_local(backend: str, field, devices, max_pending: int, options: dict):
    """A Device, or a MultiDevice for several cards (arguments checked by :func:`open`)."""
    if devices is not None:
        indices = check_devices(devices, backend, options)
        if len(indices) > 1 or backend == "xrt":
            if len(indices) == 1:
                return make_device(backend, field, max_pending, dict(options, device=indices[0]))
            cards, names = [], []
            try:
                for i, index in enumerate(indices):
                    card_options = dict(options, device=index) if backend == "xrt" else options
                    cards.append(make_device(backend, field, max_pending, card_options))
                    names.append(f"xrt device {index}" if backend == "xrt" else f"{backend} card {i}")
            except BaseException:
                for c in cards:
                    c.close()
                raise
            return MultiDevice(backend, cards, names)
    return make_device(backend, field, max_pending, options)


def check_devices(devices, backend: str, options: dict) -> list[int]:
    """``devices``: a count >= 1 or (xrt) a list of distinct card indices >= 0; the card indices."""
    if isinstance(devices, bool) or not isinstance(devices, (Integral, list, tuple)):
        raise TypeError(f"devices: expected a count of cards (int >= 1) or a list of card indices, got "
                        f"{type(devices).__name__} {devices!r:.40}")
    if isinstance(devices, Integral):
        if devices < 1:
            raise ValueError(f"devices: expected a count of cards >= 1, got {devices}")
        indices = list(range(int(devices)))
    else:
        if backend != "xrt":
            raise ValueError(f"devices: a list of card indices is for xrt; {backend} takes a count "
                             f"(devices={len(devices)})")
        if not devices:
            raise ValueError("devices: expected at least one card index, got an empty list")
        for d in devices:
            if isinstance(d, bool) or not isinstance(d, Integral):
                raise TypeError(f"devices: card indices are ints >= 0, got {type(d).__name__} {d!r:.40}")
            if d < 0:
                raise ValueError(f"devices: card indices are ints >= 0, got {d}")
        if len(set(devices)) != len(devices):
            raise ValueError(f"devices: card indices must be distinct, got {list(devices)}")
        indices = [int(d) for d in devices]
    if "device" in options and backend == "xrt":
        raise ValueError("devices: give device= (one card) or devices= (several), not both")
    return indices
