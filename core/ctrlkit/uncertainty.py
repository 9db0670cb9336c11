"""What a run or an evaluation records of how sure its corpus values are: a bootstrap interval
for each (``intervals``), and with a baseline, the paired difference (``paired``); the engine is
:mod:`ctrlkit.bootstrap`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Mapping, Sequence

from .errors import OptionError
from .metric_values import is_count, number
from .progress import Progress

if TYPE_CHECKING:
    import numpy as np

    from .engine.scores import Scores

DEFAULT_RESAMPLES = 1000
"""Bootstrap resamples of a run or an evaluation unless told otherwise (``--bootstrap``)."""
CONFIDENCE = 0.95
COUNTS = ("permutations", "undefined_resamples")
"""Keys of an interval or a paired test that count draws: written as whole numbers."""
logger = logging.getLogger("ctrlkit")


MAX_RESAMPLES = 100_000
"""The most resamples asked for: a 95% interval's ends move by well under its width's 1% past
10,000, and 10^9 resamples would need tens of GiB before the first is drawn."""


def check_resamples(resamples, name: str = "bootstrap") -> None:
    """``bootstrap`` (or the option ``name``) is a whole number of resamples, 0 to skip the
    intervals, at most ``MAX_RESAMPLES``; one resample has no spread."""
    if isinstance(resamples, bool) or not isinstance(resamples, int) or resamples < 0 or resamples == 1 \
            or resamples > MAX_RESAMPLES:
        raise OptionError(f"{name} must be a whole number of resamples, at least 2 and at most {MAX_RESAMPLES:,} "
                          f"(0 skips the intervals), got {resamples!r}")


def recorded(resamples: int, seed: int, dataset) -> dict:
    """``config.bootstrap`` of results.json."""
    return {"resamples": resamples, "seed": seed, "confidence": CONFIDENCE,
            "groups": getattr(dataset, "group_field", None)}


def corpus_intervals(metrics: Sequence, scores: "Scores", groups: "np.ndarray", resamples: int, seed: int,
                     bar: Progress) -> dict[str, dict]:
    """``{metric: {value: {"low", "high", "se"}}}`` for the values each metric's ``aggregate``
    recomputes, over the examples it scored (their groups)."""
    from .bootstrap import intervals
    found = {}
    for metric in metrics:
        positions, parts = scores.parts.get(metric.name, ([], {}))
        if len(positions):
            values = unless_failing(intervals, metric, parts, groups[positions], resamples, seed, CONFIDENCE)
            if values is not None:
                found[metric.name] = _recorded(values, scores.corpus[metric.name])
        bar.update(1)
    return found


def paired_differences(metrics: Sequence, run: "Scores", baseline: "Scores", groups: "np.ndarray", resamples: int,
                       seed: int, bar: Progress) -> dict[str, dict]:
    """``{metric: {value: {"difference", "low", "high", "se", "p"}}}``: the run minus its baseline
    on the examples both scored (:func:`ctrlkit.bootstrap.paired`)."""
    import numpy as np

    from .bootstrap import paired
    found = {}
    for metric in metrics:
        positions, parts = run.parts.get(metric.name, ([], {}))
        base_positions, base_parts = baseline.parts.get(metric.name, ([], {}))
        if len(positions) and np.array_equal(positions, base_positions):
            values = unless_failing(paired, metric, parts, base_parts, groups[positions], resamples, seed,
                                    CONFIDENCE)
            if values is not None:
                found[metric.name] = _recorded(values, run.corpus[metric.name])
        bar.update(1)
    return found


def unless_failing(engine, metric, *arguments):
    """``engine(metric, *arguments)`` (:func:`ctrlkit.bootstrap.intervals` or ``paired``), or None with
    one warning line when the metric's ``aggregate`` fails: intervals are extra, and a plugin's
    faulty ``aggregate`` must not lose the scores already computed."""
    from .bootstrap import AggregateError
    try:
        return engine(metric, *arguments)
    except AggregateError as exc:
        logger.warning("ctrlkit: %s; its values get no interval or paired test", exc)
        return None


def _recorded(values: Mapping[str, Mapping[str, float]], corpus: Mapping) -> dict:
    """The values that are corpus values of the metric and not counts, as JSON numbers, in the
    order the metric gave its corpus values."""
    return {name: as_json(values[name]) for name in corpus if name in values and not is_count(name)}


def as_json(summary: Mapping[str, float]) -> dict:
    """An interval or a paired test as JSON numbers: the counts (:data:`COUNTS`) as ints, so
    ``permutations`` reads 1000, not 1000.0; an undefined number as None, and the text saying why
    an interval is undefined (``undefined``) as it is."""
    return {key: x if isinstance(x, str) else number(x, count=key in COUNTS) for key, x in summary.items()}
