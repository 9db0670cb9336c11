"""How a metric value is named in every table, which way it is better, and how it is written.

A run scores corpus values as ``{metric: {value: number}}``. Every table (the text table of
``ctrlkit run``, a sweep's table.md, table.csv and table.json, a report, interference.json) names
a value ``metric.value``, or just ``metric`` when the value bears the metric's name: ``stas`` and
``stas.above_threshold``, never ``stas.stas``.

Which way a value is better decides the best value a sweep table or a report marks. A value
with no better direction (a count of examples, a reading grade, a reference's own value) is
marked nowhere, since its largest value is not a better one.
"""

from __future__ import annotations

import math
from typing import Iterable, Literal

Better = Literal["higher", "lower"] | None

LOWER_IS_BETTER = frozenset({"mad", "word_mad", "abs_bin_error", "abs_word_error", "failed", "empty"})
"""Values where smaller is better, whatever their metric; so is every ``..._gap`` (a distance)."""

COUNTS = frozenset({"left_out", "unscored", "failed", "empty"})
"""Values that count things; so do those named ``n_...``. Counts of failures are better when smaller;
the others count what the data holds, and are not ranked."""

UNRANKED = frozenset({"pcc_defined", "fkgl", "fkgl_normal", "fkgl_high"})
"""Values with no better direction: a flag, reading grades (a grade is what was asked, not a score);
so has every ``gold_...`` (the references' own value)."""


def label(metric: str, value: str) -> str:
    """The name of a corpus value in every table: ``metric.value``, or ``metric`` for its namesake."""
    return metric if value == metric else f"{metric}.{value}"


def is_count(value: str) -> bool:
    """Values that count things (``n_topic``, ``left_out``), shown as whole numbers."""
    return value.startswith("n_") or value in COUNTS


def number(value, count: bool = False) -> float | int | None:
    """A finite float, or None for an undefined value (JSON has no NaN); a ``count`` that is a
    whole number is an int (``"failed": 2``, not ``2.0``)."""
    if value is None:
        return None
    value = float(value)
    if not math.isfinite(value):
        return None
    return int(value) if count and value.is_integer() else value


def better(value: str, higher_is_better: bool | None = True) -> Better:
    """Which way ``value`` is better: ``"higher"``, ``"lower"``, or None when neither is; where its
    name does not say, its metric's ``higher_is_better`` does (None: no direction)."""
    if value in LOWER_IS_BETTER or value.endswith("_gap"):
        return "lower"
    if is_count(value) or value in UNRANKED or value.startswith("gold_"):
        return None
    if higher_is_better is None:
        return None
    return "higher" if higher_is_better else "lower"


def directions(metrics: Iterable[str]) -> dict[str, bool | None]:
    """Each metric's ``higher_is_better``, read from its registered class (nothing is built); True
    for a metric that is not installed now or cannot be imported, as for any other metric."""
    from .errors import CtrlkitError
    from .plugins import get_registry

    registry = get_registry("metrics")
    found = {}
    for metric in dict.fromkeys(metrics):
        try:
            declared = getattr(registry.entry(metric).load("metric"), "higher_is_better", True)
        except CtrlkitError:
            declared = True
        found[metric] = declared if declared is None or isinstance(declared, bool) else True
    return found


def count_labels(metrics: dict) -> set[str]:
    """The labels of the values of ``{metric: {value: number}}`` that count things."""
    return {label(metric, value) for metric, values in metrics.items() for value in values if is_count(value)}


def value_directions(metrics: dict) -> dict[str, Better]:
    """``{label: better}`` of every value of ``{metric: {value: number}}``."""
    higher = directions(metrics)
    return {label(metric, value): better(value, higher[metric]) for metric, values in metrics.items()
            for value in values}


def best(values: Iterable[float | None], direction: Better) -> float | None:
    """The best of ``values`` (None: undefined) that way; None when there is no better way, or
    fewer than two values differ (one controller, or all alike, has no best one)."""
    defined = {value for value in values if value is not None}
    if direction is None or len(defined) < 2:
        return None
    return min(defined) if direction == "lower" else max(defined)
