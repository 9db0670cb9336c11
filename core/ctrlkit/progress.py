"""Progress of long work on stderr. On a terminal, tqdm's bar; elsewhere (a log file, a pipe, a
CI job) a bar redrawn in place is unreadable and tqdm hides it, which left a two-minute run
silent, so there a plain line is printed every ``$CTRLKIT_PROGRESS_SECONDS`` seconds (default
30): ``ctrlkit: generate [tag]: 120/654 examples, 1:30 elapsed``, and a last one when the work
ends, if any was printed. A warning ctrlkit logs while a bar is drawn is written above the bar,
on a line of its own, not into it."""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time

DEFAULT_SECONDS = 30.0


def interval() -> float:
    """Seconds between plain progress lines: ``$CTRLKIT_PROGRESS_SECONDS``, else 30."""
    try:
        seconds = float(os.environ.get("CTRLKIT_PROGRESS_SECONDS") or DEFAULT_SECONDS)
    except ValueError:
        return DEFAULT_SECONDS
    return seconds if 0 < seconds < math.inf else DEFAULT_SECONDS


def say(line: str) -> None:
    """One line of ctrlkit's own on stderr."""
    print(f"ctrlkit: {line}", file=sys.stderr, flush=True)


def _clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes // 60}:{minutes % 60:02d}:{seconds:02d}" if minutes >= 60 else f"{minutes}:{seconds:02d}"


class _AboveTheBar(logging.Handler):
    """Where ctrlkit's warnings go while a bar is drawn and no handler of the user's takes them:
    Python's last-resort handler would write them after the bar's text, on the bar's line;
    ``tqdm.write`` clears the bar, writes the line, and draws the bar again below it."""

    def emit(self, record: logging.LogRecord) -> None:
        from tqdm.auto import tqdm

        try:
            tqdm.write(self.format(record), file=sys.stderr)
        except Exception:
            self.handleError(record)


class Progress:
    """``done`` of ``total`` ``unit`` of the work ``what``; nothing is shown when not ``enabled``.
    Use as a context manager; ``update(n, note)`` counts work done (``note``: e.g. the loss)."""

    def __init__(self, what: str, total: int, unit: str, enabled: bool = True, initial: int = 0):
        self.what, self.total, self.unit = what, total, unit
        self.done, self.note = initial, ""
        self._bar = self._ticker = self._handler = None
        self._printed = False
        self._started = time.monotonic()
        self._stop = threading.Event()
        if not enabled:
            return
        if sys.stderr.isatty():
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, initial=initial, desc=what, unit=unit, file=sys.stderr)
            logger = logging.getLogger("ctrlkit")
            if not logger.hasHandlers():  # an outer bar's handler, or the user's own, is left to work
                self._handler = _AboveTheBar(logging.WARNING)
                logger.addHandler(self._handler)
        else:
            self._ticker = threading.Thread(target=self._tick, name="ctrlkit-progress", daemon=True)
            self._ticker.start()

    def update(self, n: int = 1, note: str = "") -> None:
        self.done += n
        self.note = note
        if self._bar is not None:
            self._bar.update(n)
            if note:
                self._bar.set_postfix_str(note)

    def line(self) -> str:
        note = f", {self.note}" if self.note else ""
        return (f"{self.what}: {self.done}/{self.total} {self.unit}{note}, "
                f"{_clock(time.monotonic() - self._started)} elapsed")

    def _tick(self) -> None:
        every = interval()
        while not self._stop.wait(every):
            self._printed = True
            say(self.line())

    def close(self, finished: bool = True) -> None:
        if self._bar is not None:
            self._bar.close()
        if self._handler is not None:
            logging.getLogger("ctrlkit").removeHandler(self._handler)
            self._handler = None
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            if finished and self._printed:
                say(self.line())

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.close(finished=kind is None)
