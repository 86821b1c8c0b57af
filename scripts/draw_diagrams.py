"""Draw the pictures of docs/architecture.md: the kernel's block diagram and the HBM channel map.

    .venv/bin/python scripts/draw_diagrams.py [--out docs/img] [--lanes 16 --log-core 12 --channels 32]

Writes ``block_diagram.svg`` and ``hbm_channel_map.svg`` into ``--out`` and prints their paths. Plain SVG
written by hand (no plotting library). Every number on the pictures comes from the build parameters and,
for the channel map, from :class:`hw.model.layout.HbmLayout`, so the pictures follow the code when it
changes. The channel map's cells carry ``data-*`` attributes (channel, pass, direction, buffer) so
tests/test_diagrams.py can read the map back and compare it with the layout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from nantucket.hw.dma.engine import READ_FIFO_BEATS, WRITE_FIFO_BEATS
from nantucket.hw.model.layout import HbmLayout, points_per_beat
from nantucket.hw.model.params import DEFAULT, BuildParams
from nantucket.hw.model.schedule import first_half_stages
from nantucket.tools.perfdoc import doc_path

#: docs/img of the checkout (None installed without one: --out is then required)
IMG = doc_path("docs/img")
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"

DMA_FILL, DMA_EDGE = "#e6effa", "#4a78b5"
NTT_FILL, NTT_EDGE = "#fcefe1", "#c47a2c"
CDC_FILL, CDC_EDGE = "#fff6c4", "#a88a00"
BOX_FILL, BOX_EDGE = "#ffffff", "#555555"
READ_FILL, WRITE_FILL = "#9cc3ec", "#f2b277"


class Svg:
    """A minimal SVG writer: boxes, text, arrows; no dependencies."""

    def __init__(self, width: int, height: int, title: str):
        self.width, self.height = width, height
        self._items = [f"<title>{escape(title)}</title>",
                       '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                       'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
                       'fill="#333333"/></marker></defs>',
                       f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>']

    def rect(self, x, y, w, h, fill=BOX_FILL, edge=BOX_EDGE, radius=4, dash=False, **data):
        attrs = "".join(f" data-{k.replace('_', '-')}={quoteattr(str(v))}" for k, v in data.items())
        style = ' stroke-dasharray="6,4"' if dash else ""
        self._items.append(f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="{radius}" fill="{fill}" '
                           f'stroke="{edge}" stroke-width="1.2"{style}{attrs}/>')

    def text(self, x, y, s, size=12, anchor="start", weight="normal", color="#222222", italic=False):
        slant = ' font-style="italic"' if italic else ""
        self._items.append(f'<text x="{x}" y="{y}" font-family="{FONT}" font-size="{size}" '
                           f'text-anchor="{anchor}" font-weight="{weight}" fill="{color}"{slant}>'
                           f'{escape(s)}</text>')

    def box(self, x, y, w, h, lines, fill=BOX_FILL, edge=BOX_EDGE, size=12, **data):
        """A box with centred lines of text, the first one bold."""
        self.rect(x, y, w, h, fill, edge, **data)
        step = size + 4
        top = y + h / 2 - step * (len(lines) - 1) / 2 + size * 0.35
        for i, line in enumerate(lines):
            self.text(x + w / 2, top + i * step, line, size=size - (0 if i == 0 else 1), anchor="middle",
                      weight="bold" if i == 0 else "normal")

    def arrow(self, points, label=None, label_at=None, both=False, size=11, anchor="middle"):
        path = " ".join(f"{x},{y}" for x, y in points)
        start = ' marker-start="url(#arrow)"' if both else ""
        self._items.append(f'<polyline points="{path}" fill="none" stroke="#333333" stroke-width="1.4" '
                           f'marker-end="url(#arrow)"{start}/>')
        if label:
            lx, ly = label_at or ((points[0][0] + points[-1][0]) / 2, (points[0][1] + points[-1][1]) / 2 - 5)
            self.text(lx, ly, label, size=size, anchor=anchor, color="#333333")

    def render(self) -> str:
        body = "\n  ".join(self._items)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
                f'viewBox="0 0 {self.width} {self.height}">\n  {body}\n</svg>\n')


# -- the block diagram ----------------------------------------------------------------------------------

def _dma_domain(svg: Svg, p: BuildParams, r: int) -> None:
    """Left column: control, sequencer and the AXI masters (ap_clk)."""
    svg.rect(150, 70, 300, 460, DMA_FILL, DMA_EDGE, radius=8)
    svg.text(300, 92, f"dma domain: ap_clk, {p.dma_mhz:g} MHz", 13, "middle", "bold", DMA_EDGE)
    svg.box(176, 110, 254, 62, ["control slave (hw/control.py)", "s_axi_control registers,",
                                "map in hw/model/regmap.py"])
    svg.box(176, 196, 254, 62, ["sequencer (hw/kernel.py)", "check log_n, pass 1, pass 2,",
                                "done when the last B is in"])
    svg.arrow([(303, 172), (303, 196)])
    svg.box(176, 300, 254, 66, [f"AXI read masters x {r}", "whole buffer in 8-beat INCR bursts,",
                                "never more than the FIFO can take"])
    svg.box(176, 430, 254, 66, [f"AXI write masters x {r}", "AW from the queued burst addresses,",
                                "W from the data FIFO, count B"])


def _crossing(svg: Svg, r: int, read_points: int, write_points: int) -> None:
    """Middle column: everything that crosses between the two clocks."""
    svg.text(535, 92, "clock crossings", 13, "middle", "bold", CDC_EDGE)
    svg.box(465, 196, 140, 62, ["run + pass: one", "FFSynchronizer;", "start: PulseSync."], CDC_FILL, CDC_EDGE, 11)
    svg.box(465, 300, 140, 66, [f"AsyncFIFO x {r}", "read beats,", f"{read_points} points each"],
            CDC_FILL, CDC_EDGE, 11)
    svg.box(465, 422, 140, 82, [f"AsyncFIFO x {r}", "write beats,", f"{write_points} points each,",
                                "+ burst addresses"], CDC_FILL, CDC_EDGE, 11)
    svg.arrow([(430, 227), (465, 227)])
    svg.arrow([(430, 333), (465, 333)])
    svg.arrow([(465, 463), (430, 463)])


def _lane(svg: Svg, x: int, y: int, index: str, k: int) -> None:
    a = first_half_stages(k)
    b = k - a
    svg.rect(x, y, 278, 50, "#fffaf3", NTT_EDGE)
    svg.text(x + 8, y + 16, f"lane {index}", 11, weight="bold")
    cells = [(f"HalfChain({a})", 66), ("corner turn", 62), (f"HalfChain({b})", 66), ("bit rev.", 46)]
    cx = x + 8
    for i, (label, w) in enumerate(cells):
        svg.rect(cx, y + 24, w, 20, "#ffffff", "#999999", radius=2)
        svg.text(cx + w / 2, y + 38, label, 9, "middle")
        if i:
            svg.arrow([(cx - 6, y + 34), (cx, y + 34)])
        cx += w + 6


def _ntt_domain(svg: Svg, p: BuildParams) -> None:
    """Right column: the DMA's engine-side blocks and the NTT engine (ap_clk_2)."""
    svg.rect(620, 70, 530, 460, NTT_FILL, NTT_EDGE, radius=8)
    svg.text(885, 92, f"ntt domain: ap_clk_2, {p.ntt_mhz:g} MHz", 13, "middle", "bold", NTT_EDGE)
    svg.box(635, 300, 150, 66, ["read assembler", "units A and B", "-> one payload"])
    svg.box(635, 422, 150, 82, ["write path", "pass 1: corner turn", "(L x L blocks),",
                                "splitters to beats"])
    svg.arrow([(605, 333), (635, 333)])
    svg.arrow([(635, 463), (605, 463)])
    shown = [str(i) for i in range(p.lanes)] if p.lanes <= 3 else ["0", "1", None, str(p.lanes - 1)]
    lanes_end = 222 + sum(34 if i is None else 62 for i in shown)
    svg.rect(850, 110, 290, lanes_end + 58 - 110, "#ffffff", NTT_EDGE, radius=6)
    svg.text(995, 130, "NTT engine (hw/engine.py)", 12, "middle", "bold")
    svg.box(856, 142, 278, 56, ["twiddle generator (hw/twiddles.py)", "ROM of 2^k - 1 twiddles,",
                                "times the running c^(2^s) in pass 1"], size=11)
    y = 222
    for index in shown:
        if index is None:
            svg.text(995, y + 20, "...", 16, "middle", "bold")
            y += 34
            continue
        _lane(svg, 856, y, index, p.log_core)
        y += 62
    svg.text(995, y + 14, f"{p.lanes} lanes x 2^{p.log_core}-point transforms,", 10, "middle", italic=True)
    svg.text(995, y + 28, "2 points in and 2 out per lane and cycle;", 10, "middle", italic=True)
    svg.text(995, y + 42, "twiddles (w_first, w_rest) ride with the points", 10, "middle", italic=True)
    svg.arrow([(785, 333), (850, 333)], "points_in", (817, 325), size=10)
    svg.arrow([(850, 463), (785, 463)], "points_out", (817, 455), size=10)
    svg.arrow([(995, 198), (995, 222)])


