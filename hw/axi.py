"""AXI4 and AXI4-Lite signatures shared by the DMA engine, the HBM model and the kernel wrapper.

Both are seen from the master: ``Out`` members are driven by the master, ``In`` members by the slave
(use ``.flip()`` for a slave port). Member names are the AXI signal names without the channel prefix
(``awaddr``, ``wlast``, ...), so the kernel wrapper only has to prefix them (``m00_axi_awaddr``).
IDs, QoS, cache, lock, prot and region are left out: every master here uses a single ID and in-order
responses, which Vitis accepts from an RTL kernel.
"""

from amaranth.hdl import Const
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["fault_layout", "connect_half", "Axi4Signature", "Axi4ReadSignature", "Axi4WriteSignature", "AxiLiteSignature", "BURST_INCR",
           "RESP_OKAY", "RESP_EXOKAY", "RESP_SLVERR", "RESP_DECERR"]

BURST_INCR = 0b01
RESP_OKAY = 0b00
RESP_EXOKAY = 0b01         # never asked for (no exclusive accesses): treated as an error if it comes
RESP_SLVERR = 0b10
RESP_DECERR = 0b11


def fault_layout(channels: int) -> data.StructLayout:
    """One AXI error response as a master reports it: ``valid`` (this cycle), ``write`` (1: a B response,
    0: an R beat), ``resp`` (the BRESP / RRESP code) and ``channel`` (the HBM channel of the master)."""
    return data.StructLayout({"valid": 1, "write": 1, "resp": 2,
                              "channel": max(1, (channels - 1).bit_length())})


def connect_half(m, half, port, when=Const(1)):
    """Connect ``half`` (a master's :class:`Axi4ReadSignature` or :class:`Axi4WriteSignature` interface)
    to the same-named members of a full AXI4 ``port`` (master or slave side) while ``when`` is 1.

    Only the handshakes are gated: the master's valid/ready reach the port only while ``when`` is 1, and
    its inputs are driven from this port only then. Addresses, lengths and data go to the port at all
    times (they mean nothing without valid), which keeps wide AND gates off the data paths; so a port's
    half may be connected to one master only."""
    for name, member in half.signature.members.items():
        inner, outer = getattr(half, name), getattr(port, name)
        if member.flow == Out and not name.endswith(("valid", "ready")):
            m.d.comb += outer.eq(inner)
            continue
        with m.If(when):
            m.d.comb += (outer.eq(inner) if member.flow == Out else inner.eq(outer))


def _check_width(name: str, value, allowed):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value not in allowed:
        raise ValueError(f"{name}: must be one of {sorted(allowed)}, got {value}")


def _write_members(addr_width, data_width):
    return {
        "awvalid": Out(1), "awready": In(1), "awaddr": Out(addr_width), "awlen": Out(8),
        "awsize": Out(3), "awburst": Out(2),
        "wvalid": Out(1), "wready": In(1), "wdata": Out(data_width), "wstrb": Out(data_width // 8),
        "wlast": Out(1),
        "bvalid": In(1), "bready": Out(1), "bresp": In(2),
    }


def _read_members(addr_width, data_width):
    return {
        "arvalid": Out(1), "arready": In(1), "araddr": Out(addr_width), "arlen": Out(8),
        "arsize": Out(3), "arburst": Out(2),
        "rvalid": In(1), "rready": Out(1), "rdata": In(data_width), "rresp": In(2), "rlast": In(1),
    }


class _Axi4Base(wiring.Signature):
    def __init__(self, members, *, addr_width: int, data_width: int):
        _check_width("addr_width", addr_width, range(12, 65))
        _check_width("data_width", data_width, {32, 64, 128, 256, 512, 1024})
        self._addr_width = addr_width
        self._data_width = data_width
        super().__init__(members(addr_width, data_width))

    @property
    def addr_width(self) -> int:
        return self._addr_width

    @property
    def data_width(self) -> int:
        return self._data_width

    @property
    def beat_bytes(self) -> int:
        return self._data_width // 8

    @property
    def size_code(self) -> int:
        """AxSIZE for full-width beats: log2(bytes per beat)."""
        return (self.beat_bytes).bit_length() - 1

    def __eq__(self, other):
        return (type(other) is type(self) and other.addr_width == self.addr_width
                and other.data_width == self.data_width)

    def __repr__(self):
        return f"{type(self).__name__}(addr_width={self._addr_width}, data_width={self._data_width})"


class Axi4Signature(_Axi4Base):
    """Full AXI4 memory-mapped master port (INCR bursts up to 256 beats)."""

    def __init__(self, *, addr_width: int = 64, data_width: int = 256):
        super().__init__(lambda a, d: {**_write_members(a, d), **_read_members(a, d)},
                         addr_width=addr_width, data_width=data_width)

    @property
    def read_signature(self) -> "Axi4ReadSignature":
        return Axi4ReadSignature(addr_width=self._addr_width, data_width=self._data_width)

    @property
    def write_signature(self) -> "Axi4WriteSignature":
        return Axi4WriteSignature(addr_width=self._addr_width, data_width=self._data_width)


class Axi4ReadSignature(_Axi4Base):
    """The read half of :class:`Axi4Signature` (AR and R, same member names)."""

    def __init__(self, *, addr_width: int = 64, data_width: int = 256):
        super().__init__(_read_members, addr_width=addr_width, data_width=data_width)


class Axi4WriteSignature(_Axi4Base):
    """The write half of :class:`Axi4Signature` (AW, W and B, same member names)."""

    def __init__(self, *, addr_width: int = 64, data_width: int = 256):
        super().__init__(_write_members, addr_width=addr_width, data_width=data_width)


class AxiLiteSignature(wiring.Signature):
    """AXI4-Lite master port (s_axi_control is its flip)."""

    def __init__(self, *, addr_width: int = 12, data_width: int = 32):
        _check_width("addr_width", addr_width, range(4, 65))
        _check_width("data_width", data_width, {32, 64})
        self._addr_width = addr_width
        self._data_width = data_width
        super().__init__({
            "awvalid": Out(1), "awready": In(1), "awaddr": Out(addr_width),
            "wvalid": Out(1), "wready": In(1), "wdata": Out(data_width), "wstrb": Out(data_width // 8),
            "bvalid": In(1), "bready": Out(1), "bresp": In(2),
            "arvalid": Out(1), "arready": In(1), "araddr": Out(addr_width),
            "rvalid": In(1), "rready": Out(1), "rdata": In(data_width), "rresp": In(2),
        })

    @property
    def addr_width(self) -> int:
        return self._addr_width

    @property
    def data_width(self) -> int:
        return self._data_width

    def __eq__(self, other):
        return (isinstance(other, AxiLiteSignature) and other.addr_width == self.addr_width
                and other.data_width == self.data_width)

    def __repr__(self):
        return f"AxiLiteSignature(addr_width={self._addr_width}, data_width={self._data_width})"
