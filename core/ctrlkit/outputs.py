"""Output folders: checked before any work but created only when there is something to write,
named so that parallel commands never share one, and left as they were found when a command
fails (a failed command leaves no empty folder behind; it never deletes a file).
"""

from __future__ import annotations

import functools
import os
import re
from contextlib import contextmanager
from datetime import datetime, timezone
from itertools import count
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from .errors import CtrlkitError
from .secrets import scrub_text

RUNS = Path("runs")
"""Where a command puts its output folder when it is given none."""


def check_output(out: str | Path) -> None:
    """Refuse, before any work, an output folder that cannot be written, without creating it:
    it must be a writable folder, or be missing under a writable folder."""
    out = Path(out)
    existing = out
    while not existing.exists() and existing != existing.parent:
        _refuse_dangling_link(existing, out)
        existing = existing.parent
    if not existing.is_dir():
        raise CtrlkitError(f"cannot create output folder {out}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        what = "output folder" if existing == out else f"cannot create output folder {out}: folder"
        raise CtrlkitError(f"{what} {existing} is not writable")


RUN_FILES = ("samples.jsonl", "results.json")
"""The files a run or an evaluation writes into its output folder."""


def refuse_writing_over_inputs(outputs: Iterable[str | Path | None], inputs: Mapping[str, str | Path | None]) -> None:
    """Refuse, before any work, an output that is one of the command's inputs (the same file, by
    device and inode, however it is named): writing it would destroy what the command reads.
    ``inputs`` maps how each was given (``--data``) to its path."""
    for output in outputs:
        if output is None or not Path(output).is_file():
            continue
        for given, path in inputs.items():
            if path is not None and Path(path).is_file() and os.path.samefile(output, path):
                raise CtrlkitError(f"{given} {path} is the file this command writes ({output}): writing it would "
                                   "destroy it; choose another output")


def slug(text: str) -> str:
    """A folder name for ``text`` (a component spec, a dataset name), without credentials it may hold."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", scrub_text(text)).strip("_") or "_"


def new_folder(stem: str, parent: str | Path = RUNS, now: datetime | None = None) -> Path:
    """Create and return ``PARENT/STEM-YYYYMMDD-HHMMSS`` (UTC), or that name with ``-2``, ``-3``,
    ... when another command took it in the same second. Creating a folder is atomic, so two
    commands, even in parallel processes, never get the same one."""
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")
    base = Path(parent) / f"{slug(stem)}-{stamp}"
    for number in count(1):
        folder = base if number == 1 else base.with_name(f"{base.name}-{number}")
        try:
            folder.mkdir(parents=True)  # fails when the folder exists: taken
        except FileExistsError:
            if folder.exists() or folder.is_symlink():
                continue
            check_output(folder)  # a parent is a link to nothing, or a file: say which
            raise CtrlkitError(f"cannot create output folder {folder}") from None
        except OSError as exc:
            raise CtrlkitError(f"cannot create output folder {folder}: {exc.strerror or exc}") from None
        return folder


def _refuse_dangling_link(path: Path, out: Path) -> None:
    """A link to nothing on the way to ``out`` would pass every check and fail the first write."""
    if path.is_symlink():
        raise CtrlkitError(f"cannot create output folder {out}: {path} is a link to {os.readlink(path)}, "
                           f"which does not exist")


@contextmanager
def output_folder(out: str | Path | None, stem: str) -> Iterator[str]:
    """``out``, or a :func:`new_folder` named after ``stem`` when it is None; if the body fails,
    the folders made for it that are still empty are removed again."""
    if out is not None:
        with removed_if_left_empty(missing_folders(Path(out))):
            yield str(out)
        return
    made = missing_folders(RUNS)  # runs/ itself, when this command makes it
    folder = new_folder(stem)
    with removed_if_left_empty([folder, *made]):
        yield str(folder)


def leaves_no_empty_folder(function):
    """Decorate a function taking ``out=`` (or a settings object with an ``out``, such as
    :class:`ctrlkit.RunSettings`, first): when it fails, the folders it created for ``out`` (the
    folder and missing parents) are removed if they are still empty; files are never removed."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        out = kwargs.get("out", getattr(args[0], "out", None) if args else None)
        if out is None:
            return function(*args, **kwargs)
        with removed_if_left_empty(missing_folders(Path(out))):
            return function(*args, **kwargs)

    return wrapper


@contextmanager
def removed_if_left_empty(created: list[Path]) -> Iterator[None]:
    """For a ``with`` block that may fill ``created`` (folders this command made or will make,
    deepest first, usually :func:`missing_folders`): if the block fails, those still empty are
    removed (:func:`remove_empty_folders`).

    Which folders are "ours" is judged before the block (they were missing then); a parallel
    command that creates the same folder meanwhile and has not written into it yet could lose it,
    which is why default output folders are made atomically (:func:`new_folder`)."""
    try:
        yield
    except BaseException:
        remove_empty_folders(created)
        raise


def missing_folders(folder: Path) -> list[Path]:
    """``folder`` and its parents that do not exist yet, deepest first."""
    missing = []
    while not folder.exists() and not folder.is_symlink() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def remove_empty_folders(created: list[Path]) -> None:
    """Remove the empty folders among ``created`` (deepest first), and the empty folders inside
    the first one (all made by this command, since it did not exist before); stop at the first
    folder that holds anything."""
    if not created:
        return
    for inner in sorted((path for path in created[0].rglob("*") if path.is_dir() and not path.is_symlink()),
                        key=lambda path: len(path.parts), reverse=True) if created[0].is_dir() else []:
        _rmdir(inner)
    for folder in created:
        if not _rmdir(folder):
            return


def _rmdir(folder: Path) -> bool:
    try:
        folder.rmdir()  # only an empty folder
    except OSError:
        return not folder.exists()
    return True