def block_diagram(p: BuildParams) -> str:
    """The kernel as blocks and clock domains, for build ``p`` (the DMA's default FIFO depths)."""
    r = p.channels // 2
    svg = Svg(1170, 650, f"nantucket kernel, build {p.tag()}")
    svg.text(585, 28, f"nantucket kernel (build {p.tag()}: {p.lanes} lanes, k = {p.log_core}, "
                      f"{p.channels} HBM channels, N = 2^{p.log_n})", 15, "middle", "bold")
    svg.rect(138, 44, 1024, 498, "none", "#333333", radius=10, dash=True)
    svg.text(150, 62, "VitisKernel / NttKernel (hw/kernel.py)", 12, weight="bold", color="#333333")
    svg.box(10, 110, 110, 62, ["host", "XRT driver", "(host/xrt/)"])
    svg.text(65, 192, "s_axi_control", 10, "middle")
    svg.text(65, 205, "(AXI4-Lite)", 10, "middle")
    svg.text(65, 218, "interrupt", 10, "middle")
    _dma_domain(svg, p, r)
    _crossing(svg, r, READ_FIFO_BEATS * points_per_beat(p), WRITE_FIFO_BEATS * points_per_beat(p))
    _ntt_domain(svg, p)
    svg.arrow([(120, 141), (176, 141)], both=True)
    svg.arrow([(605, 227), (850, 227)], "start, pass", (727, 220), size=10)
    # HBM below the kernel; the read path runs up the domain's left margin so it crosses no block
    svg.box(150, 580, 300, 56, [f"HBM: {p.channels} pseudo-channels", "256-bit AXI ports, 4 points a beat"],
            "#eeeeee", "#555555")
    svg.arrow([(163, 580), (163, 333), (176, 333)], "read", (170, 562), size=10, anchor="start")
    svg.arrow([(303, 496), (303, 580)], "write", (310, 562), size=10, anchor="start")
    svg.text(460, 598, f"m00_axi .. m{p.channels - 1:02d}_axi: one AXI4 master per pseudo-channel;", 11)
    svg.text(460, 614, "a pass reads one half of the channels and writes the other half", 11)
    svg.text(460, 630, "(see hbm_channel_map.svg)", 11, italic=True)
    return svg.render()


