"""Each sweep cell against the reference row of its group.

By default a group is a (dataset, backbone), and its reference row is the cell of the controller
named ``reference``; without one, the ``none`` controller's (or, when the sweep has no plain
``none``, its one variant of ``none``). With a reference backbone instead, a group is a (dataset,
controller) and its reference row is that backbone's cell: each other backbone (a fine-tuned
model, say) is compared with it under the same controller. A group without its reference row
gets no comparisons, said in one line for the sweep; no other row stands in for it.

Each other cell of the group is compared with it on the same examples, from the two cells'
samples.jsonl: the paired bootstrap interval of the difference (cell minus reference) and the
paired permutation p-value of :func:`ctrlkit.bootstrap.paired`, resampling the examples' groups
(recorded on each line, :func:`ctrlkit.bootstrap.groups_of`) with the sweep's seed, over the
examples where either cell has a value of the metric. Two cells whose lines are not the same
examples in the same order are not compared (one line says so). All the p-values of the sweep
(every cell, metric value) form one family, corrected with Holm's step-down method.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Mapping, NamedTuple, Sequence

from ..errors import CtrlkitError
from ..files import read_jsonl
from ..metric_values import is_count
from ..secrets import is_secret

logger = logging.getLogger("ctrlkit")

DEFAULT_REFERENCE = "none"
CONFIDENCE = 0.95


class Reference(NamedTuple):
    """What each row is compared with: the row of the controller (``axis`` ``"controller"``,
    ``name`` None for the default) or of the backbone ``name`` (``axis`` ``"backbone"``)."""

    axis: str
    name: str | None


def reference_phrase(comparisons: Mapping) -> str:
    """``controller none of each dataset and backbone``: which row table.json's ``comparisons``
    compare the others with, for the notes under a table."""
    if comparisons.get("reference_axis") == "backbone":
        return f"backbone {comparisons['reference']} of each dataset and controller"
    return f"controller {comparisons['reference']} of each dataset and backbone"


def blocks(rows: Sequence[dict]) -> dict[tuple[str, str], list[dict]]:
    """The rows of each (dataset, backbone), in table order: outputs of one backbone for the same
    examples, the only rows compared with each other."""
    found: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        found.setdefault((row["dataset"], row["backbone"]), []).append(row)
    return found


def reference_rows(rows: Sequence[dict], against: Reference, specs: Mapping[str, str]) -> dict:
    """``{(dataset, backbone or controller): reference row or None}`` in table order; ``specs`` maps
    each controller's label to the controller (or chain) it runs, so a variant of ``none`` is found."""
    found = {}
    for key, members in _groups(rows, against.axis).items():
        if against.axis == "backbone":
            named = [row for row in members if row["backbone"] == against.name]
        else:
            named = [row for row in members if row["controller"] == (against.name or DEFAULT_REFERENCE)]
            if not named and against.name is None:
                named = [row for row in members if specs.get(row["controller"]) == DEFAULT_REFERENCE]
        found[key] = named[0] if len(named) == 1 else None
    return found


def _groups(rows: Sequence[dict], axis: str) -> dict[tuple[str, str], list[dict]]:
    """The rows compared with each other: those of one (dataset, backbone), or of one (dataset,
    controller) when the reference is a backbone."""
    if axis == "controller":
        return blocks(rows)
    found: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        found.setdefault((row["dataset"], row["controller"]), []).append(row)
    return found


def _group_key(row: dict, axis: str) -> tuple[str, str]:
    return (row["dataset"], row["backbone"] if axis == "controller" else row["controller"])


