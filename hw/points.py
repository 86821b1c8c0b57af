"""Data layouts of the points as they travel between the DMA, the NTT engine and the benches: one
definition instead of bit slicing in every block.

- :data:`PointPair`: what one lane takes (or emits) in one cycle, ``x0`` then ``x1`` (64 bits each);
  :func:`pair_layout` the same for a field's points (``field.point_bits``: 64, or 32 in a 31-bit field).
- :func:`payload_layout`: one engine cycle, ``ArrayLayout(pair_layout(field), L)``; lane l's pair at bits
  [128l, 128l + 128) (Goldilocks), so a payload's flat bits are lane 0 x0, lane 0 x1, lane 1 x0, ...
- :func:`unit_layout`: a *unit* (see :mod:`hw.model.layout`), L points of one matrix row, point l for
  lane l; it is L/4 HBM beats at consecutive addresses.
- :data:`Beat`: one 256-bit HBM beat, four points, the lowest address first.
"""

from amaranth.lib import data

from nantucket.hw.model import field as F
from nantucket.hw.model.layout import POINTS_PER_BEAT

__all__ = ["POINT_BITS", "PointPair", "Beat", "pair_layout", "payload_layout", "unit_layout", "pack_beat",
           "unpack_beat", "pack_payload", "unpack_payload"]

#: Bits of a point in HBM beats and units: the DMA and the memory layout are the Goldilocks ones.
POINT_BITS = F.GOLDILOCKS.point_bits
PointPair = data.StructLayout({"x0": POINT_BITS, "x1": POINT_BITS})
Beat = data.ArrayLayout(POINT_BITS, POINTS_PER_BEAT)


def pair_layout(field=F.GOLDILOCKS) -> data.StructLayout:
    """A lane's pair (x0, x1) of ``field`` points, ``field.point_bits`` each (:data:`PointPair` for 64)."""
    bits = F.get(field).point_bits
    return PointPair if bits == POINT_BITS else data.StructLayout({"x0": bits, "x1": bits})


def payload_layout(lanes: int, field=F.GOLDILOCKS) -> data.ArrayLayout:
    """One engine cycle of ``lanes`` lanes: element l is lane l's (x0, x1)."""
    return data.ArrayLayout(pair_layout(field), lanes)


def unit_layout(lanes: int) -> data.ArrayLayout:
    """One unit: ``lanes`` points of a row, element l for lane l (L/4 beats)."""
    return data.ArrayLayout(POINT_BITS, lanes)


# -- host side: the same layouts as Python ints (benches, backdoor loads) -------------------------------

def pack_beat(points) -> int:
    """Four points (lowest address first) as the integer value of a :data:`Beat`."""
    return sum(int(v) << (POINT_BITS * i) for i, v in enumerate(points))


def unpack_beat(word: int) -> list[int]:
    """The four points of a :data:`Beat` value, lowest address first."""
    mask = (1 << POINT_BITS) - 1
    return [(int(word) >> (POINT_BITS * i)) & mask for i in range(Beat.length)]


def pack_payload(pairs, field=F.GOLDILOCKS) -> int:
    """One engine cycle from ``pairs[l] = (x0, x1)`` of lane l, as the integer value of a
    :func:`payload_layout` of ``field`` (offsets taken from :func:`pair_layout`)."""
    pair = pair_layout(field)
    x0, x1 = pair["x0"].offset, pair["x1"].offset
    return sum((int(a) << x0 | int(b) << x1) << (pair.size * lane) for lane, (a, b) in enumerate(pairs))


def unpack_payload(word: int, lanes: int, field=F.GOLDILOCKS) -> list[tuple[int, int]]:
    """``[(x0, x1)] * lanes`` of a :func:`payload_layout` value of ``field``."""
    pair = pair_layout(field)
    mask = (1 << F.get(field).point_bits) - 1
    x0, x1 = pair["x0"].offset, pair["x1"].offset
    out = []
    for lane in range(lanes):
        value = int(word) >> (pair.size * lane)
        out.append(((value >> x0) & mask, (value >> x1) & mask))
    return out