# -- the HBM channel map ----------------------------------------------------------------------------------

def channel_roles(layout: HbmLayout) -> dict[tuple[int, int], tuple[str, str]]:
    """(pass, physical channel) -> (direction, buffer) for every channel a pass touches."""
    roles = {}
    for pass_index, (read_buf, write_buf) in ((1, ("input", "state")), (2, ("state", "output"))):
        for ch in layout.read_channels(pass_index):
            roles[(pass_index, ch)] = ("read", read_buf)
        for ch in layout.write_channels(pass_index):
            roles[(pass_index, ch)] = ("write", write_buf)
    return roles


def round_zero_rows(layout: HbmLayout) -> dict[int, list[int]]:
    """Physical channel -> the state rows that pass-1 round 0 writes there in column block 0."""
    rows: dict[int, list[int]] = {}
    for row in range(layout.params.lanes):
        channel, _beat = layout.unit_place("state", row, 0)
        rows.setdefault(int(channel), []).append(row)
    return rows


def _map_legend(svg: Svg, y: int) -> None:
    x = 20
    for fill, label in ((READ_FILL, "read by the pass (R)"), (WRITE_FILL, "written by the pass (W)")):
        svg.rect(x, y - 11, 16, 14, fill, "#777777", radius=2)
        svg.text(x + 22, y, label, 11)
        x += 200


