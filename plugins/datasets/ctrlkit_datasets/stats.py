"""What a dataset holds, per subset and split: examples, skipped rows, examples with references,
and how many examples carry each control (``ctrlkit data stats``). For CCSBench, where one
example is one row, these are the row counts to check against the paper's Table 1.

Works for any dataset: every split it declares is loaded (or the one asked for); a dataset
without splits is loaded once. A dataset whose files come in subsets may define ``subsets()``,
returning values of its ``subset`` option (CCSBench: the subset folders found under ``--data``);
each subset is then counted on its own.
"""

from __future__ import annotations

from typing import Any, Sequence

import ctrlkit
from ctrlkit import DatasetError


def dataset_stats(name: str, path: str | None = None, splits: Sequence[str | None] | None = None,
                  **options: Any) -> dict:
    """Counts for dataset ``name`` reading ``path`` (its ``path`` option, when given), with its
    other ``options``; ``splits``: the splits to read (default: every split it has).

    Returns ``{"dataset", "path", "controls": [names in column order], "parts": [{"subset",
    "split", "examples", "skipped", "with_references", "controls": {name: count}, "error"}]}``.
    A part that cannot be read (a split without a file, a file another split's option cannot
    take) has ``examples`` None and the one-line reason in ``error``; when no part can be read,
    the first reason is raised as a DatasetError.
    """
    if path is not None:
        options = {**options, "path": path}
    dataset = ctrlkit.get_dataset(name, **options)
    subsets = list(dataset.subsets()) if callable(getattr(dataset, "subsets", None)) else []
    if splits is None:
        splits = list(dataset.splits) or [None]
    parts, declared = [], list(_declared(dataset))
    for subset in subsets or [None]:
        source = dataset if subset is None else ctrlkit.get_dataset(name, **{**options, "subset": subset})
        for split in splits:
            parts.append(_part(source, subset, split))
    read = [part for part in parts if part["error"] is None]
    if not read:
        raise DatasetError(parts[0]["error"])
    found = sorted({control for part in read for control in part["controls"]} - set(declared))
    return {"dataset": name, "path": path, "controls": declared + found, "parts": parts}


def _declared(dataset) -> list[str]:
    controls = dataset.controls if isinstance(dataset.controls, tuple) else ()
    return list(dict.fromkeys([*controls, *dataset.optional_controls]))


def _part(dataset, subset: str | None, split: str | None) -> dict:
    part = {"subset": subset, "split": split, "examples": None, "skipped": 0, "with_references": None,
            "controls": {}, "error": None}
    try:
        examples = dataset.load(split)
    except DatasetError as exc:
        return {**part, "error": str(exc)}
    counts: dict[str, int] = {}
    for example in examples:
        for control, value in example.controls.items():
            if _given(value):
                counts[control] = counts.get(control, 0) + 1
    return {**part, "examples": len(examples), "skipped": dataset.skipped,
            "with_references": sum(1 for example in examples if example.references), "controls": counts}


def _given(value) -> bool:
    """A control value that is there: not None, not blank, not an empty list."""
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, (list, tuple, dict)):
        return bool(value)
    return value is not None


def format_stats(stats: dict) -> str:
    """The counts of ``dataset_stats`` as a text table: one line per subset and split, one
    column per control (examples carrying it); parts that could not be read are listed below."""
    parts = stats["parts"]
    read = [part for part in parts if part["error"] is None]
    subsets = any(part["subset"] is not None for part in parts)
    skipped = any(part["skipped"] for part in read)
    header = [*(["subset"] if subsets else []), "split", "examples", *(["skipped"] if skipped else []),
              "references", *stats["controls"]]
    lines = [[*([part["subset"]] if subsets else []), part["split"] or "all", str(part["examples"]),
              *([str(part["skipped"])] if skipped else []), str(part["with_references"]),
              *(str(part["controls"].get(control, 0)) for control in stats["controls"])] for part in read]
    if len(read) > 1:
        lines.append([*(["total"] if subsets else []), "" if subsets else "total",
                      str(sum(part["examples"] for part in read)),
                      *([str(sum(part["skipped"] for part in read))] if skipped else []),
                      str(sum(part["with_references"] for part in read)),
                      *(str(sum(part["controls"].get(control, 0) for part in read)) for control in stats["controls"])])
    text = [f"dataset '{stats['dataset']}'" + (f" at {stats['path']}" if stats["path"] else "") +
            ": examples per split, and how many carry references and each control"]
    text.extend(_table(header, lines, left=2 if subsets else 1))
    for part in parts:
        if part["error"] is not None:
            where = "/".join(filter(None, (part["subset"], part["split"] or "all")))
            text.append(f"not read: {where}: {part['error']}")
    return "\n".join(text)


def _table(header: list[str], rows: list[list[str]], left: int) -> list[str]:
    """Aligned columns: the first ``left`` to the left, the counts to the right."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) if i < left else cell.rjust(width)
                      for i, (cell, width) in enumerate(zip(row, widths))).rstrip() for row in [header, *rows]]
