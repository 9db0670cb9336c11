"""What a sweep folder already holds when a sweep starts there.

A folder holding a sweep with other settings would mix its cells with the new ones and keep a
report of the old table, so such a sweep is refused in one line (as ``ctrlkit train`` refuses a
checkpoint made with other settings), unless the new settings only add to the old ones (more
controllers, metrics, backbones or datasets: every earlier cell stays valid, and the sweep
resumes) or the caller asks to overwrite, which removes the earlier sweep's files first.

sweep.json is written once a cell is done, so two sweeps started at once would both find the
folder empty. Before any cell runs, a sweep therefore claims the folder: under an exclusive lock
of the claim file (``.sweep.claim``, opened without following a link), it compares its settings
with those the claim holds, as with sweep.json, and writes its own when they agree (a resume, the
same sweep started twice, or one that only adds cells). sweep.json is compared under the same
lock, and once it is written (a cell is done) it holds the folder, so a sweep gives its claim back
as it ends, done or failed: a folder holds no claim file once no sweep runs there.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..errors import CtrlkitError
from ..files import read_json
from ..report_files import REPORT_FILES, is_written_report
from ..secrets import is_secret

logger = logging.getLogger("ctrlkit")

SETTINGS_FILE = "sweep.json"
CLAIM_FILE = ".sweep.claim"
"""The settings of the sweeps running in the folder (:func:`claim_folder`)."""
TABLE_FILES = ("table.json", "table.csv", "table.md", "table.tex")
CELLS = "cells"
GROWING = ("controllers", "metrics", "backbones", "datasets")
"""Settings that may gain items: a sweep with more of them resumes the earlier one."""
RECOMPUTED = ("bootstrap", "reference", "reference_backbone")
"""May change: the table's comparisons are made again, and a cell recorded with another count of
bootstrap resamples runs again (its generations come from the cache, so only the scoring is redone)."""
VARIANTS = "variants"
"""May gain variants too (for the items added); one whose component or options changed is another setting."""


def check_earlier_sweep(out_dir: Path, settings: dict, digests: dict, overwrite: bool = False) -> None:
    """Refuse a sweep into ``out_dir`` when it holds one with other ``settings`` (secrets masked);
    with ``overwrite``, remove the earlier sweep's files instead. ``digests`` fingerprint the data
    (``{"data": {dataset: digest}, "topics": digest}``): a moved or copied file is the same data."""
    if overwrite:  # claimed first: a sweep still running there is refused, not removed under it
        claim_folder(out_dir, settings, digests, replace=True)
        remove_earlier_sweep(out_dir)
        return
    claim_folder(out_dir, settings, digests)


def _check_settings_file(out_dir: Path, settings: dict, digests: dict) -> None:
    path = out_dir / SETTINGS_FILE
    if not path.is_file():
        return
    earlier = read_json(path, dict, what="a sweep's settings")
    problem = _damage(earlier)
    if problem:
        raise CtrlkitError(f"{path}: {problem}, so it is not known what the sweep there ran; "
                           f"choose another --out, or pass --overwrite to replace it")
    changed = changed_settings(earlier["settings"], earlier.get("digests") or {}, settings, digests)
    if changed:
        raise CtrlkitError(f"{out_dir} holds a sweep with other settings ({', '.join(changed)}); rerun it with the "
                           f"same settings to resume (more controllers, metrics, backbones or datasets may be "
                           f"added), choose another --out, or pass --overwrite to replace it")


@contextmanager
def _locked_claim(out_dir: Path) -> Iterator[int]:
    """The claim file of ``out_dir``, open for reading and writing under an exclusive lock (the
    folder is made when missing); a link planted in its place is refused, not followed."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        handle = os.open(out_dir / CLAIM_FILE, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o666)
    except OSError as exc:
        raise CtrlkitError(f"cannot claim the sweep folder {out_dir} ({out_dir / CLAIM_FILE}: "
                           f"{exc.strerror or exc}); choose another --out") from None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):  # a pipe planted there: reading it fails or waits
            raise CtrlkitError(f"{out_dir / CLAIM_FILE} is not a regular file; remove it, or choose another --out")
        try:
            import fcntl
        except ImportError:  # no advisory locks here (Windows): the claim is still compared
            fcntl = None
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield handle
    finally:
        os.close(handle)  # closing releases the lock