def compare(out_dir: Path, rows: list[dict], against: Reference, specs: Mapping[str, str], resamples: int,
            seed: int, options: Mapping[str, Mapping]) -> None:
    """Set each row's ``reference`` (the controller, or with a reference backbone the backbone, of
    its group's reference row; or None) and,
    for a non-reference row of a group with one, ``paired``: ``{metric: {value: {"difference",
    "low", "high", "se", "p", "p_holm"}}}``. Nothing is compared when ``resamples`` is 0.
    ``options`` maps each row's ``run`` to the options its results.json recorded (``config.options``),
    which the sweep already holds: the metrics are made again with them."""
    references = reference_rows(rows, against, specs)
    lacking = [key for key, row in references.items() if row is None]
    other = "controller" if against.axis == "backbone" else "backbone"
    if lacking and resamples:
        shown = "; ".join(f"dataset '{dataset}', {other} '{name}'" for dataset, name in lacking)
        logger.warning("ctrlkit: no reference row (%s '%s') for %s: no comparisons there", against.axis,
                       against.name or DEFAULT_REFERENCE, shown)
    loaded: dict[str, list[dict] | None] = {}
    for row in rows:
        base = references[_group_key(row, against.axis)]
        row["reference"] = base[against.axis] if base is not None and resamples else None
        row["paired"] = None
        if base is None or base is row or not resamples:
            continue
        for cell in (row, base):
            if cell["run"] not in loaded:
                loaded[cell["run"]] = _samples(out_dir / cell["run"] / "samples.jsonl")
        row["paired"] = _paired(row, base, loaded[row["run"]], loaded[base["run"]], options[row["run"]], resamples,
                                seed)
    tests = [test for row in rows for values in (row["paired"] or {}).values() for test in values.values()]
    for test, adjusted in zip(tests, holm([test["p"] for test in tests])):
        test["p_holm"] = adjusted


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of ``p_values`` (one family), in their order: the i-th smallest
    of m is multiplied by m - i + 1, kept from falling below the one before it, and capped at 1."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


def _samples(path: Path) -> list[dict] | None:
    """A cell's samples.jsonl, or None (one warning line) when it cannot be read."""
    try:
        return [line for _, line in read_jsonl(path)]
    except (CtrlkitError, OSError) as exc:
        logger.warning("ctrlkit: %s: cannot read the cell's samples (%s); it is not compared with its reference",
                       path, exc)
        return None


def _paired(row: dict, base: dict, samples: list[dict] | None, reference: list[dict] | None, options: Mapping,
            resamples: int, seed: int) -> dict | None:
    """The row's cell minus its reference cell, per metric both scored; None when they cannot be paired."""
    import numpy as np

    from ..bootstrap import paired
    from ..uncertainty import as_json, unless_failing

    if samples is None or reference is None:
        return None
    where = f"cell {row['run']} vs reference {base['run']}"
    if [s.get("id") for s in samples] != [s.get("id") for s in reference]:
        logger.warning("ctrlkit: %s: not the same examples in the same order; not compared", where)
        return None
    groups = [s.get("group") for s in samples]
    if any(not isinstance(g, int) for g in groups) or groups != [s.get("group") for s in reference]:
        logger.warning("ctrlkit: %s: samples.jsonl records no example groups (written by an older ctrlkit) or "
                       "other ones; not compared (rerun the sweep with --overwrite)", where)
        return None
    found = {}
    for name in row["metrics"]:
        if name not in base["metrics"]:
            continue
        metric = _metric(options, name, where)
        if metric is None:
            continue
        parts_a, parts_b = metric_parts(samples, name), metric_parts(reference, name)
        kept = [i for i in range(len(samples)) if any(
            values[i] is not None for parts in (parts_a, parts_b) for values in parts.values())]
        if not kept or set(parts_a) != set(parts_b):
            continue
        tests = unless_failing(paired, metric, {k: [v[i] for i in kept] for k, v in parts_a.items()},
                               {k: [v[i] for i in kept] for k, v in parts_b.items()}, np.asarray(groups)[kept],
                               resamples, seed, CONFIDENCE)
        if tests is None:
            continue
        values = {value: as_json(tests[value]) for value in row["metrics"][name]
                  if value in tests and not is_count(value)}
        if values:
            found[name] = values
    return found


def metric_parts(samples: Sequence[dict], metric: str) -> dict[str, list[float | None]]:
    """``{part: [value per line]}`` of ``metric`` from samples.jsonl lines: a line's ``parts`` where
    the metric recorded them, else its ``scores`` (None where a line has no value)."""
    with_parts = any(metric in (s.get("parts") or {}) for s in samples)
    lines = [((s.get("parts") or {}) if with_parts else (s.get("scores") or {})).get(metric) or {} for s in samples]
    names = list(dict.fromkeys(name for line in lines for name in line))
    return {name: [line.get(name) for line in lines] for name in names}


def _metric(options: Mapping, name: str, where: str):
    """Metric ``name`` made with the ``options`` the cell recorded (secrets and file digests left
    out), or None (one warning line) when it cannot be made now."""
    from ..api import get_metric
    from ..component_options import qualified

    try:
        taken = options.get(qualified(("metrics", name)), options.get(name)) or {}
        return get_metric(name, **{option: value for option, value in taken.items()
                                   if not is_secret(option) and not option.endswith("_digest")})
    except CtrlkitError as exc:
        logger.warning("ctrlkit: %s: metric '%s' cannot be made to recompute its values (%s); not compared",
                       where, name, exc)
        return None
