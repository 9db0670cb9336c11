"""Progress of long work on stderr. On a terminal, tqdm's bar; elsewhere (a log file, a pipe, a
CI job) a bar redrawn in place is unreadable and tqdm hides it, which left a two-minute run
silent, so there a plain line is printed every ``$CTRLKIT_PROGRESS_SECONDS`` seconds (default
30): ``ctrlkit: generate [tag]: 120/654 examples, 1:30 elapsed``, and a last one when the work
ends, if any was printed. A warning ctrlkit logs while a bar is drawn is written above the bar,
on a line of its own, not into it.

What reaches a terminal is text from outside too: a server's error text, names from data (topics,
ids, fields), a plugin's names. While a command of the CLI runs, its standard output and error
pass through ``visible_output``, which shows each control character (a terminal escape: ESC, CSI,
OSC, the C1 controls; a lone CR that would rewrite the line) and each bidirectional override as
U+FFFD, as its tables always did: no printed line can write the clipboard, clear the screen or
fake coloured text. Only the progress bar itself, drawn by tqdm with CRs of its own, writes to
the stream underneath."""

from __future__ import annotations

import logging
import math
import os
import sys
import threading
import time
from contextlib import contextmanager

from .markdown import visible

DEFAULT_SECONDS = 30.0


def interval() -> float:
    """Seconds between plain progress lines: ``$CTRLKIT_PROGRESS_SECONDS``, else 30."""
    try:
        seconds = float(os.environ.get("CTRLKIT_PROGRESS_SECONDS") or DEFAULT_SECONDS)
    except ValueError:
        return DEFAULT_SECONDS
    return seconds if 0 < seconds < math.inf else DEFAULT_SECONDS


def say(line: str) -> None:
    """One line of ctrlkit's own on stderr, shown as ``visible`` shows it (it may name data)."""
    print(f"ctrlkit: {visible(line)}", file=sys.stderr, flush=True)


class VisibleStream:
    """A text stream that writes what it is given through ``visible``; all else is the stream's."""

    def __init__(self, stream):
        self.unfiltered = stream

    def write(self, text: str) -> int:
        self.unfiltered.write(visible(text))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self.unfiltered, name)


def unfiltered(stream):
    """The stream under a ``VisibleStream`` (for tqdm's bar, which redraws with CRs), else ``stream``."""
    return stream.unfiltered if isinstance(stream, VisibleStream) else stream


@contextmanager
def visible_output(stderr: bool = True):
    """The block's standard output and, with ``stderr``, its standard error (print, click.echo, log
    lines, warnings) pass through ``visible``. ``ctrlkit --verbose`` leaves stderr as it is, for the
    libraries' own output (their bars). What was there before is put back."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, VisibleStream):
        sys.stdout = VisibleStream(sys.stdout)
    if stderr and not isinstance(sys.stderr, VisibleStream):
        sys.stderr = VisibleStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


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
            tqdm.write(visible(self.format(record)), file=unfiltered(sys.stderr))  # the bar's own stream
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

            self._bar = tqdm(total=total, initial=initial, desc=visible(what), unit=unit,
                             file=unfiltered(sys.stderr))
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
                self._bar.set_postfix_str(visible(note))

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
