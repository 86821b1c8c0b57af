"""The HBM model's file memory (sim/hbm.py ``files=``): the host-side hex files and parameter checks.

The memory itself (the Verilog module, load and dump in the simulator) is exercised by every kernel run
through the sim backend (tests/test_kernel.py, tests/test_cli.py), whose results are checked against the
golden model.
"""

import numpy as np
import pytest
from amaranth.sim import Simulator

from nantucket.sim.hbm import HbmChannelModel, channel_models, read_dump_file, write_load_file


def _word_hex(beat: bytes) -> str:
    """One beat as $readmemh / $writememh print it: the little-endian beat as a 256-bit number."""
    return f"{int.from_bytes(beat, 'little'):064x}"


def test_load_file_format(tmp_path):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, 3 * 32, dtype=np.uint8)
    b = rng.integers(0, 256, 32, dtype=np.uint8)
    path = tmp_path / "h.load.hex"
    assert write_load_file(path, [(5, a), (0x123, b.tobytes())]) == a.size + b.size
    expected = ["@5"] + [_word_hex(a[i:i + 32].tobytes()) for i in range(0, a.size, 32)]
    expected += ["@123", _word_hex(b.tobytes())]
    assert path.read_text().splitlines() == expected


def test_empty_load_file(tmp_path):
    path = tmp_path / "e.hex"
    assert write_load_file(path, []) == 0 and path.read_bytes() == b""


def test_load_file_rejects_partial_beats(tmp_path):
    with pytest.raises(ValueError, match="whole number of beats"):
        write_load_file(tmp_path / "p.hex", [(0, bytes(40))])


@pytest.mark.parametrize("edge", [0, 1, 2**64 - 2**32 + 1 - 1, 2**32, 2**63, 2**64 - 1])
def test_dump_file_round_trip(tmp_path, edge):
    rng = np.random.default_rng(edge % 1000)
    words = rng.integers(0, 2**63, (6, 4), dtype=np.uint64)
    words[2, :] = edge
    raw = words.view(np.uint8).reshape(-1)
    path = tmp_path / "d.dump.hex"
    # a dump as the simulator writes it (mixed case is accepted)
    lines = [_word_hex(raw[i:i + 32].tobytes()) for i in range(0, raw.size, 32)]
    lines[1] = lines[1].upper()
    path.write_text("\n".join(lines) + "\n")
    got = read_dump_file(path, 6)
    assert np.array_equal(got, raw)
    assert np.array_equal(got.view(np.uint64).reshape(6, 4), words)


def test_dump_file_errors_name_file_and_line(tmp_path):
    path = tmp_path / "bad.dump.hex"
    good = "0" * 64
    path.write_text("\n".join([good, good[:-1] + "g", good]) + "\n")
    with pytest.raises(ValueError, match=r"bad\.dump\.hex:2: not a hex word"):
        read_dump_file(path, 3)
    with pytest.raises(ValueError, match=r"bad\.dump\.hex: expected 4 words, found 3"):
        read_dump_file(path, 4)
    # line numbers are the file's, blank and comment lines included
    path.write_text("\n".join(["// dump", good, "", good + "0", good]) + "\n")
    with pytest.raises(ValueError, match=r"bad\.dump\.hex:4: more than 64 hex digits"):
        read_dump_file(path, 3)


def test_file_memory_parameters():
    with pytest.raises(ValueError, match="files"):
        HbmChannelModel(depth_beats=8, files="no spaces")
    with pytest.raises(ValueError, match="files"):
        HbmChannelModel(depth_beats=8, files="h", store=False)
    with pytest.raises(ValueError, match="files"):
        HbmChannelModel(depth_beats=8, files="h", init=[1])
    models = channel_models(3, depth_beats=8, files="hbm")
    assert [mod.files for mod in models] == ["hbm0", "hbm1", "hbm2"]
    assert "bd_load" in models[0].signature.members
    assert "bd_load" not in HbmChannelModel(depth_beats=8).signature.members


def test_file_memory_is_verilator_only():
    with pytest.raises(TypeError, match="Verilator"):
        Simulator(HbmChannelModel(depth_beats=8, files="h"))
