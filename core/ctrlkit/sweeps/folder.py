"""What a sweep folder already holds when a sweep starts there.

A folder holding a sweep with other settings would mix its cells with the new ones and keep a
report of the old table, so such a sweep is refused in one line (as ``ctrlkit train`` refuses a
checkpoint made with other settings), unless the new settings only add to the old ones (more
controllers, metrics, backbones or datasets: every earlier cell stays valid, and the sweep
resumes) or the caller asks to overwrite, which removes the earlier sweep's files first.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from ..errors import CtrlkitError
from ..files import read_json
from ..report_files import REPORT_FILES, is_written_report
from ..secrets import is_secret

logger = logging.getLogger("ctrlkit")

SETTINGS_FILE = "sweep.json"
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
    if overwrite:
        remove_earlier_sweep(out_dir)
        return
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
