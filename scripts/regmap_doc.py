#!/usr/bin/env python3
"""Write the register map table of docs/build.md from hw/model/regmap.py (the default build).

    .venv/bin/python scripts/regmap_doc.py          # also run by `make diagrams`

Only the text between ``<!-- begin regmap ... -->`` and ``<!-- end regmap -->`` changes;
tests/test_regmap.py fails when the committed table differs from what this writes.
"""

import re
import sys
from pathlib import Path

from nantucket.hw.model.params import DEFAULT
from nantucket.hw.model.regmap import RegisterMap

DOC = Path(__file__).resolve().parent.parent / "docs" / "build.md"
BEGIN = "<!-- begin regmap (scripts/regmap_doc.py) -->"
END = "<!-- end regmap -->"


def section() -> str:
    """The generated block, markers included."""
    intro = (f"Generated from `hw/model/regmap.py` for the default build {DEFAULT.tag()}; with C channels the "
             "run's arguments after the pointers start at 0x18 + 8C.")
    return f"{BEGIN}\n{intro}\n\n{RegisterMap(DEFAULT).markdown_table()}\n{END}"


def update(doc: Path = DOC) -> None:
    text = doc.read_text()
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"regmap_doc: {doc} has no '{BEGIN}' ... '{END}' block")
    doc.write_text(pattern.sub(lambda _: section(), text))


if __name__ == "__main__":
    update()
    sys.exit(0)
