"""scripts/draw_diagrams.py: the pictures of docs/architecture.md are valid SVG and the channel map says
what hw/model/layout.py does (read back from the SVG's cells, compared with the layout object)."""

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from nantucket.hw.dma import DmaEngine
from nantucket.hw.model.layout import HbmLayout
from nantucket.hw.model.params import DEFAULT, BuildParams

REPO = Path(__file__).resolve().parent.parent
SVG = "{http://www.w3.org/2000/svg}"


def _draw(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nantucket.tools.draw_diagrams", "--out", str(out), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def _cells(root: ET.Element, key: str) -> list[dict]:
    return [r.attrib for r in root.iter(f"{SVG}rect") if f"data-{key}" in r.attrib]


def _check_map(root: ET.Element, layout: HbmLayout) -> None:
    c = layout.channels
    holds = {int(a["data-channel"]): a["data-holds"] for a in _cells(root, "holds")}
    assert sorted(holds) == list(range(c))
    assert sorted(ch for ch, b in holds.items() if b == "state") == sorted(layout.buffer_channels("state"))
    assert sorted(ch for ch, b in holds.items() if b == "input/output") == sorted(layout.buffer_channels("input"))
    assert layout.buffer_channels("input") == layout.buffer_channels("output")

    roles = {(int(a["data-pass-index"]), int(a["data-channel"])): (a["data-direction"], a["data-buffer"])
             for a in _cells(root, "pass-index")}
    assert len(roles) == 2 * c
    expected = {1: ("input", "state"), 2: ("state", "output")}
    for pass_index, (read_buf, write_buf) in expected.items():
        read = sorted(ch for (p, ch), (d, _) in roles.items() if p == pass_index and d == "read")
        write = sorted(ch for (p, ch), (d, _) in roles.items() if p == pass_index and d == "write")
        assert read == sorted(layout.read_channels(pass_index))
        assert write == sorted(layout.write_channels(pass_index))
        assert not set(read) & set(write)
        for ch in read:
            assert roles[(pass_index, ch)][1] == read_buf
            assert ch in layout.buffer_channels(read_buf)
        for ch in write:
            assert roles[(pass_index, ch)][1] == write_buf
            assert ch in layout.buffer_channels(write_buf)

    # Bottom row: the state rows of pass-1 round 0, block 0, by channel, against the layout's placement.
    drawn = {int(a["data-channel"]): [int(v) for v in a["data-round0-rows"].split()]
             for a in _cells(root, "round0-rows")}
    for row in range(layout.params.lanes):
        channel, _ = layout.unit_place("state", row, 0)
        assert row in drawn[channel], (row, channel)
    assert sum(len(v) for v in drawn.values()) == layout.params.lanes


@pytest.mark.parametrize("params", [DEFAULT, BuildParams(lanes=4, log_core=4, channels=8)],
                         ids=lambda p: p.tag())
def test_diagrams_parse_and_agree_with_layout(tmp_path, params):
    args = [] if params == DEFAULT else ["--lanes", str(params.lanes), "--log-core", str(params.log_core),
                                         "--channels", str(params.channels)]
    r = _draw(tmp_path, *args)
    assert r.returncode == 0, r.stderr
    written = [Path(line) for line in r.stdout.split()]
    assert sorted(p.name for p in written) == ["block_diagram.svg", "hbm_channel_map.svg"]
    assert all(p.parent == tmp_path for p in written)

    block = ET.parse(tmp_path / "block_diagram.svg").getroot()
    assert block.tag == f"{SVG}svg"
    text = " ".join(t.text or "" for t in block.iter(f"{SVG}text"))
    assert f"{params.dma_mhz:g} MHz" in text and f"{params.ntt_mhz:g} MHz" in text
    assert f"AXI read masters x {params.channels // 2}" in text
    assert f"lane {params.lanes - 1}" in text
    # the clock-crossing FIFOs as the DMA builds them by default (4 points a 256-bit beat)
    dma = DmaEngine(params)
    assert f"read beats, {4 * dma.fifo_beats} points each" in text
    assert f"write beats, {4 * dma.write_fifo_beats} points each," in text

    _check_map(ET.parse(tmp_path / "hbm_channel_map.svg").getroot(), HbmLayout(params))


def test_committed_pictures_are_current(tmp_path):
    """docs/img holds what the script draws for the default build (rerun the script after a change)."""
    assert _draw(tmp_path).returncode == 0
    for name in ("block_diagram.svg", "hbm_channel_map.svg"):
        assert (REPO / "docs" / "img" / name).read_text() == (tmp_path / name).read_text(), name


def test_bad_parameter_is_one_line_exit_2(tmp_path):
    r = _draw(tmp_path / "out", "--lanes", "3")
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "lanes" in r.stderr
    assert not (tmp_path / "out").exists()
