#!/usr/bin/env python3
"""Write the register map table of docs/build.md from hw/model/regmap.py (the default build).

    .venv/bin/python -m nantucket.tools.regmap_doc [--doc PATH]    # also run by `make diagrams`

Only the text between ``<!-- begin regmap ... -->`` and ``<!-- end regmap -->`` changes;
tests/test_regmap.py fails when the committed table differs from what this writes. Installed without a
checkout (no docs/build.md) and given no ``--doc``, it prints the block on stdout and writes nothing.
"""

import argparse
import re
import sys
from pathlib import Path

from nantucket.hw.model.params import DEFAULT
from nantucket.hw.model.regmap import RegisterMap
from nantucket.tools.perfdoc import doc_path

#: docs/build.md of the checkout (None installed without one)
DOC = doc_path("docs/build.md")
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nantucket.tools.regmap_doc", description=__doc__.splitlines()[0])
    ap.add_argument("--doc", type=Path, default=DOC, help="the Markdown file holding the block (default docs/build.md; "
                    "installed without a checkout: none, the block goes to stdout)")
    args = ap.parse_args(argv)
    if args.doc is None:
        print(section())
        return 0
    try:
        update(args.doc)
    except OSError as e:
        print(f"regmap_doc: --doc {args.doc}: {e.strerror}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
