"""Update one section of docs/performance.md, leaving every other section alone.

Sections are delimited by ``<!-- begin NAME -->`` / ``<!-- end NAME -->``; a missing section is appended.
"""

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "performance.md"


def update_section(name: str, body: str, doc: Path = DOC) -> None:
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    text = doc.read_text() if doc.exists() else "# Measured performance\n"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    doc.write_text(text)
