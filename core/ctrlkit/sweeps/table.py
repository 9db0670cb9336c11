"""A sweep's table: one row per cell, a column per metric value, each value with its interval
and its comparison with the reference row, written as table.json, table.csv, table.md and table.tex."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any, Sequence

from ..files import atomic_write_json, atomic_write_text
from ..markdown import escape_markdown, markdown_table
from ..metric_values import best, better, directions, is_count, label
from ..statistics_text import UNDEFINED_INTERVAL, describe_difference, recorded_interval
from ..results import SCHEMA_VERSION, value_text
from .compare import CONFIDENCE, DEFAULT_REFERENCE, Reference, blocks, reference_phrase
from .tex import write_tex


def columns(rows: Sequence[dict]) -> list[tuple[str, str]]:
    """Every (metric, value) that some row has, in first-seen order."""
    seen: dict[tuple[str, str], None] = {}
    for row in rows:
        for metric, values in row["metrics"].items():
            for name in values:
                seen[(metric, name)] = None
    return list(seen)


def _value(row: dict, column: tuple[str, str]) -> float | None:
    return row["metrics"].get(column[0], {}).get(column[1])


def best_values(rows: Sequence[dict], cols: Sequence[tuple[str, str]], ways: Sequence) -> list[dict]:
    """Per (dataset, backbone), in table order, the best value of each column among its controllers
    (None where there is none: no better way, or fewer than two values differ). Only outputs of one
    backbone for the same examples are compared."""
    return [{"dataset": dataset, "backbone": backbone,
             "values": {label(*column): best((_value(row, column) for row in members), way)
                        for column, way in zip(cols, ways)}}
            for (dataset, backbone), members in blocks(rows).items()]


def _csv_text(text: str) -> str:
    """A name as a CSV cell a spreadsheet shows as text: one starting with ``= + - @`` (or a tab or
    carriage return) would be read as a formula, so it gets a leading apostrophe."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def comparisons_record(rows: Sequence[dict], against: Reference, resamples: int, seed: int) -> dict | None:
    """What table.json says of the comparisons with the reference rows (None: no bootstrap)."""
    if not resamples:
        return None
    tests = sum(len(values) for row in rows for values in (row.get("paired") or {}).values())
    return {"reference": against.name or DEFAULT_REFERENCE, "reference_axis": against.axis, "resamples": resamples,
            "seed": seed,
            "confidence": CONFIDENCE, "test": "paired bootstrap interval of the difference; paired permutation p",
            "correction": "holm", "family": "every (cell, metric value) comparison of the table", "tests": tests}


def _difference_text(test: dict | None) -> str:
    """``+0.0040 [-0.0012, +0.0093] p=0.21 (Holm 0.63)``: the difference with its Holm p as the
    report shows it (:func:`ctrlkit.statistics_text.describe_difference`), or nothing."""
    if not test or test.get("difference") is None:
        return ""
    return describe_difference(test) + (f" {UNDEFINED_INTERVAL}" if test.get("undefined") else "")


def _found(holder: dict | None, column: tuple[str, str]) -> dict | None:
    return ((holder or {}).get(column[0]) or {}).get(column[1])