def _map_cells(svg: Svg, layout: HbmLayout, left: int, cell: int, top: int) -> int:
    """The grid: one column per channel; returns the y below it."""
    c = layout.channels
    logical = {ch: q for buf in ("input", "state") for q, ch in enumerate(layout.buffer_channels(buf))}
    holder = {ch: "state" for ch in layout.buffer_channels("state")}
    holder.update({ch: "input/output" for ch in layout.buffer_channels("input")})
    roles = channel_roles(layout)
    spread = round_zero_rows(layout)
    short = {"input": "in", "state": "st", "output": "out"}
    svg.text(left - 8, top, "HBM channel", 11, "end")
    svg.text(left - 8, top + 16, "logical q", 10, "end", color="#555555")
    for ch in range(c):
        svg.text(left + ch * cell + cell / 2, top, str(ch), 10, "middle")
        svg.text(left + ch * cell + cell / 2, top + 16, str(logical[ch]), 9, "middle", color="#555555")
    y = top + 28
    svg.text(left - 8, y + 21, "holds", 12, "end", "bold")
    for ch in range(c):
        buf = holder[ch]
        svg.rect(left + ch * cell + 1, y, cell - 2, 32, "#ffffff", "#999999", radius=2, channel=ch, holds=buf)
        svg.text(left + ch * cell + cell / 2, y + 21, "st" if buf == "state" else "i/o", 9, "middle")
    for pass_index in (1, 2):
        y += 40
        svg.text(left - 8, y + 21, f"pass {pass_index}", 12, "end", "bold")
        for ch in range(c):
            direction, buf = roles[(pass_index, ch)]
            fill = READ_FILL if direction == "read" else WRITE_FILL
            x = left + ch * cell
            svg.rect(x + 1, y, cell - 2, 32, fill, "#777777", radius=2, channel=ch, pass_index=pass_index,
                     direction=direction, buffer=buf)
            svg.text(x + cell / 2, y + 14, "R" if direction == "read" else "W", 10, "middle", "bold")
            svg.text(x + cell / 2, y + 27, short[buf], 9, "middle")
    y += 40
    svg.text(left - 8, y + 14, "pass-1 round 0,", 10, "end")
    svg.text(left - 8, y + 27, "block 0: state rows", 10, "end")
    for ch in range(c):
        rows = spread.get(ch, [])
        label = ",".join(map(str, rows)) if len(rows) <= 1 else f"{len(rows)} rows"
        svg.rect(left + ch * cell + 1, y, cell - 2, 32, "#ffffff" if rows else "#f6f6f6", "#bbbbbb", radius=2,
                 channel=ch, round0_rows=" ".join(map(str, rows)))
        svg.text(left + ch * cell + cell / 2, y + 21, label, 9, "middle")
    return y + 32


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} bytes"


def hbm_channel_map(layout: HbmLayout) -> str:
    """Which HBM pseudo-channel holds which buffer and what each pass does with it."""
    p = layout.params
    cell, left = 30, 150
    width = max(left + layout.channels * cell + 20, 960)
    svg = Svg(width, 400, f"HBM channel map, build {p.tag()}")
    svg.text(20, 26, f"HBM channel map (build {p.tag()}: N = 2^{p.log_n} points, {layout.channels} "
                     f"pseudo-channels, {layout.group} read and {layout.group} written per pass)", 14, weight="bold")
    y = _map_cells(svg, layout, left, cell, 56)
    _map_legend(svg, y + 26)
    notes = [
        f"Logical channel q (0..{layout.group - 1}) of the input and output buffers is HBM channel 2q, "
        f"of the pass-1 state 2q + 1; each buffer takes {layout.points_per_channel:,} points "
        f"({_size(layout.channel_bytes)}) per channel.",
        "Pass 1 reads the input and writes the state; pass 2 reads the state and writes the output over "
        "the input, at the same offsets.",
        "No channel is both read and written in a pass, so no HBM channel turns its bus around.",
        f"The {p.lanes} state rows one pass-1 round emits in a column block (bottom row) land on "
        f"{len(round_zero_rows(layout))} distinct channels: the XOR term of the layout spreads them.",
    ]
    for i, line in enumerate(notes):
        svg.text(20, y + 58 + i * 20, line, 11)
    svg.text(20, y + 62 + len(notes) * 20, "in = input x, st = state between the passes, out = output X, "
             "i/o = input, then output over it", 10, italic=True, color="#555555")
    return svg.render()


def write_diagrams(out_dir: Path, params: BuildParams = DEFAULT) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("block_diagram.svg", block_diagram(params)),
                       ("hbm_channel_map.svg", hbm_channel_map(HbmLayout(params)))):
        path = out_dir / name
        tmp = path.with_suffix(".svg.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
        written.append(path)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=IMG, help="output directory (default docs/img; required "
                    "installed without a checkout)")
    ap.add_argument("--lanes", type=int, default=DEFAULT.lanes)
    ap.add_argument("--log-core", type=int, default=DEFAULT.log_core)
    ap.add_argument("--channels", type=int, default=DEFAULT.channels)
    args = ap.parse_args(argv)
    if args.out is None:
        print("draw_diagrams: --out DIR: installed without a checkout there is no docs/img to draw into",
              file=sys.stderr)
        return 2
    try:
        params = BuildParams(lanes=args.lanes, log_core=args.log_core, channels=args.channels)
        HbmLayout(params)
    except (TypeError, ValueError) as exc:
        print(f"draw_diagrams: {exc}", file=sys.stderr)
        return 2
    for path in write_diagrams(args.out, params):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
