"""scripts/bench_sizes.py's progress: the ETA it prints after the small sizes is the right order of magnitude."""
import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_sizes", REPO / "scripts" / "bench_sizes.py")
B = importlib.util.module_from_spec(spec)
spec.loader.exec_module(B)


def run_seconds(n: int) -> float:
    """A size's wall time as measured on the simulated card (2026-11-29, L16_k12_C32): about 25 s for the
    small sizes, about 490 s for 2^24 (kernel 431 s, preload and read-back 56 s)."""
    return 25 + (490 - 25) * (1 << n) / (1 << 24)


def test_eta_after_the_small_sizes_is_within_twice_the_time_left():
    sizes = list(range(8, 25))
    for done in (1, 3, 8, 14, 16):
        elapsed = sum(run_seconds(n) for n in sizes[:done])
        left = sum(run_seconds(n) for n in sizes[done:])
        eta = B.eta_seconds(sizes, done, elapsed)
        assert left / 2 <= eta <= left * 2, (done, eta, left)


def test_eta_is_zero_after_the_last_size():
    assert B.eta_seconds([8, 9, 10], 3, 60.0) == 0
