"""``ctrlkit evaluate``: score predictions made elsewhere, with the same results files as a run.

The predictions file has one JSON object per line, ``{"id": ..., "prediction": ...}``; any
other field (human scores, a system name, stored metric values) is kept with the sample under
``given``, so meta-evaluation can correlate it with the metrics. Without a file, the
predictions are the dataset's own (``meta["prediction"]``, as the ``fd`` dataset gives them),
and the rest of each example's ``meta`` is kept under ``given``.
"""

from __future__ import annotations

import json
import logging
import time
from array import array
from contextlib import closing, nullcontext
from datetime import datetime, timezone
from itertools import islice
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from .bootstrap import GroupCodes
from .cache import scope as cache_scope
from .controls import carries
from .digest import hash64
from .errors import ConfigurationError, CtrlkitError
from .intake import Intake, admit_examples
from .engine.assembly import DEFAULT_METRICS, assemble, default_metrics, judge_options
from .engine.checks import MetricTally, check_scored, check_topics, seed_everything
from .engine.settings import check_counts
from .engine.recording import RunResult, report_skipped, sample_head, timed
from .engine import scored_chunks
from .engine.scored_chunks import ScoredChunks, chunk_size
from .engine.scoring import intervals_of, score
from .engine.truncation import truncation_reported
from .outputs import RUN_FILES, check_output, leaves_no_empty_folder, refuse_writing_over_inputs
from .prediction_index import PredictionIndex, shown_id
from .progress import Progress
from .quiet import quietly
from .results import SCHEMA_VERSION, SamplesFile, finish_run, samples_written, versions
from .secrets import mask_secrets
from .uncertainty import DEFAULT_RESAMPLES, check_resamples, recorded

logger = logging.getLogger("ctrlkit")


class Survey:
    """A first pass over the examples, a chunk at a time: how many there are, which have a
    prediction, the controls and references the metrics require (:class:`MetricTally`), the
    bootstrap groups, one example carrying each control a metric reads (what
    :func:`default_metrics` looks at), and the examples themselves while they fit in one chunk."""

    def __init__(self, metrics, source, dataset: str, index: PredictionIndex | None):
        self.dataset, self.index = dataset, index
        self.count = 0
        self.fingerprints = array("Q")  # of each example, so the second read is known to give the same ones
        self.without_prediction = 0
        self.first_without: str | None = None
        self.tally = MetricTally(metrics)
        self.groups = GroupCodes(source)
        self.reads = {attribute for metric in metrics for attribute in metric.reads}
        self.carrying: dict[str, Any] = {}
        self.held: list | None = []
        self.intake = Intake(f"dataset '{dataset}'")

    def add(self, chunk: list) -> None:
        self.count += len(chunk)
        ids = [example.id for example in chunk]
        self.fingerprints.extend(fingerprint(example) for example in chunk)
        if self.index is not None:
            found = self.index.find(ids)
            lacking = [identifier for identifier, has in zip(ids, found) if not has]
        else:
            lacking = [example.id for example in chunk if not isinstance(example.meta.get("prediction"), str)]
            if lacking:
                raise CtrlkitError(f"dataset '{self.dataset}' gives no prediction for example '{shown_id(lacking[0])}'; "
                                   "pass --predictions FILE")
        self.without_prediction += len(lacking)
        self.first_without = self.first_without or (lacking[0] if lacking else None)
        self.tally.add(chunk)
        self.groups.add(chunk)
        for attribute in self.reads - set(self.carrying):
            for example in chunk:
                if carries(example, attribute):
                    self.carrying[attribute] = example
                    break
        if self.held is not None:
            self.held = self.held + chunk if self.count <= scored_chunks.CHUNK_EXAMPLES else None

    def check_same(self, start: int, chunk: list) -> None:
        """Refuse a second read of the examples that does not give the first one's, in its order."""
        if start + len(chunk) > self.count or any(
                self.fingerprints[start + i] != fingerprint(example) for i, example in enumerate(chunk)):
            self.refuse_changed()

    def refuse_changed(self) -> None:
        raise CtrlkitError(f"dataset '{self.dataset}' changed while it was evaluated (a second read gave other "
                           "examples than the first); nothing was written; evaluate it again")

    def refuse_mismatch(self, source: str) -> None:
        """Refuse, in one line, predictions whose id is no example's and examples that have no
        prediction, naming the first id of each."""
        problems = []
        unknown, first_unknown = self.index.unused() if self.index is not None else (0, None)
        if unknown:
            problems.append(f"{_count(unknown, 'prediction')} with an id that is no example of dataset "
                            f"'{self.dataset}' (first: id '{shown_id(first_unknown)}')")
        if self.without_prediction:
            problems.append(f"{_count(self.without_prediction, 'example')} with no prediction "
                            f"(first: id '{shown_id(self.first_without)}')")
        if problems:
            raise CtrlkitError(f"{source}: {'; '.join(problems)}")