def _read_claim(handle: int) -> dict | None:
    os.lseek(handle, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(handle, 1 << 16):
        chunks.append(chunk)
    try:
        claim = json.loads(b"".join(chunks).decode("utf-8"))
    except (ValueError, RecursionError):  # empty: no sweep holds the folder; damaged: a writer was killed
        return None
    if not isinstance(claim, dict) or _damage(claim) is not None:
        return None
    return claim if _holders_alive(claim.get("holders")) else None  # a killed sweep's claim holds nothing


def _holders_alive(holders) -> bool:
    """Whether a sweep recorded in a claim (``[host, pid]`` pairs) may still run: one on another
    host is taken to; one on this host runs while its process does."""
    if not isinstance(holders, list) or not holders:
        return True  # not known: kept
    here = socket.gethostname()
    for holder in holders:
        if not (isinstance(holder, list) and len(holder) == 2 and isinstance(holder[1], int)) or holder[0] != here:
            return True
        try:
            os.kill(holder[1], 0)
        except ProcessLookupError:
            continue
        except OSError:  # exists, owned by another user
            return True
        return True
    return False


def claim_folder(out_dir: Path, settings: dict, digests: dict, replace: bool = False) -> None:
    """Claim ``out_dir`` for a sweep with ``settings`` (secrets masked) and ``digests``: refused in one
    line when a sweep with other settings holds the claim, or with ``replace`` (--overwrite) when
    any sweep still running holds it."""
    if not replace:
        _check_settings_file(out_dir, settings, digests)  # before making the folder or the claim
    with _locked_claim(out_dir) as handle:
        if not replace:  # again under the lock: a sweep may have finished its first cell meanwhile
            _check_settings_file(out_dir, settings, digests)
        claim = _read_claim(handle)
        if claim is not None and replace:
            raise CtrlkitError(f"{out_dir} is held by a sweep that is still running; --overwrite would remove its "
                               f"files under it: wait for it to end, or choose another --out (a claim made on "
                               f"another machine cannot be checked here: if no sweep runs there, remove "
                               f"{out_dir / CLAIM_FILE})")
        if claim is not None:
            changed = changed_settings(claim["settings"], claim.get("digests") or {}, settings, digests)
            if changed:
                raise CtrlkitError(f"{out_dir} is claimed by another sweep with other settings ({', '.join(changed)}) "
                                   f"that has not finished a cell yet; wait for it, choose another --out, or rerun "
                                   f"with its settings")
        holders = [*(claim.get("holders") or [] if claim is not None else []), [socket.gethostname(), os.getpid()]]
        data = json.dumps({"settings": settings, "digests": digests, "holders": holders},
                          ensure_ascii=False).encode("utf-8")
        os.ftruncate(handle, 0)
        os.lseek(handle, 0, os.SEEK_SET)
        view = memoryview(data)
        while view:
            view = view[os.write(handle, view):]


def release_claim(out_dir: Path, settings: dict) -> None:
    """Give back the claim of a sweep with ``settings`` as it ends. Once a cell is done, sweep.json
    holds the folder (it is compared under the claim's lock); a sweep that failed before any cell
    leaves nothing of it, and a claim another sweep made since stays."""
    path = out_dir / CLAIM_FILE
    if not path.is_file() or path.is_symlink():
        return
    try:
        with _locked_claim(out_dir) as handle:
            claim = _read_claim(handle)
            if (out_dir / SETTINGS_FILE).is_file() or claim is None \
                    or claim["settings"] == json.loads(json.dumps(settings, ensure_ascii=False)):
                path.unlink(missing_ok=True)
    except (CtrlkitError, OSError):
        pass  # the failure being reported matters more than a claim left behind


def _damage(earlier: dict) -> str | None:
    """What makes a sweep.json unreadable as one, or None."""
    settings, digests = earlier.get("settings"), earlier.get("digests") or {}
    if not isinstance(settings, dict):
        return "no 'settings' object"
    for key in GROWING:
        if key in settings and not (isinstance(settings[key], list)
                                    and all(isinstance(name, str) for name in settings[key])):
            return f"'settings.{key}' is not a list of names"
    if not isinstance(settings.get("data") or {}, dict):
        return "'settings.data' is not an object"
    if not isinstance(settings.get(VARIANTS) or {}, dict):
        return f"'settings.{VARIANTS}' is not an object"
    if not isinstance(digests, dict) or not isinstance(digests.get("data") or {}, dict) \
            or not all(isinstance(value, (str, type(None))) for value in (digests.get("data") or {}).values()) \
            or not isinstance(digests.get("topics"), (str, type(None))):
        return "'digests' is not an object of fingerprints"
    return None


def changed_settings(before: dict, before_digests: dict, after: dict, digests: dict) -> list[str]:
    """The settings in ``after`` that differ from ``before``; a GROWING list may gain items (and
    ``variants`` variants), a data or topics file may move (same digest), and secret options (a
    new API key) may change."""
    changed = []
    for key, value in after.items():
        old = before.get(key)
        if key in RECOMPUTED:
            continue
        if key in GROWING:
            same = isinstance(old, list) and set(old) <= set(value)
        elif key == "data":
            old, old_digests = old if isinstance(old, dict) else {}, before_digests.get("data") or {}
            same = all(_same_file(old.get(name), value.get(name), old_digests.get(name), digests["data"].get(name))
                       for name in before.get("datasets") or [])
        elif key == "topics":
            same = _same_file(old, value, before_digests.get("topics"), digests["topics"])
        elif key == "options":
            same = isinstance(old, dict) and _without_secrets(old) == _without_secrets(value)
        elif key == VARIANTS:  # recorded with secrets masked, so a new API key compares equal
            old = old or {}
            same = all(value.get(name) == variant for name, variant in old.items())
        else:
            same = old == value
        if not same:
            changed.append(key)
    return changed


def _same_file(old: str | None, new: str | None, old_digest: str | None, new_digest: str | None) -> bool:
    return old == new or (new_digest is not None and old_digest == new_digest)


def _without_secrets(options: dict) -> dict:
    kept = {name: {option: value for option, value in values.items() if not is_secret(option)}
            for name, values in options.items() if isinstance(values, dict)}
    return {name: values for name, values in kept.items() if values}


def remove_earlier_sweep(out_dir: Path) -> None:
    """Remove what a sweep wrote in ``out_dir`` (its cell folders, sweep.json, the tables, the report
    ``ctrlkit report`` wrote), saying what; a folder without a sweep.json holds no sweep, and
    nothing is removed from it. Any other file or folder stays."""
    if not (out_dir / SETTINGS_FILE).is_file():
        return
    files = [out_dir / name for name in (SETTINGS_FILE, *TABLE_FILES) if (out_dir / name).is_file()]
    files += [out_dir / name for name in REPORT_FILES if is_written_report(out_dir / name)]
    cells_dir = out_dir / CELLS
    cells = sorted(path for path in cells_dir.iterdir() if _is_cell(path)) \
        if cells_dir.is_dir() and not cells_dir.is_symlink() else []
    removed = [*([f"{len(cells)} cells in {CELLS}/"] if cells else []), *(path.name for path in files)]
    logger.warning("ctrlkit: --overwrite: removing the earlier sweep in %s: %s", out_dir, ", ".join(removed))
    try:
        for cell in cells:
            shutil.rmtree(cell)
        if cells and not any(cells_dir.iterdir()):
            cells_dir.rmdir()
        for path in files:
            path.unlink()
    except OSError as exc:
        raise CtrlkitError(f"cannot remove the earlier sweep in {out_dir}: {exc.strerror or exc}") from None


def _is_cell(path: Path) -> bool:
    """A cell folder as a sweep names it (DATASET--BACKBONE--CONTROLLER), not a link."""
    return path.is_dir() and not path.is_symlink() and path.name.count("--") >= 2
