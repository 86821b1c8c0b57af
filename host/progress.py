"""A one-line progress display on stderr for long CLI work: stage, percent, elapsed time and ETA.

The work is a list of stages with estimated costs in seconds (from the data size and the backend);
the estimates are rescaled by how the finished stages compared with theirs, and a stage running over
its estimate is taken to be 80 % done; the percent is the time spent over the time spent plus the ETA.
When a stage's cost cannot be estimated (a simulated kernel, whose build alone may take minutes) the
line shows ``stage i/n`` instead of a percent, the device's last progress message, and ``ETA --``.

It draws nothing for work shorter than :data:`DELAY_S`, and by default only when stderr is a terminal:
a log or a pipe gets no progress lines, so scripts that capture stderr see only errors. Asked for one
(``--progress on``) into a log or pipe, it writes whole lines, not a redrawn one: at each stage change
and every :data:`PIPE_EVERY_S` within a stage, and a last ``100%`` line when the work is done.
"""

import logging
import os
import sys
import threading
import time

__all__ = ["Progress", "StartLines", "DELAY_S", "PIPE_EVERY_S"]

#: Work finished sooner than this shows no progress line at all.
DELAY_S = 2.0
#: How often a terminal's line is redrawn.
_TICK_S = 0.5
#: How often a log or pipe gets a line within one stage (and at every stage change).
PIPE_EVERY_S = 10.0


