"""Scoring: each metric scores the examples carrying what it reads; the bootstrap intervals of
the corpus values, and with a baseline the paired differences (:mod:`ctrlkit.uncertainty`)."""

from __future__ import annotations

from contextlib import nullcontext
from typing import Mapping, Sequence

from ..components import Backbone
from ..controls import scored_indices
from ..errors import CtrlkitError
from ..intake import beyond_float, plain, scalar
from ..metric_values import is_count, number
from ..progress import Progress
from ..topic_source import ranks
from ..types import Example, MetricResult
from ..uncertainty import corpus_intervals, paired_differences
from .scores import Scores
from .truncation import truncation_reported


def intervals_of(metrics, arms: Mapping[str, Scores], groups, resamples: int, seed: int,
                 progress: bool = False) -> dict:
    """``{"run": intervals, "baseline": intervals, "paired": differences}`` for the arms scored
    (``baseline`` and ``paired`` only with a baseline); empty when ``resamples`` is 0."""
    if not resamples:
        return {}
    steps = len(metrics) * (2 * len(arms) - 1)
    with Progress(f"bootstrap [{resamples} resamples]", steps, "metrics", enabled=progress) as bar:
        found = {arm: corpus_intervals(metrics, scores, groups, resamples, seed, bar) for arm, scores in arms.items()}
        if "baseline" in arms:
            found["paired"] = paired_differences(metrics, arms["run"], arms["baseline"], groups, resamples, seed, bar)
    return found


def score(metrics, predictions: Sequence[str], examples: Sequence[Example], progress: bool = False,
          unreferenced: bool = False, judge: Backbone | None = None, scoring: str = "") -> Scores:
    """Score with each metric the examples that carry every control it reads (the others get
    None for each of its values); its corpus values are over those examples only. With
    ``unreferenced`` see :func:`scoring_indices`. The prompts ``judge`` cut to its input limit
    are reported once for each metric that asks it, naming what is ``scoring`` (``controller 'tag'``)."""
    with Progress(f"score {len(examples)} examples", len(metrics), "metrics", enabled=progress) as bar:
        return _score(metrics, predictions, examples, bar, unreferenced, judge, scoring)


def scoring_indices(metric, examples: Sequence[Example], unreferenced: bool = False) -> list[int]:
    """The positions of the examples ``metric`` scores (``controls.scored_indices``); with
    ``unreferenced`` (topics picked by a non-oracle topic source, where an example may have no
    reference for its topic), a metric that needs references skips the examples without one."""
    keep = scored_indices(metric, examples)
    if unreferenced and metric.needs_references:
        keep = [i for i in keep if examples[i].references]
    return keep


def scores_by_rank(metrics, predictions: Sequence[str], examples: Sequence[Example]) -> dict[str, dict]:
    """For topics picked by rank (``topic_source`` ``topK``): each rank's examples scored apart,
    ``{rank: {"n_examples", "scored", "metrics"}}``. A judge's cut prompts are not reported again:
    they were when the whole arm was scored."""
    by_rank = {}
    for rank, positions in ranks(examples).items():
        scores = score(metrics, [predictions[i] for i in positions], [examples[i] for i in positions],
                       unreferenced=True)
        by_rank[str(rank)] = {"n_examples": len(positions), "scored": scores.scored, "metrics": scores.corpus}
    return by_rank


