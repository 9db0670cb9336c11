"""``ctrlkit evaluate``: score predictions made elsewhere, with the same results files as a run.

The predictions file has one JSON object per line, ``{"id": ..., "prediction": ...}``; any
other field (human scores, a system name, stored metric values) is kept with the sample under
``given``, so meta-evaluation can correlate it with the metrics. Without a file, the
predictions are the dataset's own (``meta["prediction"]``, as the ``fd`` dataset gives them),
and the rest of each example's ``meta`` is kept under ``given``.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from .api import get_dataset
from .component_options import RunOptions
from .cache import scope as cache_scope
from .errors import ConfigurationError, CtrlkitError, DatasetError
from .files import read_jsonl
from .intake import Intake, admit_examples
from .bootstrap import groups_of
from .engine.recording import RunResult, report_skipped, sample_head
from .engine.scoring import intervals_of, score
from .engine.setup import (DEFAULT_METRICS, bind_metrics, check_counts, check_metrics, check_topics, components,
                           create_metrics, create_vectorizers, default_scorers, judge_options, resolved_options,
                           seed_everything, timed, topic_spaces, used_vectorizers, with_data)
from .outputs import check_output, leaves_no_empty_folder
from .quiet import quietly
from .results import SCHEMA_VERSION, versions, write_run
from .secrets import mask_secrets
from .uncertainty import DEFAULT_RESAMPLES, check_resamples, recorded


def read_predictions(path: str) -> dict[str, dict]:
    """id -> the line's object; every line needs an ``id`` and a string ``prediction``. Lone
    surrogates become U+FFFD and NaN or infinite numbers null (``intake``), counted in one warning."""
    predictions: dict[str, dict] = {}
    intake = Intake(path)
    for line, record in read_jsonl(path):
        record = {intake.text(name, "given"): intake.value(value, name if name in ("id", "prediction") else "given")
                  for name, value in record.items()}
        if record.get("id") in (None, ""):
            raise DatasetError(f"{path}:{line}: field 'id' is missing")
        if "prediction" not in record:
            raise DatasetError(f"{path}:{line}: field 'prediction' is missing (fields: {', '.join(record)})")
        if not isinstance(record["prediction"], str):
            raise DatasetError(f"{path}:{line}: field 'prediction' must be a string, got "
                               f"{'null' if record['prediction'] is None else type(record['prediction']).__name__}")
        identifier = str(record["id"])
        if identifier in predictions:
            raise DatasetError(f"{path}:{line}: duplicate id '{identifier}'")
        predictions[identifier] = record
    intake.report()
    return predictions


def _dataset_predictions(examples, dataset: str) -> dict[str, dict]:
    lacking = [example.id for example in examples if not isinstance(example.meta.get("prediction"), str)]
    if lacking:
        raise CtrlkitError(f"dataset '{dataset}' gives no prediction for example '{lacking[0]}'; "
                           "pass --predictions FILE")
    return {example.id: {**example.meta, "id": example.id} for example in examples}


def check_matched(given: Mapping[str, Any], examples, source: str, dataset: str) -> None:
    """Refuse, in one line, predictions whose id is no example's and examples that have no
    prediction, naming the first id of each."""
    known = {example.id for example in examples}
    unknown = [identifier for identifier in given if identifier not in known]
    missing = [example.id for example in examples if example.id not in given]
    problems = []
    if unknown:
        problems.append(f"{_count(unknown, 'prediction')} with an id that is no example of dataset '{dataset}' "
                        f"(first: id '{unknown[0]}')")
    if missing:
        problems.append(f"{_count(missing, 'example')} with no prediction (first: id '{missing[0]}')")
    if problems:
        raise CtrlkitError(f"{source}: {'; '.join(problems)}")


def _count(items, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


@leaves_no_empty_folder
@quietly
def evaluate(
    *,
    predictions: str | None = None,
    dataset: str = "sample",
    data: str | None = None,
    split: str | None = None,
    metrics: Sequence[str] | None = None,
    topics: str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    judge: str | None = None,
    limit: int | None = None,
    strict_controls: bool = False,
    bootstrap: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    out: str | None = None,
    progress: bool = False,
) -> RunResult:
    """Score ``predictions`` (a JSONL file) against ``dataset``'s examples with ``metrics`` (None:
    rouge, and stas when some example has a topic, as in :func:`ctrlkit.run`).

    Every example (after ``limit``) needs a prediction, and every prediction an example: a
    mismatch is an error rather than a silently smaller corpus. A metric that reads a control
    scores the examples carrying it (``scored`` counts them); ``strict_controls`` refuses instead.
    ``bootstrap`` resamples (default 1000; 0 skips), drawn with ``seed``, give each corpus value a
    95% interval and a standard error (``intervals``), as in :func:`ctrlkit.run`.
    ``progress`` shows the scoring's progress on stderr (``ctrlkit.progress``)."""
    started = time.perf_counter()
    timings: dict[str, float] = {}
    routed = RunOptions(with_data(options, dataset, data),
                        components(dataset=dataset, metrics=metrics or DEFAULT_METRICS, judge=judge))
    if out is not None:
        check_output(out)
    check_counts(limit=limit)
    check_resamples(bootstrap)
    seed_everything(seed)
    source = get_dataset(dataset, **routed.of("datasets", dataset))
    if metrics is not None and not metrics:
        raise ConfigurationError("an evaluation needs at least one metric")
    scorers, judging = create_metrics(metrics or DEFAULT_METRICS, routed, judge)
    vectorizers = create_vectorizers([m for m in scorers if m.topic_vectorizer], routed)
    routed.check_unused()

    with timed(timings, "load_s"):
        chosen_split = split if split is not None else source.default_split
        examples = admit_examples(source.load(chosen_split)[:limit], dataset)
        given = read_predictions(predictions) if predictions else _dataset_predictions(examples, dataset)
    report_skipped(source, dataset)
    check_matched(given, examples, predictions or "predictions", dataset)
    if not examples:
        raise CtrlkitError(f"dataset '{dataset}' gave no examples")
    if metrics is None:
        scorers = default_scorers(scorers, examples, dataset)
        vectorizers = used_vectorizers(vectorizers, [m for m in scorers if m.topic_vectorizer])
    check_metrics(scorers, examples, source, dataset, strict_controls)
    with timed(timings, "topic_space_s"):
        spaces = topic_spaces(vectorizers, topics, source, dataset)
    for metric in scorers:
        if metric.topic_vectorizer:
            check_topics(metric, spaces[metric.topic_vectorizer], examples)
    bind_metrics(scorers, spaces)

    texts = [given[example.id]["prediction"] for example in examples]
    with timed(timings, "score_s"), cache_scope():  # a broken cache is reported once, as in a run
        scores = score(scorers, texts, examples, progress, judge=judging, scoring="the given predictions")
    groups = groups_of(examples, source)
    with timed(timings, "bootstrap_s"):
        uncertainty = intervals_of(scorers, {"run": scores}, groups, bootstrap, seed, progress)
    timings["total_s"] = time.perf_counter() - started
    results = {
        "schema_version": SCHEMA_VERSION,
        "config": mask_secrets({"mode": "evaluate", "predictions": predictions, "dataset": dataset, "data": data,
                   "split": chosen_split, "split_origin": source.describe_split(chosen_split),
                   "metrics": [m.name for m in scorers], "topics": topics, "judge": judge,
                   "judge_options": judge_options(judging), "limit": limit, "strict_controls": strict_controls,
                   "seed": seed,
                   "bootstrap": recorded(bootstrap, seed, source),
                   "options": resolved_options(routed, datasets=[source], metrics=scorers,
                                               vectorizers=vectorizers.values())}),
        "versions": versions(),
        "n_examples": len(examples),
        "n_skipped": source.skipped,
        "scored": scores.scored,
        "metrics": scores.corpus,
        "intervals": uncertainty.get("run"),
        "baseline": None,
        "timings": {name: round(seconds, 4) for name, seconds in timings.items()},
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    samples = []
    for i, example in enumerate(examples):
        extra = {key: value for key, value in given[example.id].items() if key not in ("id", "prediction")}
        sample = {**sample_head(example, groups[i]), "prediction": texts[i], "scores": scores.per_example[i]}
        if scores.per_example_parts[i]:
            sample["parts"] = scores.per_example_parts[i]
        if scores.details[i]:
            sample["details"] = scores.details[i]
        if extra:
            sample["given"] = extra
        samples.append(sample)
    if out is not None:
        write_run(out, results, samples)
    return RunResult(results, samples)
