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

from .errors import CtrlkitError
from .files import read_json
from .report import REPORT_FILES
from .secrets import is_secret

logger = logging.getLogger("ctrlkit")

SETTINGS_FILE = "sweep.json"
TABLE_FILES = ("table.json", "table.csv", "table.md")
CELLS = "cells"
GROWING = ("controllers", "metrics", "backbones", "datasets")
"""Settings that may gain items: a sweep with more of them resumes the earlier one."""


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
    if not isinstance(earlier.get("settings"), dict):
        raise CtrlkitError(f"{path}: no 'settings' object, so it is not known what the sweep there ran; "
                           f"choose another --out, or pass --overwrite to replace it")
    changed = changed_settings(earlier["settings"], earlier.get("digests") or {}, settings, digests)
    if changed:
        raise CtrlkitError(f"{out_dir} holds a sweep with other settings ({', '.join(changed)}); rerun it with the "
                           f"same settings to resume (more controllers, metrics, backbones or datasets may be "
                           f"added), choose another --out, or pass --overwrite to replace it")


def changed_settings(before: dict, before_digests: dict, after: dict, digests: dict) -> list[str]:
    """The settings in ``after`` that differ from ``before``; a GROWING list may gain items, a
    data or topics file may move (same digest), and secret options (a new API key) may change."""
    changed = []
    for key, value in after.items():
        old = before.get(key)
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
    """Remove what a sweep wrote in ``out_dir`` (cells/, sweep.json, the tables, the default report),
    saying what; any other file stays."""
    files = [out_dir / name for name in (SETTINGS_FILE, *TABLE_FILES, *REPORT_FILES) if (out_dir / name).is_file()]
    cells = out_dir / CELLS
    removed = [path.name for path in files]
    if cells.is_dir():
        removed.insert(0, f"{CELLS}/ ({sum(1 for path in cells.iterdir() if path.is_dir())} cells)")
    if not removed:
        return
    logger.warning("ctrlkit: --overwrite: removing the earlier sweep in %s: %s", out_dir, ", ".join(removed))
    try:
        if cells.is_dir():
            shutil.rmtree(cells)
        for path in files:
            path.unlink()
    except OSError as exc:
        raise CtrlkitError(f"cannot remove the earlier sweep in {out_dir}: {exc.strerror or exc}") from None
