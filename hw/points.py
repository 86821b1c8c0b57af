"""Data layouts of the points as they travel between the DMA, the NTT engine and the benches: one
definition instead of bit slicing in every block.

- :data:`PointPair`: what one lane takes (or emits) in one cycle, ``x0`` then ``x1`` (64 bits each);
  :func:`pair_layout` the same for a field's points (``field.point_bits``: 64, or 32 in a 31-bit field).
- :func:`payload_layout`: one engine cycle, ``ArrayLayout(pair_layout(field), L)``; lane l's pair at bits
  [128l, 128l + 128) (Goldilocks), so a payload's flat bits are lane 0 x0, lane 0 x1, lane 1 x0, ...
- :func:`unit_layout`: a *unit* (see :mod:`hw.model.layout`), L points of one matrix row, point l for
  lane l; it is L/P HBM beats at consecutive addresses (P = 4 Goldilocks points a beat, 8 in a 31-bit
  field).
- :func:`beat_layout`: one 256-bit HBM beat of a field, P points, the lowest address first; :data:`Beat`
  is Goldilocks' (four 64-bit points). Blocks that only move beats read ``Beat.size`` (256 in every
  field).
"""

from amaranth.lib import data

from nantucket.hw.model import field as F
from nantucket.hw.model.layout import BEAT_BITS

__all__ = ["POINT_BITS", "PointPair", "Beat", "beat_layout", "pair_layout", "payload_layout", "unit_layout",
           "pack_beat", "unpack_beat", "pack_payload", "unpack_payload"]

#: Bits of a Goldilocks point (the default field's; a field's own is ``field.point_bits``).
POINT_BITS = F.GOLDILOCKS.point_bits
PointPair = data.StructLayout({"x0": POINT_BITS, "x1": POINT_BITS})


def beat_layout(field=F.GOLDILOCKS) -> data.ArrayLayout:
    """One 256-bit HBM beat of ``field``'s points (``BEAT_BITS / field.point_bits`` of them)."""
    bits = F.get(field).point_bits
    return data.ArrayLayout(bits, BEAT_BITS // bits)


Beat = beat_layout(F.GOLDILOCKS)


def pair_layout(field=F.GOLDILOCKS) -> data.StructLayout:
    """A lane's pair (x0, x1) of ``field`` points, ``field.point_bits`` each (:data:`PointPair` for 64)."""
    bits = F.get(field).point_bits
    return PointPair if bits == POINT_BITS else data.StructLayout({"x0": bits, "x1": bits})


def payload_layout(lanes: int, field=F.GOLDILOCKS) -> data.ArrayLayout:
    """One engine cycle of ``lanes`` lanes: element l is lane l's (x0, x1)."""
    return data.ArrayLayout(pair_layout(field), lanes)


def unit_layout(lanes: int, field=F.GOLDILOCKS) -> data.ArrayLayout:
    """One unit: ``lanes`` points of ``field`` of a row, element l for lane l (L/P beats)."""
    return data.ArrayLayout(F.get(field).point_bits, lanes)


# -- host side: the same layouts as Python ints (benches, backdoor loads) -------------------------------

def pack_beat(points, field=F.GOLDILOCKS) -> int:
    """A beat's P points of ``field`` (lowest address first) as the integer value of a :func:`beat_layout`."""
    bits = F.get(field).point_bits
    return sum(int(v) << (bits * i) for i, v in enumerate(points))


def unpack_beat(word: int, field=F.GOLDILOCKS) -> list[int]:
    """The P points of a :func:`beat_layout` value of ``field``, lowest address first."""
    bits = F.get(field).point_bits
    mask = (1 << bits) - 1
    return [(int(word) >> (bits * i)) & mask for i in range(BEAT_BITS // bits)]


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
