"""Update one section of docs/performance.md, leaving every other section alone; and the small helpers
the tools share (the checkout's docs/, size lists on the command line, a step progress line).

Sections are delimited by ``<!-- begin NAME -->`` / ``<!-- end NAME -->``; a missing section is appended.

Where the tools write: the checkout they run from (an editable install, ``make setup``), found by
:func:`checkout` the way the build folder is (hw/flow/build_root.py). Installed without one (a wheel, or
``pip install .``) there is no docs/ to update: :data:`DOC` and :func:`doc_path` are None, and
:func:`update_section` prints the section, markers included, on stdout instead of writing a file.
"""

import re
import sys
import time
from pathlib import Path

from nantucket.hw.flow.build_root import checkout_root


def checkout() -> Path | None:
    """The repository these tools run from (the folder holding scripts/, docs/ and the project's
    pyproject.toml), or None when they are installed without one."""
    return checkout_root(Path(__file__).resolve().parent.parent)


def doc_path(rel: str) -> Path | None:
    """``rel`` (``"docs/build.md"``) in the checkout, or None when there is no checkout to write into."""
    root = checkout()
    return root / rel if root is not None else None


#: docs/performance.md of the checkout; None installed without one
DOC = doc_path("docs/performance.md")


def update_section(name: str, body: str, doc: Path | None = DOC) -> Path | None:
    """Write section ``name`` of ``doc``; returns ``doc``. With no ``doc`` (installed without a checkout,
    and no path given) the section goes to stdout, markers included, no file is written, and the return
    is None: a tool says "wrote X" only when it did."""
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if doc is None:
        print(block, flush=True)
        print(f"(no docs/performance.md: installed without a checkout; section {name!r} printed above, "
              "nothing written)", file=sys.stderr, flush=True)
        return None
    text = doc.read_text() if doc.exists() else "# Measured performance\n"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    doc.write_text(text)
    return doc


def parse_list(text: str) -> list[int]:
    """``"16,18,20-22"`` -> [16, 18, 20, 21, 22]."""
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


class StepProgress:
    """Call once per finished step of ``work``: ``[elapsed] line; P% done, ETA m min`` on stderr. Steps of
    unequal cost take ``weights`` (one a step, in any unit) in place of ``work``: the percent and the ETA
    are by weight."""

    def __init__(self, work: int = 1, weights: list[float] | None = None):
        self.weights = list(weights) if weights is not None else [1] * max(1, work)
        self.done, self.t0 = 0, time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.t0

    def eta(self, elapsed: float) -> float:
        """Seconds left after the steps done so far took ``elapsed``."""
        return elapsed / sum(self.weights[:self.done]) * sum(self.weights[self.done:])

    def __call__(self, line: str) -> None:
        self.done += 1
        el = self.elapsed()
        pct = int(100 * sum(self.weights[:self.done]) / sum(self.weights))
        print(f"[{el:7.1f} s] {line}; {pct}% done, ETA {self.eta(el) / 60:.1f} min", file=sys.stderr, flush=True)
