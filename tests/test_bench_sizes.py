"""The benches' progress (scripts/perfdoc.py's StepProgress, with bench_sizes' weights): the ETA printed
after the small sizes is the right order of magnitude."""
from nantucket.tools import bench_sizes as B
from nantucket.tools.perfdoc import StepProgress


def run_seconds(n: int) -> float:
    """A size's wall time as measured on the simulated card (2026-11-29, L16_k12_C32): about 25 s for the
    small sizes, about 490 s for 2^24 (kernel 431 s, preload and read-back 56 s)."""
    return 25 + (490 - 25) * (1 << n) / (1 << 24)


def test_eta_after_the_small_sizes_is_within_twice_the_time_left():
    sizes = list(range(8, 25))
    step = StepProgress(weights=B.size_weights(sizes))
    for done in (1, 3, 8, 14, 16):
        step.done = done
        elapsed = sum(run_seconds(n) for n in sizes[:done])
        left = sum(run_seconds(n) for n in sizes[done:])
        assert left / 2 <= step.eta(elapsed) <= left * 2, (done, step.eta(elapsed), left)


def test_progress_line_percent_and_eta_by_weight(capsys):
    step = StepProgress(weights=[1, 3])
    step("first")
    assert "first; 25% done, ETA" in capsys.readouterr().err
    step("second")
    assert "second; 100% done, ETA 0.0 min" in capsys.readouterr().err


def test_equal_steps_without_weights():
    step = StepProgress(4)
    step.done = 1
    assert step.eta(10.0) == 30.0