class Progress:
    """``with Progress(label, stages, mode) as p: p.stage("read"); ...``; stages: [(name, est_s or None)]."""

    def __init__(self, label: str, stages, mode: str = "auto", stream=None):
        self.label = label
        self.stages = list(stages)
        self._stream = stream if stream is not None else sys.stderr
        self.enabled = mode == "on" or (mode == "auto" and _isatty(self._stream))
        self._index = -1
        self._t0 = self._stage_t0 = time.monotonic()
        self._ratio = 1.0            # actual / estimated seconds of the finished stages
        self._done_est = self._done_act = 0.0
        self._drawn = False
        self._note = ""
        self._stop = threading.Event()
        self._changed = threading.Event()        # a new stage (or the end): a log or pipe gets a line
        self._lock = threading.Lock()
        self._thread = None
        self._out = None
        self._terminal = False
        self._finished = False

    def __enter__(self):
        if self.enabled:
            # A private copy of the descriptor: the CLI may point fd 2 at a log while the device runs.
            try:
                self._out = os.fdopen(os.dup(self._stream.fileno()), "w", buffering=1)
            except (AttributeError, OSError, ValueError):
                self._out = self._stream
            self._terminal = _isatty(self._out)
            self._thread = threading.Thread(target=self._tick, name="nantucket-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            self.finish()
        self.close()
        return False

    def stage(self, name: str, note: str = "") -> None:
        """Start the named stage (the previous one is finished)."""
        with self._lock:
            now = time.monotonic()
            if self._index >= 0:
                est = self.stages[self._index][1]
                if est:
                    self._done_est += est
                    self._done_act += now - self._stage_t0
                    if self._done_est >= 1.0:        # short stages say little about the machine's speed
                        self._ratio = min(4.0, max(0.5, self._done_act / self._done_est))
            names = [s[0] for s in self.stages]
            self._index = names.index(name)
            self._stage_t0 = now
            self._note = note
        self._changed.set()

    def note(self, text: str) -> None:
        """A detail of the running stage (e.g. what the device just reported)."""
        with self._lock:
            self._note = text

    def line(self) -> str:
        """The progress line as it would be drawn now."""
        with self._lock:
            now = time.monotonic()
            name, est = self.stages[self._index] if self._index >= 0 else ("starting", None)
            later = self.stages[self._index + 1:]
            note = f" ({self._note})" if self._note else ""
            head = f"{self.label}: {{pct}} {name}{note}, {_clock(now - self._t0)} elapsed, ETA {{eta}}"
            if est is None or any(e is None for _, e in later):
                # No estimate: a percent would be made up; the stage and the device's last word say more.
                return head.format(pct=f"stage {self._index + 1}/{len(self.stages)}", eta="--")
            done = self._stage_t0 - self._t0
            spent = now - self._stage_t0
            # A stage running over its (rescaled) estimate is assumed a quarter done beyond what it took.
            current = max(est * self._ratio, spent * 1.25)
            rest = sum(e for _, e in later) * self._ratio
            pct = 100.0 * (done + spent) / (done + current + rest)
            return head.format(pct=f"{pct:3.0f}%", eta=_clock(current - spent + rest))

    def _tick(self) -> None:
        if self._stop.wait(DELAY_S):
            return
        while True:
            self._changed.clear()
            if self._index >= 0:            # nothing to say before the first stage
                self._draw(self.line())
            if self._terminal:
                if self._stop.wait(_TICK_S):
                    return
            else:                           # whole lines: at the next stage, or after a while
                self._changed.wait(PIPE_EVERY_S)
                if self._stop.is_set():
                    return

    def finish(self) -> None:
        """The work is done: a log or pipe gets a last line at 100 %, however short the work was, so a
        reader of the log sees it end (a terminal's line is simply cleared by :meth:`close`)."""
        if self._out is None or self._terminal or self._finished:
            return
        self._finished = True
        self._stop.set()
        self._changed.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        with self._lock:
            elapsed = _clock(time.monotonic() - self._t0)
            self._write(f"{self.label}: 100% done, {elapsed} elapsed")

    def _draw(self, text: str) -> None:
        with self._lock:
            self._write(text)

    def _write(self, text: str) -> None:
        try:
            if _isatty(self._out):
                self._out.write("\r\x1b[K" + text[:200])
            else:
                self._out.write(text + "\n")
            self._out.flush()
            self._drawn = True
        except (OSError, ValueError):
            pass

    def clear(self) -> None:
        """Erase the drawn line (the next tick draws it again), so other output starts on a clean line."""
        with self._lock:
            if self._drawn and self._out is not None and _isatty(self._out):
                try:
                    self._out.write("\r\x1b[K")
                    self._out.flush()
                except (OSError, ValueError):
                    pass

    def close(self) -> None:
        """Stop drawing and clear the line (a terminal keeps no half-line of progress)."""
        self._stop.set()
        self._changed.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._out is not None:
            try:
                if self._drawn and _isatty(self._out):
                    self._out.write("\r\x1b[K")
                    self._out.flush()
                if self._out is not self._stream:
                    self._out.close()
            except (OSError, ValueError):
                pass
            self._out = None


class StartLines:
    """The default ``progress`` of a simulated card opened through the API (``nantucket.open("sim")``
    without ``progress=``): while the card starts (its model looked up or built, the simulator started),
    on a terminal one redrawn line, ``sim: <elapsed> s  <stage: the card's last message>`` (a
    Verilator build also names its elapsed minutes), cleared when the simulator is connected; into a
    log or pipe no line is drawn and every message goes to the ``logging`` logger ``nantucket.sim`` at
    INFO (the CLI's ``--progress on`` writes them itself). Messages after the start are logged only."""

    #: the card's message once its simulator is connected (sim/cosim.py)
    CONNECTED = "simulator connected"

    def __init__(self, stream=None):
        self._stream = stream if stream is not None else sys.stderr
        self._terminal = _isatty(self._stream)
        self._t0 = None
        self._started = False
        self._lock = threading.Lock()
        self.log = logging.getLogger("nantucket.sim")

    def __call__(self, line: str) -> None:
        line = str(line).strip()
        self.log.info(line)
        with self._lock:
            if self._t0 is None:
                self._t0 = time.monotonic()
            if not self._terminal or self._started:
                return
            self._started = self.CONNECTED in line
            try:
                if self._started:
                    self._stream.write("\r\x1b[K")
                else:
                    self._stream.write(f"\r\x1b[Ksim: {time.monotonic() - self._t0:5.1f} s  {line[:110]}")
                self._stream.flush()
            except (OSError, ValueError):
                self._terminal = False


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}" if seconds < 3600 else \
        f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
