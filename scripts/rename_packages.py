"""Rewrite the repository to the installed package names: hw -> nantucket.hw, host -> nantucket.host,
sim -> nantucket.sim (nothing but ``nantucket`` lands in site-packages).

pyproject.toml maps the folders hw/, host/ and sim/ to those names, so the bare names no longer import.
This rewrites every place that names them as modules, mechanically and idempotently (a second run
changes nothing):

- import statements, in code and in examples (docstrings, Markdown): ``from hw.x import y``,
  ``import host.cli as cli``; a plain ``import hw.synth`` also renames the file's ``hw.synth`` references;
- string literals that are a module path of ours (``"sim.bench_arith"``, ``"host.cli:main"``,
  ``"host.xrt.XrtBackend"``: the leading module must exist in the repository, so the backend name
  ``"sim"`` or the file name ``"sim.vvp"`` stay), and every ``test_module="sim..."`` argument;
- command lines (lines that run ``python``/``$(PY)``): ``-m sim.runner ... sim.bench_arith`` gets the
  new names and ``python sim/bench_dma.py`` becomes ``python -m nantucket.sim.bench_dma``;
- in the user-facing docs (README.md, docs/api.md), backticked module names such as `host.backends`;
- the lines that put the repository root on ``sys.path`` (only there so that ``hw`` would import).

Prose that mentions a module by its folder path (a comment saying "from hw.model.regmap") is left alone.

Usage: python scripts/rename_packages.py [--check] [ROOT]    (--check: list what would change, exit 1 if any)
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

OLD = ("hw", "host", "sim")
NEW = "nantucket"
SKIP_DIRS = {".git", ".venv", "venv", "build", "sim_build", "__pycache__", ".pytest_cache", "node_modules"}
#: Docs written for users of the installed package: module names in backticks get their installed names.
USER_DOCS = ("README.md", "docs/api.md")

_OLD_RE = "|".join(OLD)
_FROM_IMPORT = re.compile(rf"(?<![\w.])from(?P<sp>\s+)(?P<mod>(?:{_OLD_RE})(?:\.\w+)*)(?P<imp>\s+import\b)")
_IMPORT_LINE = re.compile(r"^(?P<indent>[ \t]*(?:>>> )?)import[ \t]+(?P<names>[\w. \t,]+?)(?P<rest>[ \t]*(?:#.*)?)$",
                          re.MULTILINE)
_QUOTED = re.compile(rf"""(?P<q>["'])(?P<mod>(?:{_OLD_RE})(?:\.[A-Za-z_]\w*)+)(?P<tail>:[A-Za-z_]\w*)?(?P=q)""")
_TEST_MODULE = re.compile(rf"""(\btest_module\s*=\s*["'])(?=(?:{_OLD_RE})\.)""")
_COMMAND_LINE = re.compile(r"python|\$\(PY\)")
_SCRIPT_RUN = re.compile(rf"(?P<py>python3?|\$\(PY\))(?P<sp>[ \t]+)(?P<path>(?:{_OLD_RE})(?:/\w+)+)\.py\b")
_DOTTED = re.compile(rf"(?<![\w./-])(?P<mod>(?:{_OLD_RE})(?:\.[A-Za-z_]\w*)+)")
_BACKTICKED = re.compile(rf"(?<=`)(?P<mod>(?:{_OLD_RE})(?:\.[A-Za-z_]\w*)+)(?=[`(.:\[' ])")
# `sys.path.insert(0, str(Path(__file__).resolve().parent.parent))` and the guarded form
# `if str(ROOT) not in sys.path:\n    sys.path.insert(0, str(ROOT))` (ROOT: the repository root).
_ROOT_ON_PATH = re.compile(r"(?P<between>(?<=\n\n))?^[ \t]*sys\.path\.insert\(0, str\(Path\(__file__\)\.resolve\(\)"
                           r"\.parent\.parent\)\)\n(?(between)(?P<blank>\n)?)", re.MULTILINE)
_GUARDED_ROOT_ON_PATH = re.compile(r"^[ \t]*if str\((?P<var>\w+)\) not in sys\.path:\n[ \t]+"
                                   r"sys\.path\.insert\(0, str\((?P=var)\)\)\n", re.MULTILINE)


def _keep_comment_column(old: str, new: str) -> str:
    """``new`` (``old`` with names made longer) with its trailing comment back in ``old``'s column when
    the padding before it allows (two spaces at least)."""
    comment = re.search(r"(?<=\S)( {2,})#", new)
    grown = len(new) - len(old)
    if not comment or grown <= 0:
        return new
    pad = comment.group(1)
    keep = max(2, len(pad) - grown)
    return new[: comment.start(1)] + " " * keep + new[comment.end(1):]


def _from_imports(text: str) -> str:
    """``from hw.x import (a,\n b)`` -> ``from nantucket.hw.x import (a,\n b)``, continuation lines that were
    aligned with the parenthesis moved along with it."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        new = _FROM_IMPORT.sub(lambda m: f"from{m.group('sp')}{NEW}.{m.group('mod')}{m.group('imp')}", line)
        if new == line:
            continue
        lines[i] = _keep_comment_column(line, new)
        paren = line.find("(", line.find(" import"))
        still_open = paren >= 0 and ")" not in line[paren:].split("#")[0]
        j = i + 1
        while still_open and j < len(lines):
            following = lines[j]
            if len(following) - len(following.lstrip(" ")) == paren + 1:
                lines[j] = " " * (len(new) - len(line)) + following
            still_open = ")" not in following.split("#")[0]
            j += 1
    return "\n".join(lines)


class Renamer:
    def __init__(self, root: Path):
        self.root = root

    # -- what is ours -----------------------------------------------------------------------------

    def is_module(self, dotted: str) -> bool:
        """``dotted`` starts with a module or subpackage of ours (the rest may be submodules or attributes):
        ``sim.runner``, ``host.xrt.XrtBackend``, ``hw.model.field``; not ``sim.vvp`` or a bare ``sim``."""
        parts = dotted.split(".")
        if parts[0] not in OLD or len(parts) < 2:
            return False
        path = self.root / parts[0]
        if not (path / "__init__.py").is_file():
            return False
        part = parts[1]
        return (path / f"{part}.py").is_file() or (path / part / "__init__.py").is_file()

    def _new_if_module(self, match: re.Match) -> str:
        mod = match.group("mod")
        return f"{NEW}.{mod}" if self.is_module(mod) else mod

    # -- rules ------------------------------------------------------------------------------------

    @staticmethod
    def imports(text: str) -> str:
        text = _from_imports(text)
        renamed_refs: list[str] = []

        def one_line(m: re.Match) -> str:
            names, packages = [], []                     # packages: bare `import hw` -> from nantucket import hw
            for alias in m.group("names").split(","):
                lead = alias[: len(alias) - len(alias.lstrip())]
                alias = alias.strip()
                mod, _, as_name = (w.strip() for w in alias.partition(" as "))
                if mod.split(".")[0] in OLD:
                    if as_name:
                        alias = f"{NEW}.{mod} as {as_name}"
                    elif "." in mod:
                        alias = f"{NEW}.{mod}"           # binds `nantucket`: its references change below
                        renamed_refs.append(mod)
                    else:
                        packages.append(mod)
                        continue
                names.append(lead + alias)
            lines = [f"import {','.join(names).lstrip()}"] if names else []
            lines += [f"from {NEW} import {', '.join(packages)}"] if packages else []
            return m.group("indent") + ("\n" + m.group("indent")).join(lines) + m.group("rest")

        text = _IMPORT_LINE.sub(lambda m: _keep_comment_column(m.group(0), one_line(m)), text)
        for mod in sorted(set(renamed_refs), key=len, reverse=True):
            text = re.sub(rf"(?<![\w.]){re.escape(mod)}\b", f"{NEW}.{mod}", text)
        return text

    def strings(self, text: str) -> str:
        def quoted(m: re.Match) -> str:
            if not self.is_module(m.group("mod")):
                return m.group(0)
            return f"{m.group('q')}{NEW}.{m.group('mod')}{m.group('tail') or ''}{m.group('q')}"
        text = _QUOTED.sub(quoted, text)
        return _TEST_MODULE.sub(lambda m: f"{m.group(1)}{NEW}.", text)

    def command_lines(self, text: str) -> str:
        def line(m: re.Match) -> str:
            s = m.group(0)
            if not _COMMAND_LINE.search(s):
                return s
            s = _SCRIPT_RUN.sub(lambda r: f"{r.group('py')}{r.group('sp')}-m {NEW}.{r.group('path').replace('/', '.')}"
                                if self.is_module(r.group("path").replace("/", ".")) else r.group(0), s)
            return _keep_comment_column(m.group(0), _DOTTED.sub(self._new_if_module, s))
        return re.sub(r"^.*$", line, text, flags=re.MULTILINE)

    def backticked(self, text: str) -> str:
        return _BACKTICKED.sub(self._new_if_module, text)

    def root_on_path(self, text: str, path: Path) -> str:
        if path.parent.parent != self.root:     # `parent.parent` is the root only one folder down
            return text
        # a removed line between two blank lines takes one of them along
        new = _ROOT_ON_PATH.sub("", text)

        def guarded(m: re.Match) -> str:
            defined = re.search(rf"^{m.group('var')} = Path\(__file__\)\.resolve\(\)\.parent\.parent$", new,
                                re.MULTILINE)
            return "" if defined else m.group(0)
        new = _GUARDED_ROOT_ON_PATH.sub(guarded, new)
        if new == text:
            return text
        # imports that only served the removed lines
        for name, line in (("sys", "import sys\n"), ("Path", "from pathlib import Path\n")):
            if len(re.findall(rf"\b{name}\b", new)) == 1 and re.search(rf"^{re.escape(line)}", new, re.MULTILINE):
                new = re.sub(rf"^{re.escape(line)}", "", new, count=1, flags=re.MULTILINE)
        return new

    # -- files ------------------------------------------------------------------------------------

    def rewrite(self, path: Path, text: str) -> str:
        rel = path.relative_to(self.root).as_posix()
        if path.suffix == ".py":
            text = self.root_on_path(self.strings(self.imports(text)), path)
        elif path.suffix == ".md":
            text = self.imports(text)
            if rel in USER_DOCS:
                text = self.backticked(text)
        return self.command_lines(text)

    def files(self):
        for path in sorted(self.root.rglob("*")):
            rel = path.relative_to(self.root)
            if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts) or not path.is_file():
                continue
            if path.resolve() == Path(__file__).resolve():     # its docstring shows the old names
                continue
            if path.suffix in (".py", ".md", ".mk") or path.name == "Makefile" or rel.parts[0] == ".ci":
                yield path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", nargs="?", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--check", action="store_true", help="only list the files that would change; exit 1 if any")
    args = ap.parse_args(argv)
    renamer = Renamer(args.root.resolve())
    changed = []
    for path in renamer.files():
        text = path.read_text()
        new = renamer.rewrite(path, text)
        if new != text:
            changed.append(path.relative_to(renamer.root).as_posix())
            if not args.check:
                path.write_text(new)
    for rel in changed:
        print(rel)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