def write_table(out_dir: Path, rows: Sequence[dict], comparisons: dict | None = None) -> None:
    """table.json, table.csv, table.md and table.tex.

    table.json holds ``rows`` (each cell's ``metrics`` ``{metric: {value: number}}``; ``intervals``
    ``{metric: {value: {"low", "high", "se"}}}``; ``reference``, the controller its difference is to,
    or null; ``paired`` ``{metric: {value: {"difference", "low", "high", "se", "p", "permutations",
    "p_holm"}}}``, null on a reference row and where nothing was compared; ``permutations``, an int,
    is how many counted, so a p at its floor 1 / (1 + permutations) can be told), ``columns`` (each
    value's name, metric, value and better way: the keys into a row's ``metrics``, ``intervals`` and
    ``paired``), ``best`` (the best value of each column per dataset and backbone) and
    ``comparisons`` (the test, resamples, seed and correction; null without a bootstrap). table.csv
    has a column per value, then its interval (``NAME low``, ``NAME high``) and, with comparisons,
    ``reference`` and each value's ``NAME difference``, ``... low``, ``... high``, ``NAME p``,
    ``NAME permutations`` and ``NAME p holm``; table.md each value with its interval and difference
    (the best in bold, ↓ where lower is better); table.tex
    (:mod:`ctrlkit.sweeps.tex`) the table a paper prints."""
    cols = columns(rows)
    higher = directions(metric for metric, _ in cols)
    ways = [better(name, higher[metric]) for metric, name in cols]
    labels = [label(metric, name) for metric, name in cols]
    bests = best_values(rows, cols, ways)
    atomic_write_json(out_dir / "table.json", {
        "schema_version": SCHEMA_VERSION,
        "rows": list(rows),
        "columns": [{"name": name, "metric": metric, "value": value, "better": way}
                    for name, (metric, value), way in zip(labels, cols, ways)],
        "best": bests, "comparisons": comparisons})
    with_intervals = any(row.get("intervals") for row in rows)
    with_tests = any(row.get("paired") for row in rows)
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["dataset", "backbone", "controller", *map(_csv_text, labels),
                     *(_csv_text(f"{name} {end}") for name in labels for end in ("low", "high") if with_intervals),
                     *(["reference"] if with_tests else []),
                     *(_csv_text(f"{name} {field}") for name in labels if with_tests
                       for field in ("difference", "difference low", "difference high", "p", "permutations",
                                     "p holm"))])
    for row in rows:
        intervals = [_found(row.get("intervals"), column) or {} for column in cols] if with_intervals else []
        tests = [_found(row.get("paired"), column) or {} for column in cols] if with_tests else []
        writer.writerow([*map(_csv_text, (row["dataset"], row["backbone"], row["controller"])),
                         *("" if v is None else v for v in (_value(row, column) for column in cols)),
                         *(_blank(found.get(end)) for found in intervals for end in ("low", "high")),
                         *([_csv_text(row.get("reference") or "")] if with_tests else []),
                         *(_blank(found.get(key)) for found in tests
                           for key in ("difference", "low", "high", "p", "permutations", "p_holm"))])
    atomic_write_text(out_dir / "table.csv", buffer.getvalue())
    group_best = {(group["dataset"], group["backbone"]): group["values"] for group in bests}
    body = []
    for row in rows:
        cells = []
        for column, name in zip(cols, labels):
            value = _value(row, column)
            text = value_text(value, is_count(column[1]))
            marked = value is not None and value == group_best[row["dataset"], row["backbone"]][name]
            extra = " ".join(filter(None, (recorded_interval(_found(row.get("intervals"), column)),
                                           _difference_text(_found(row.get("paired"), column)))))
            cells.append((f"**{text}**" if marked else text) + (f" {extra}" if extra else ""))
        body.append([escape_markdown(row[key]) for key in ("dataset", "backbone", "controller")] + cells)
    header = [escape_markdown(name) + (" ↓" if way == "lower" else "") for name, way in zip(labels, ways)]
    lines = markdown_table(["dataset", "backbone", "controller", *header], body, text_columns=3)
    if comparisons:
        lines += ["", escape_markdown(_md_note(comparisons))]
    atomic_write_text(out_dir / "table.md", "\n".join(lines) + "\n")
    write_tex(out_dir, rows, cols, labels, ways, bests, comparisons)


def _blank(value) -> Any:
    return "" if value is None else value


def _md_note(comparisons: dict) -> str:
    intervals = (f"Each value with its {comparisons['confidence']:.0%} bootstrap interval ({comparisons['resamples']} "
                 f"resamples, seed {comparisons['seed']}, each drawing groups of examples with replacement: a group "
                 f"is the examples that share a document, or one example where its dataset names no group)")
    if not comparisons["tests"]:
        return intervals + "."
    return (intervals + "; beside it, on rows other than the reference "
            f"({reference_phrase(comparisons)}): the difference to the "
            f"reference, its paired bootstrap interval, the paired permutation p and the p adjusted by Holm's "
            f"method across the table's {comparisons['tests']} comparisons.")