def fingerprint(example) -> int:
    """A 64-bit hash of all an example is checked and scored on: its id, document, references,
    controls and meta (a dataset's own prediction among them)."""
    described = json.dumps([example.controls, example.meta], sort_keys=True, default=str)
    return hash64("\x00".join((example.id, example.document, *example.references, described)))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def chunks_of(source, split, limit: int | None, dataset: str, intake: Intake, size: int) -> Iterator[list]:
    """The admitted examples of ``split`` (the first ``limit``), ``size`` at a time."""
    with closing(source.iter_examples(split)) as streamed:  # --limit N reads the first N lines
        streamed = islice(streamed, limit)
        while chunk := list(islice(streamed, size)):
            yield admit_examples(chunk, dataset, intake)


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
    ``progress`` shows the scoring's progress on stderr (``ctrlkit.progress``).

    Memory stays bounded however many predictions there are: the examples are read twice (checked,
    then scored), 10,000 at a time when every metric allows it
    (:attr:`ctrlkit.Metric.scores_each_example_alone`), and the predictions file is indexed by id;
    the samples go to ``out`` as they are scored, and the result's ``samples`` reads them back from
    there a line at a time (with no ``out``, they are kept in memory)."""
    started = time.perf_counter()
    timings: dict[str, float] = {}
    if out is not None:
        check_output(out)
        refuse_writing_over_inputs([Path(out) / name for name in RUN_FILES],
                                   {"--predictions": predictions, "--data": data, "--topics": topics})
    check_counts(limit=limit)
    check_resamples(bootstrap)
    seed_everything(seed)
    if metrics is not None and not metrics:
        raise ConfigurationError("an evaluation needs at least one metric")
    parts = assemble(dataset=dataset, data=data, options=options, metrics=metrics or DEFAULT_METRICS, judge=judge)
    source = parts.dataset
    chosen_split = split if split is not None else source.default_split
    with timed(timings, "load_s"):
        index = PredictionIndex(predictions) if predictions else None
        survey = Survey(parts.metrics, source, dataset, index)
        for chunk in chunks_of(source, chosen_split, limit, dataset, survey.intake, scored_chunks.CHUNK_EXAMPLES):
            survey.add(chunk)
        survey.intake.report()
    report_skipped(source, dataset)
    survey.refuse_mismatch(predictions or "predictions")
    if not survey.count:
        raise CtrlkitError(f"dataset '{dataset}' gave no examples")
    if metrics is None:
        parts.keep_metrics(default_metrics(list(survey.carrying.values()), dataset))
    survey.tally.refuse(parts.metrics, dataset, strict_controls)
    for metric in parts.metrics:
        metric.use_dataset(source)
    with timed(timings, "topic_space_s"):
        parts.fit_topic_spaces(topics, [], dataset)  # each chunk's topics are checked as it is scored

    groups = survey.groups.codes()
    size = chunk_size(parts.metrics, survey.count)
    if survey.held is not None:
        chunks = (survey.held[start:start + size] for start in range(0, survey.count, size))
    else:
        _say_held_at_once(parts.metrics, survey.count, size)
        chunks = chunks_of(source, chosen_split, limit, dataset, Intake(f"dataset '{dataset}'"), size)
    with samples_written(out) as written:
        with timed(timings, "score_s"), cache_scope():  # a broken cache is reported once, as in a run
            scores = _scored_in_chunks(parts, chunks, index, survey, groups, written, survey.count > size, progress)
        with timed(timings, "bootstrap_s"):
            uncertainty = intervals_of(parts.metrics, {"run": scores}, groups, bootstrap, seed, progress)
        timings["total_s"] = time.perf_counter() - started
        config = {"mode": "evaluate", "predictions": predictions, "dataset": dataset, "data": data,
                  "split": chosen_split, "split_origin": source.describe_split(chosen_split),
                  "metrics": [m.name for m in parts.metrics], "topics": topics, "judge": judge,
                  "judge_options": judge_options(parts.judge), "limit": limit, "strict_controls": strict_controls,
                  "seed": seed, "bootstrap": recorded(bootstrap, seed, source), "options": parts.recorded_options()}
        results = {
            "schema_version": SCHEMA_VERSION,
            "config": mask_secrets(config),
            "versions": versions(),
            "n_examples": survey.count,
            "n_skipped": source.skipped,
            "scored": scores.scored,
            "metrics": scores.corpus,
            "intervals": uncertainty.get("run"),
            "baseline": None,
            "timings": {name: round(seconds, 4) for name, seconds in timings.items()},
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
    if out is None:
        return RunResult(results, written.kept)
    finish_run(out, results, written)
    return RunResult(results, SamplesFile(Path(out) / "samples.jsonl", written.offsets))


def _scored_in_chunks(parts, chunks, index, survey: Survey, groups, written, several: bool, progress: bool):
    """Check, score and write each chunk of examples; the :class:`Scores` of them all. With
    ``several`` chunks, progress counts examples and a judge's cut prompts are reported once for
    all its metrics; with one, as a run shows and reports them (per metric)."""
    gathered = ScoredChunks(parts.metrics, several)
    judging = [metric.name for metric in parts.metrics if metric.needs_judge]
    asking = (f"judge of metric{'s' if len(judging) > 1 else ''} " + ", ".join(f"'{name}'" for name in judging) +
              ", the given predictions")
    start = 0
    with Progress(f"score {len(groups)} examples", len(groups), "examples", enabled=progress and several) as bar, \
            (truncation_reported(parts.judge, asking, judge=True) if several and parts.judge is not None and judging
             else nullcontext()):
        for chunk in chunks:
            survey.check_same(start, chunk)
            for component in parts.space_users():
                check_topics(component, parts.spaces[component.topic_vectorizer], chunk)
            check_scored(parts.metrics, chunk)
            ids = [example.id for example in chunk]
            given = (dict(zip(ids, index.records(ids))) if index is not None
                     else {example.id: {**example.meta, "id": example.id} for example in chunk})
            texts = [given[identifier]["prediction"] for identifier in ids]
            scores = score(parts.metrics, texts, chunk, progress and not several, judge=None if several else parts.judge,
                           scoring="the given predictions")
            gathered.add(start, scores)
            written.add(evaluation_samples(chunk, given, texts, scores, groups[start:start + len(chunk)]))
            start += len(chunk)
            bar.update(len(chunk))
    if start != survey.count:
        survey.refuse_changed()
    return gathered.total()


def _say_held_at_once(metrics, count: int, size: int) -> None:
    """One warning line when a metric makes a large evaluation hold every example at once."""
    if size < count:
        return
    whole = [metric.name for metric in metrics if not getattr(metric, "scores_each_example_alone", False)]
    logger.warning("ctrlkit: metric%s %s score%s every example at once (%s not declare scores_each_example_alone), "
                   "so this evaluation holds all %d examples in memory", "s" if len(whole) > 1 else "",
                   ", ".join(f"'{name}'" for name in whole), "" if len(whole) > 1 else "s",
                   "they do" if len(whole) > 1 else "it does", count)


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
