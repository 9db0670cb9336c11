"""The report files ``ctrlkit report`` writes into a run or sweep folder, told apart from a user's
own files of the same name, and removed when a command replaces the numbers they were written from."""

from __future__ import annotations

import logging
from pathlib import Path

REPORT_FILES = ("report.html", "report.md")  # what ``ctrlkit report DIR`` writes by default
REPORT_MARKS = {".html": (b"<!doctype html>", b"<title>ctrlkit report: "), ".md": (b"# ctrlkit report: ", b"")}
"""How the pages ``render_html`` and ``render_markdown`` write begin, and what their first 512 bytes hold."""
logger = logging.getLogger("ctrlkit")


def remove_stale_report(out_dir: str | Path, written_from: str) -> None:
    """Remove the default report of ``out_dir``, whose numbers came from ``written_from`` (the
    sweep's earlier cells, the folder's earlier results) that a command has just replaced, saying
    so in one line."""
    out_dir = Path(out_dir)
    stale = [out_dir / name for name in REPORT_FILES if is_written_report(out_dir / name)]
    for path in stale:
        path.unlink(missing_ok=True)
    if stale:
        logger.warning("ctrlkit: removed %s, written from %s; ctrlkit report %s writes a new one",
                       " and ".join(path.name for path in stale), written_from, out_dir)


def is_written_report(path: Path) -> bool:
    """Whether ``path`` is a report ``ctrlkit report`` wrote (by how it begins), and not a file of
    the user's own that happens to share its name."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as file:
            start = file.read(512)
    except OSError:
        return False
    begins, holds = REPORT_MARKS.get(path.suffix, (None, None))
    return begins is not None and start.startswith(begins) and holds in start
