"""``ctrlkit evaluate``: score predictions made elsewhere, with the same results files as a run.

The predictions file has one JSON object per line, ``{"id": ..., "prediction": ...}``; any
other field (human scores, a system name, stored metric values) is kept with the sample under
``given``, so meta-evaluation can correlate it with the metrics. Without a file, the
predictions are the dataset's own (``meta["prediction"]``, as the ``fd`` dataset gives them),
and the rest of each example's ``meta`` is kept under ``given``.
"""

from __future__ import annotations

import time
from contextlib import closing
from datetime import datetime, timezone
from itertools import islice
from typing import Any, Mapping, Sequence

from .cache import scope as cache_scope
from .errors import ConfigurationError, CtrlkitError, DatasetError
from .files import read_jsonl
from .intake import Intake, admit_examples
from .bootstrap import groups_of
from .engine.assembly import DEFAULT_METRICS, assemble, default_metrics, judge_options
from .engine.checks import check_metrics, seed_everything
from .engine.settings import check_counts
from .engine.recording import RunResult, report_skipped, sample_head, timed
from .engine.scoring import intervals_of, score
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
    if out is not None:
        check_output(out)
    check_counts(limit=limit)
    check_resamples(bootstrap)
    seed_everything(seed)
    if metrics is not None and not metrics:
        raise ConfigurationError("an evaluation needs at least one metric")
    parts = assemble(dataset=dataset, data=data, options=options, metrics=metrics or DEFAULT_METRICS, judge=judge)
    source = parts.dataset
    with timed(timings, "load_s"):
        chosen_split = split if split is not None else source.default_split
        with closing(source.iter_examples(chosen_split)) as streamed:  # --limit N reads the first N lines
            examples = admit_examples(list(islice(streamed, limit)), dataset)
        given = read_predictions(predictions) if predictions else _dataset_predictions(examples, dataset)
    report_skipped(source, dataset)
    check_matched(given, examples, predictions or "predictions", dataset)
    if not examples:
        raise CtrlkitError(f"dataset '{dataset}' gave no examples")
    if metrics is None:
        parts.keep_metrics(default_metrics(examples, dataset))
    check_metrics(parts.metrics, examples, source, dataset, strict_controls)
    with timed(timings, "topic_space_s"):
        parts.fit_topic_spaces(topics, examples, dataset)

    texts = [given[example.id]["prediction"] for example in examples]
    with timed(timings, "score_s"), cache_scope():  # a broken cache is reported once, as in a run
        scores = score(parts.metrics, texts, examples, progress, judge=parts.judge, scoring="the given predictions")
    groups = groups_of(examples, source)
    with timed(timings, "bootstrap_s"):
        uncertainty = intervals_of(parts.metrics, {"run": scores}, groups, bootstrap, seed, progress)
    timings["total_s"] = time.perf_counter() - started
    config = {"mode": "evaluate", "predictions": predictions, "dataset": dataset, "data": data, "split": chosen_split,
              "split_origin": source.describe_split(chosen_split), "metrics": [m.name for m in parts.metrics],
              "topics": topics, "judge": judge, "judge_options": judge_options(parts.judge), "limit": limit,
              "strict_controls": strict_controls, "seed": seed, "bootstrap": recorded(bootstrap, seed, source),
              "options": parts.recorded_options()}
    results = {
        "schema_version": SCHEMA_VERSION,
        "config": mask_secrets(config),
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
    samples = evaluation_samples(examples, given, texts, scores, groups)
    if out is not None:
        write_run(out, results, samples)
    return RunResult(results, samples)


def evaluation_samples(examples, given: Mapping[str, dict], texts: list[str], scores, groups) -> list[dict]:
    """One samples.jsonl line per example: its prediction and scores, and the prediction line's
    other fields under ``given``."""
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
    return samples
