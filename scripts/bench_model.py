"""`make bench` part 1: the golden model and the host path (numbers go to docs/performance.md).

Measures the model's forward NTT at 2^20 and 2^24, per field at 2^20, 2^24 and the largest size up to
the field's 2-adicity that fits the machine (``--fields-max-log-n``, default 27), point-file read and write at 2^24 in the three formats
(text, .bin, .npy; MB/s of file bytes, writes including fsync), and `nantucket run`
end to end on a 2^24 pair with the model backend, each in a child process so its peak RSS is its own.
"""

import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nantucket.tools.perfdoc import checkout, update_section  # noqa: E402

#: the children run in the checkout (or, installed without one, in the current folder)
ROOT = checkout()
PY = sys.executable

CHILD_NTT = """
import time, numpy as np
from nantucket.hw.model import ntt
from nantucket.host.workloads import make_points
x = make_points({log_n}, "random", 1)
t = time.perf_counter(); ntt.ntt(x); print(time.perf_counter() - t)
"""
CHILD_FIELD_NTT = """
import time, numpy as np
from nantucket.hw.model import ntt, field as F
f = F.get({name!r})
x = np.random.default_rng(1).integers(0, f.p, size=1 << {log_n}, dtype=np.uint64)
t = time.perf_counter(); y = ntt.ntt(x, field=f); print(time.perf_counter() - t)
k = 12345 % len(x)                               # one output against its O(N) sum, in Python ints
w = f.root_of_unity(len(x)); wk = pow(w, k, f.p)
acc, t = 0, 1
for v in x[: 1 << 16].tolist():                  # the first 2^16 terms in Python ints, the rest by vmul
    acc += v * t; t = t * wk % f.p
rest = f.vmul(x[1 << 16:], f.vpow(w, (np.arange(1 << 16, len(x), dtype=np.uint64) * np.uint64(k)) % np.uint64(len(x))))
acc = (acc + sum(rest.tolist())) % f.p
assert acc == int(y[k]), "output point 12345 differs from its sum"
"""
CHILD_IO = """
import os, time
from nantucket.host.workloads import make_points
from nantucket.host.points import format_points, read_points, write_points
x = make_points(24, "random", 2)
t = time.perf_counter(); format_points(x); print("format", time.perf_counter() - t, x.size * 19)
for ext in ("txt", "bin", "npy"):
    path = os.path.join({tmp!r}, "points." + ext)
    t = time.perf_counter(); write_points(path, x); w = time.perf_counter() - t
    t = time.perf_counter(); y = read_points(path); r = time.perf_counter() - t
    assert (x == y).all()
    print(ext, w, r, os.path.getsize(path))
    os.unlink(path)
"""


def child(args, label):
    """Run a child process; return (stdout, wall seconds)."""
    print(f"[bench] {label} ...", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"bench: {label} failed with exit status {proc.returncode}")
    print(f"[bench] {label}: {wall:.1f} s", flush=True)
    return out, wall


def run_child(code, label):
    # The child reports its own peak RSS (ru_maxrss, KiB) on its last line.
    wrapper = code + "\nimport resource; print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    out, wall = child([PY, "-c", wrapper], label)
    lines = out.strip().splitlines()
    rss = int(lines[-1].split()[1]) / 1024
    return lines[:-1], wall, rss


def field_rows(max_log_n: int) -> list[str]:
    from nantucket.hw.model.field import FIELDS
    body = ["## Golden model per field", "",
            f"Command: `make bench` (scripts/bench_model.py). Machine: {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}. Forward NTT of random points, "
            f"output point 12345 checked against its sum; the largest size is the field's 2-adicity or "
            f"2^{max_log_n}, whichever is smaller (this machine's memory).", "",
            "| field | size | time | peak RSS |", "|---|---|---|---|"]
    for name, f in FIELDS.items():
        for log_n in sorted({20, 24, min(max_log_n, f.two_adicity)}):
            out, _, rss = run_child(CHILD_FIELD_NTT.format(name=name, log_n=log_n), f"model NTT {name} 2^{log_n}")
            body.append(f"| {name} | 2^{log_n} | {float(out[0]):.2f} s | {rss:.0f} MiB |")
    return body


def main():
    max_log_n = 27
    if "--fields-max-log-n" in sys.argv:
        max_log_n = int(sys.argv[sys.argv.index("--fields-max-log-n") + 1])
    body = field_rows(max_log_n)
    update_section("model-fields", "\n".join(body))
    print("\n".join(body))
    rows = []
    for log_n in (20, 24):
        out, _, rss = run_child(CHILD_NTT.format(log_n=log_n), f"model forward NTT 2^{log_n}")
        rows.append((f"model forward NTT, 2^{log_n} points", f"{float(out[0]):.2f} s", f"{rss:.0f} MiB"))
    with tempfile.TemporaryDirectory() as tmp:
        out, _, rss = run_child(CHILD_IO.format(tmp=tmp), "point files write + read 2^24 (txt, bin, npy)")
        for line in out:
            what, *nums = line.split()
            if what == "format":
                secs, size = float(nums[0]), int(nums[1])
                rows.append(("format 2^24 points as text in memory (no file)",
                             f"{secs:.2f} s = {size / secs / 1e6:.0f} MB/s", f"{rss:.0f} MiB"))
                continue
            w, r, size = float(nums[0]), float(nums[1]), int(nums[2])
            mib = size / 2**20
            rows.append((f"write a 2^24 point file, .{what} ({mib:.0f} MiB, atomic + fsync)",
                         f"{w:.2f} s = {size / w / 1e6:.0f} MB/s", "(same process)"))
            rows.append((f"read a 2^24 point file, .{what}", f"{r:.2f} s = {size / r / 1e6:.0f} MB/s",
                         "(same process)"))
        inp, exp = os.path.join(tmp, "in.txt"), os.path.join(tmp, "exp.txt")
        _, wall = child([str(Path(PY).parent / "nantucket"), "points", "24", inp, exp], "nantucket points 24")
        rows.append(("`nantucket points 24` (generate, transform, write both)", f"{wall:.1f} s", ""))
        code = ("import sys; from nantucket.host.cli import main; "
                f"sys.argv = ['nantucket', 'run', {inp!r}, {exp!r}]; rc = main(sys.argv[1:]); assert rc == 0")
        _, wall, rss = run_child(code, "nantucket run 2^24 --backend model")
        rows.append(("`nantucket run` 2^24 pair, model backend, end to end", f"{wall:.1f} s", f"{rss:.0f} MiB"))
    body = ["## Golden model and host path", "",
            f"Command: `make bench` (scripts/bench_model.py). Machine: {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, {time.strftime('%Y-%m-%d')}.", "",
            "| what | time | peak RSS |", "|---|---|---|"]
    body += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    body += ["", "Targets: model forward NTT of 2^24 at most 10 s with peak RSS under 4 GiB; "
             "`nantucket run` on a 2^24 pair under 40 s; text point files read and written at 150 MB/s or "
             "more (2^24 points in about 2 s each way)."]
    update_section("model", "\n".join(body))
    print("\n".join(body))


if __name__ == "__main__":
    main()
