"""A run: dataset -> controller -> backbone -> metrics; results.json and samples.jsonl.

Generation and scoring are one batched step each, so an executor can take generation over
without touching controllers or metrics.
"""

from __future__ import annotations

import time
from contextlib import closing
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Any

from ..api import backbone_name, get_executor
from ..bootstrap import groups_of
from ..cache import Cache, scope as cache_scope
from ..controls import check_controls, uncontrolled
from ..digest import backbone_digest, data_digest
from ..errors import CtrlkitError
from ..intake import admit_examples
from ..outputs import RUN_FILES, check_output, leaves_no_empty_folder, refuse_writing_over_inputs
from ..quiet import quietly
from ..results import write_run
from ..components import Dataset
from ..sampling import draw_sample, sample_indices
from ..topic_selection import keep_topics, report_held_out
from ..topic_source import PICKING_VECTORIZER, pick_topics
from ..types import Example
from .assembly import DEFAULT_METRICS, RunParts, assemble, default_metrics
from .checks import check_metrics, dataset_and_split, seed_everything
from .generation import fit_or_restore, generate
from .recording import RunRecord, RunResult, report_skipped, report_uncontrolled, run_results, run_samples, timed
from .scoring import intervals_of, score, scores_by_rank
from .settings import RunSettings


@leaves_no_empty_folder
@quietly
def run(settings: RunSettings | None = None, /, **fields: Any) -> RunResult:
    """Run a controller on a dataset with a backbone, score it, and return (and with ``out``,
    write) results.json and samples.jsonl. The keywords are the fields of
    :class:`ctrlkit.RunSettings`, which says what each does; ``settings``, when given, is
    the starting point they change: ``run(settings, seed=1)``.

    The baseline (default ``"none"``) runs and is scored beside the controller on the same
    examples. ``bootstrap`` resamples give each corpus value a 95% interval and, with a baseline,
    each difference a paired interval and a permutation p-value (:mod:`ctrlkit.bootstrap`),
    resampling documents where examples share one. An example lacking a control the controller
    reads is left uncontrolled (counted in ``uncontrolled``), and a metric scores only the
    examples carrying what it reads (``scored``); a control no example carries is refused.
    A generation cache (``$CTRLKIT_CACHE_DIR``) makes a killed run resume where it stopped.
    With ``executor="ray"`` the summaries are generated on a Ray cluster and the results are the
    local run's (:mod:`ctrlkit.executors.ray_generation` says when a padded model's may differ in the last
    bits); see :mod:`ctrlkit.topic_source` and :mod:`ctrlkit.topic_selection` for the topic protocols.
    """
    settings = RunSettings(**fields) if settings is None else replace(settings, **fields) if fields else settings
    started = time.perf_counter()
    executing = get_executor(settings.executor)
    record = RunRecord(workers=executing.check_run(settings.workers, settings.address))
    seed_everything(settings.seed)
    if settings.out is not None:
        check_output(settings.out)
        refuse_writing_over_inputs([Path(settings.out) / name for name in RUN_FILES],
                                   {"--data": settings.data, "--topics": settings.topics})
    parts = assemble(dataset=settings.dataset, data=settings.data, options=settings.options,
                     controllers=arm_controllers(settings), backbone=settings.backbone,
                     metrics=settings.metrics or DEFAULT_METRICS, judge=settings.judge,
                     strict=settings.strict_options, picking=bool(settings.topics_per_document))
    # connected before any work: an unreachable or too small cluster is one line; the workers start
    # making their backbones as the block opens, while this process loads what the run reads
    with executing.generation(settings.address, settings.backbone,
                              parts.options.of("backbones", backbone_name(settings.backbone)), parts.backbone,
                              record.workers, settings.cache) as pool:
        examples = prepare_examples(settings, parts, record)
        generate_and_score(settings, parts, record, examples, pool)
    groups = groups_of(examples, parts.dataset)
    with timed(record.timings, "bootstrap_s"):
        uncertainty = intervals_of(parts.metrics, {arm: scores for arm, (_, scores) in record.outcomes.items()},
                                   groups, settings.bootstrap, settings.seed, settings.progress)
    record.timings["total_s"] = time.perf_counter() - started
    arms = dict(zip(("run", "baseline"), parts.controllers))
    left = {arm: uncontrolled(controller, examples) for arm, controller in arms.items()}
    report_uncontrolled(left["run"], len(examples), arms["run"])
    results = run_results(settings, parts, record, examples, uncertainty, left)
    samples = run_samples(examples, record.outcomes, arms, groups, picked=bool(settings.topics_per_document))
    if settings.out is not None:
        write_run(settings.out, results, samples)
    return RunResult(results, samples)


def arm_controllers(settings: RunSettings) -> list[str]:
    """The controller, and the baseline when there is one and it is another controller."""
    baseline = settings.baseline if settings.baseline and settings.baseline != settings.controller else None
    return [settings.controller, *([baseline] if baseline else [])]