def _score(metrics, predictions, examples, bar: Progress, unreferenced: bool = False, judge=None,
           scoring: str = "") -> Scores:
    corpus: dict[str, dict] = {}
    per_example: list[dict] = [{} for _ in examples]
    details: list[dict] = [{} for _ in examples]
    scored: dict[str, int] = {}
    parts: dict[str, tuple[list[int], dict]] = {}
    per_example_parts: list[dict] = [{} for _ in examples]
    for metric in metrics:
        bar.update(0, f"metric '{metric.name}'")
        keep = scoring_indices(metric, examples, unreferenced)
        scored[metric.name] = len(keep)
        if not keep:
            corpus[metric.name] = {}
            bar.update(1)
            continue
        asking = f"judge of metric '{metric.name}'" + (f", {scoring}" if scoring else "")
        with (truncation_reported(judge, asking, judge=True) if judge is not None and metric.needs_judge
              else nullcontext()):
            result = _computed(metric, predictions if len(keep) == len(examples) else [predictions[i] for i in keep],
                               examples if len(keep) == len(examples) else [examples[i] for i in keep])
        for i, detail in zip(keep, result.details or []):
            details[i][metric.name] = detail
        for value_name, values in result.per_example.items():
            for scores in per_example:
                scores.setdefault(metric.name, {})[value_name] = None
            for i, value in zip(keep, values):
                per_example[i][metric.name][value_name] = number(value, is_count(value_name))
        corpus[metric.name] = {name: number(value, is_count(name)) for name, value in result.corpus.items()}
        parts[metric.name] = (keep, result.aggregation_parts())
        if result.parts is not None and result.parts != result.per_example:
            for name, values in result.parts.items():
                for i, value in zip(keep, values):
                    per_example_parts[i].setdefault(metric.name, {})[name] = number(value)
        bar.update(1)
    return Scores(corpus, per_example, details, scored, parts, per_example_parts)


def _computed(metric, predictions, examples) -> MetricResult:
    """``metric.compute`` of what it scores, its result made plain (:func:`_plain_result`); an
    error inside it (other than ctrlkit's own, which names what it is about) is one line naming
    the metric. The generations are in the cache by now, so a rerun does not generate again."""
    try:
        result = metric.compute(predictions, examples)
    except CtrlkitError:
        raise
    except Exception as exc:  # noqa: BLE001 -- a plugin's bug, named in one line
        text = " ".join(str(exc).split())
        text = text if len(text) <= 300 else text[:300] + "..."
        raise CtrlkitError(f"metric '{metric.name}' failed while scoring {len(examples)} examples: "
                           f"{type(exc).__name__}" + (f": {text}" if text else "")) from exc
    return _plain_result(result, metric.name, len(examples))


def _plain_result(result, name: str, n: int) -> MetricResult:
    """``result`` with every number a Python float, int or None and its details plain JSON data
    (numpy scalars converted); anything else (no MetricResult, a value that is text, complex or an
    array, a list of values of another length than ``n``) is one line naming the metric and field."""
    where = f"metric '{name}'"
    if not isinstance(result, MetricResult):
        raise CtrlkitError(f"{where} returned {type(result).__name__}, not a MetricResult")

    def numbers(field: str, values) -> dict:
        if values is None and field == "parts":
            return None
        if not isinstance(values, Mapping):
            raise CtrlkitError(f"{where}: '{field}' is {type(values).__name__}, not a dict of values")
        return {str(key): value for key, value in values.items()}

    def one(value, field: str):
        value = scalar(value)
        if beyond_float(value):
            raise CtrlkitError(f"{where}: {field} {beyond_float(value)}")
        if value is None or type(value) in (int, float):
            return value
        if type(value) is bool:
            return int(value)
        raise CtrlkitError(f"{where}: {field} is {type(value).__name__} {str(value)[:40]!r}, not a number")

    def each(values, field: str) -> list:
        if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__len__") or \
                getattr(values, "ndim", 1) != 1:
            raise CtrlkitError(f"{where}: '{field}' is {type(values).__name__}, not a list of {n} values")
        if len(values) != n:
            raise CtrlkitError(f"{where} returned {len(values)} '{field}' values for {n} examples")
        return [one(value, f"'{field}'[{i}]") for i, value in enumerate(values)]

    per_example = {key: each(values, key) for key, values in numbers("per_example", result.per_example).items()}
    corpus = {key: one(value, f"corpus '{key}'") for key, value in numbers("corpus", result.corpus).items()}
    parts = numbers("parts", result.parts)
    if parts is not None:
        parts = {key: each(values, key) for key, values in parts.items()}
    details = result.details
    if details is not None:
        if isinstance(details, (str, bytes, Mapping)) or not isinstance(details, Sequence):
            raise CtrlkitError(f"{where}: 'details' is {type(details).__name__}, not a list")
        if len(details) != n:
            raise CtrlkitError(f"{where} returned {len(details)} details for {n} examples")
        details = [plain(detail, f"{where}: details[{i}]") for i, detail in enumerate(details)]
    return MetricResult(per_example=per_example, corpus=corpus, details=details, parts=parts)