def read_examples(settings: RunSettings, parts: RunParts, record: RunRecord) -> list[Example]:
    """The examples of the chosen split, of the topics asked for, up to ``limit`` or the ``sample``
    drawn; the digests of what the run reads are taken first (a file changed after this makes a
    sweep run the cell again). A dataset that streams (``Dataset.iter_examples``) is read lazily
    where the run needs nothing of the whole split: ``limit`` reads the first N examples, ``sample``
    counts them in one pass and keeps the drawn ones in a second. Topics picked per document, a
    model's held-out topics and ``only_topics`` need the whole split (its pool of gold topics, its
    topic names): the split is then read whole, as is a dataset that does not stream."""
    source = parts.dataset
    record.digests = {"data_digest": data_digest(source.options.get("path")),
                      "topics_digest": data_digest(settings.topics), "backbone_digest": backbone_digest(parts.backbone),
                      "judge_digest": backbone_digest(parts.judge) if parts.judge is not None else None}
    record.split = settings.split if settings.split is not None else source.default_split
    whole = (settings.only_topics or settings.topics_per_document
             or (parts.backbone.saved_controller() or {}).get("holdout_topics")
             or type(source).iter_examples is Dataset.iter_examples)
    if not whole:
        kept = _streamed(source, record.split, settings)
        record.loaded = kept
        return admit_examples(kept, settings.dataset)
    loaded = source.load(record.split)
    record.loaded = loaded
    chosen = loaded
    if settings.only_topics:
        chosen = keep_topics(loaded, settings.only_topics, dataset_and_split(settings.dataset, record.split))
        record.n_other_topics = len(loaded) - len(chosen)
    examples = admit_examples(chosen[:settings.limit], settings.dataset)
    if settings.sample is not None and examples:
        examples = draw_sample(examples, settings.sample, settings.seed, settings.dataset)
    return examples


def _streamed(source: Dataset, split: str | None, settings: RunSettings) -> list[Example]:
    """The first ``limit`` examples, or the ``sample`` drawn (the draw of ``draw_sample`` on the
    whole list: counted in a first pass, kept in a second), or all, holding only those."""
    def read(keep=None, limit=None):
        with closing(source.iter_examples(split, keep)) as examples:
            return list(islice(examples, limit))

    if settings.sample is None:
        return read(limit=settings.limit)
    read(keep=lambda index: False)
    counted = source.counted
    if not counted:
        return []
    chosen = set(sample_indices(counted, settings.sample, settings.seed, settings.dataset))
    kept = read(keep=chosen.__contains__)
    if source.counted != counted or len(kept) != len(chosen):
        raise CtrlkitError(f"dataset '{settings.dataset}' changed while it was read (the sample counted {counted} "
                           f"examples, the second read {source.counted}); run it again")
    return kept


def prepare_examples(settings: RunSettings, parts: RunParts, record: RunRecord) -> list[Example]:
    """The examples the run generates for, checked against every component, with the topic spaces
    fitted: read, sampled, their topics picked (``topic_source``), the model's held-out topics
    reported and, for a run given no metrics, the default ones chosen."""
    dataset, source = settings.dataset, parts.dataset
    with timed(record.timings, "load_s"):
        examples = read_examples(settings, parts, record)
    report_skipped(source, dataset)
    if not examples:
        raise CtrlkitError(f"dataset '{dataset}' gave no examples")
    per_document = settings.topics_per_document
    if per_document:
        with timed(record.timings, "topic_space_s"):
            spaces = parts.fit_topic_spaces(settings.topics, examples, dataset, only=[PICKING_VECTORIZER])
        examples = admit_examples(pick_topics(examples, spaces[PICKING_VECTORIZER], per_document,
                                              record.loaded, settings.topic_source), dataset)
    record.model_holdout = (parts.backbone.saved_controller() or {}).get("holdout_topics")
    record.n_held_out = report_held_out(record.model_holdout, examples, record.loaded)
    if settings.metrics is None:
        parts.keep_metrics(default_metrics(examples, dataset))
    for controller in parts.controllers:
        check_controls(controller, examples, dataset, settings.strict_controls)
    check_metrics(parts.metrics, examples, source, dataset, settings.strict_controls, unreferenced=bool(per_document))
    with timed(record.timings, "topic_space_s"):
        parts.fit_topic_spaces(settings.topics, examples, dataset)
    return examples


def generate_and_score(settings: RunSettings, parts: RunParts, record: RunRecord, examples: list[Example],
                       pool) -> None:
    """Fit (or restore) each arm's controller, generate its summaries (through the cache, and on
    ``pool`` when the executor gives one) and score them; into ``record.outcomes``."""
    per_document = settings.topics_per_document
    with cache_scope(enabled=settings.cache):  # judge answers too
        generations = Cache("generations") if settings.cache else None
        for arm, controller in zip(("run", "baseline"), parts.controllers):
            prefix = "" if arm == "run" else "baseline_"
            with timed(record.timings, prefix + "fit_s"):
                fit_or_restore(controller, parts.backbone, parts.dataset, parts.spaces.get(controller.topic_vectorizer),
                               settings.seed)
                controller.prepare(parts.backbone)
                if pool:
                    pool.prepared(controller)
            with timed(record.timings, prefix + "generate_s"):
                predictions = generate(controller, parts.backbone, examples, settings.batch_size, settings.progress,
                                       generations, record.cache, pool)
            with timed(record.timings, prefix + "score_s"):
                record.outcomes[arm] = (predictions, score(parts.metrics, predictions, examples, settings.progress,
                                                           unreferenced=bool(per_document), judge=parts.judge,
                                                           scoring=f"controller '{controller.name}'"))
                if per_document > 1:
                    record.by_rank[arm] = scores_by_rank(parts.metrics, predictions, examples)
