"""A run: dataset -> controller -> backbone -> metrics; results.json and samples.jsonl.

Generation and scoring are one batched step each, so an executor can later take either over
without touching controllers or metrics.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from ..api import backbone_name, create_controller, get_backbone, get_dataset, get_executor
from ..bootstrap import groups_of
from ..cache import Cache, scope as cache_scope
from ..component_options import RunOptions
from ..controls import check_controls, uncontrolled
from ..digest import backbone_digest, data_digest
from ..errors import ConfigurationError, CtrlkitError
from ..intake import admit_examples
from ..outputs import check_output, leaves_no_empty_folder
from ..quiet import quietly
from ..results import SCHEMA_VERSION, versions, write_run
from ..sampling import check_sample, draw_sample
from ..secrets import mask_secrets
from ..topic_selection import keep_topics, report_held_out, topic_names
from ..topic_source import ORACLE, PICKING_VECTORIZER, describe_picks, pick_topics, topic_count
from ..topics import TopicSpace
from ..uncertainty import DEFAULT_RESAMPLES, check_resamples, recorded
from .generation import fit_or_restore, generate
from .recording import RunResult, report_skipped, report_uncontrolled, run_samples
from .scoring import intervals_of, score, scores_by_rank
from .setup import (DEFAULT_METRICS, TopicPicking, bind_metrics, check_capabilities, check_counts, check_metrics,
                    check_topics, component_names, components, create_metrics, create_vectorizers, dataset_and_split,
                    default_scorers, judge_options, resolved_options, seed_everything, timed, topic_spaces,
                    used_vectorizers, with_data)


@leaves_no_empty_folder
@quietly
def run(
    *,
    dataset: str = "sample",
    data: str | None = None,
    split: str | None = None,
    controller: str = "none",
    backbone: str = "extractive",
    metrics: Sequence[str] | None = None,
    topics: str | None = None,
    only_topics: Sequence[str] | str | None = None,
    topic_source: str = ORACLE,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    judge: str | None = None,
    baseline: str | None = "none",
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    batch_size: int = 16,
    bootstrap: int = DEFAULT_RESAMPLES,
    out: str | None = None,
    cache: bool = True,
    strict_options: bool = True,
    strict_controls: bool = False,
    progress: bool = False,
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
) -> RunResult:
    """Run ``controller`` on ``dataset`` with ``backbone`` and score it with ``metrics`` (None: rouge,
    and stas when some example has a topic; see :func:`default_metrics`).

    ``options`` sets component options by component name: ``{"tag": {"top_n": 50}}``.
    ``baseline`` (default ``"none"``) is run and scored beside the controller on the same
    examples, so the table shows what the control changed; None skips it. ``judge`` is the
    backbone that metrics such as ``fm`` and ``focus`` ask (``"openai:gpt-4o"``). ``out`` is a
    folder for results.json and samples.jsonl (nothing is written when it is None).
    ``cache`` reuses generations from the shared cache (``$CTRLKIT_CACHE_DIR``) and stores new
    ones, which is also how a killed run resumes. ``sample`` draws that many of the dataset's
    usable examples at random (``sampling.draw_sample``; samples.jsonl names them), where
    ``limit`` takes the first N; not both. ``strict_options=False`` lets ``options`` name
    components this run does not use (a sweep passes one set of options to every cell).

    ``bootstrap`` resamples (default 1000; 0 skips) give each corpus value a 95% interval and a
    standard error (``intervals``), and with a baseline, each difference a paired interval and a
    permutation p-value (``paired``), resampling examples, or documents where examples share one
    (``Dataset.group_field``), with ``seed`` (:mod:`ctrlkit.bootstrap`).

    An example lacking a control the controller reads is left uncontrolled (counted per
    controller in ``uncontrolled``), and a metric scores only the examples carrying what it reads
    (counted in ``scored``); ``strict_controls=True`` refuses the run instead when any example
    lacks such a control. A control that no example carries is always refused. ``progress`` shows
    progress on stderr (``ctrlkit.progress``), and says how much a rerun resumes.

    ``only_topics`` (topic names, or one comma-separated string) keeps only the examples whose
    ``topic`` or ``topic_id`` is named, before ``limit`` or ``sample`` (:mod:`ctrlkit.topic_selection`):
    the evaluation half of the zero-shot protocol, whose other half is ``train(holdout_topics=...)``.
    A model trained with topics held out is recorded (``model_holdout``), with one warning line
    when some examples request a topic it was trained on. ``topic_source`` ``"topK"`` requests each
    document's K nearest topics in the topic space instead of its gold topic, K examples per
    document (:mod:`ctrlkit.topic_source`, which says where this departs from the paper and how
    references are used); ``"oracle"`` (default) requests the gold topic.

    ``executor="ray"`` generates on a Ray cluster, data-parallel on ``workers`` (default 1) actors
    each holding one backbone, at ``address`` (``HOST:PORT``; default ``$RAY_ADDRESS``, else a new
    local Ray instance); everything else stays on this machine, and the results are the local
    run's (:mod:`ctrlkit.ray_generation` says when a padded model's may differ in the last bits).
    """
    started = time.perf_counter()
    timings: dict[str, float] = {}
    routed = RunOptions(with_data(options, dataset, data), components(
        dataset=dataset, controllers=[*component_names(controller), *component_names(baseline)], backbone=backbone,
        metrics=metrics or DEFAULT_METRICS, judge=judge), strict=strict_options)
    check_counts(limit=limit, batch_size=batch_size)
    executing = get_executor(executor)
    ray_workers = executing.check_run(workers, address)
    check_resamples(bootstrap)
    check_sample(sample, limit)
    only_topics = topic_names(only_topics, "only_topics")
    per_document = topic_count(topic_source)
    if metrics is not None and not metrics:
        raise ConfigurationError("a run needs at least one metric")
    seed_everything(seed)
    if out is not None:
        check_output(out)

    source = get_dataset(dataset, **routed.of("datasets", dataset))
    main = create_controller(controller, routed.names("controllers"))
    other = create_controller(baseline, routed.names("controllers")) if baseline and baseline != controller else None
    model = get_backbone(backbone, **routed.of("backbones", backbone_name(backbone)))
    scorers, judging = create_metrics(metrics or DEFAULT_METRICS, routed, judge)
    needs_space = [c for c in (main, other, *scorers) if c is not None and c.topic_vectorizer]
    vectorizers = create_vectorizers(needs_space, routed)
    picker = (vectorizers.get(PICKING_VECTORIZER) or create_vectorizers([TopicPicking()], routed)[PICKING_VECTORIZER]
              if per_document else None)
    routed.check_unused()
    for c in (main, other):
        if c is not None:
            check_capabilities(c, model, backbone)
    # connected before any work: an unreachable or too small cluster is one line; the workers start
    # making their backbones as the block opens, while this process loads what the run reads
    with executing.generation(address, backbone, routed.of("backbones", backbone_name(backbone)), model, ray_workers,
                              cache) as pool:
        with timed(timings, "load_s"):
            # taken before reading: a file changed after this makes a sweep run the cell again
            digests = {"data_digest": data_digest(source.options.get("path")), "topics_digest": data_digest(topics),
                       "backbone_digest": backbone_digest(model),
                       "judge_digest": backbone_digest(judging) if judging is not None else None}
            chosen_split = split if split is not None else source.default_split
            loaded = source.load(chosen_split)
            chosen = (keep_topics(loaded, only_topics, dataset_and_split(dataset, chosen_split)) if only_topics
                      else loaded)
            examples = admit_examples(chosen[:limit], dataset)
        report_skipped(source, dataset)
        if not examples:
            raise CtrlkitError(f"dataset '{dataset}' gave no examples")
        if sample is not None:
            examples = draw_sample(examples, sample, seed, dataset)
        spaces: dict[str, TopicSpace] = {}
        if per_document:
            with timed(timings, "topic_space_s"):
                spaces = topic_spaces({PICKING_VECTORIZER: picker}, topics, source, dataset)
            examples = admit_examples(pick_topics(examples, spaces[PICKING_VECTORIZER], per_document, loaded,
                                                  topic_source), dataset)
        saved = model.saved_controller()
        model_holdout = (saved or {}).get("holdout_topics")
        n_held_out = report_held_out(model_holdout, examples, loaded)
        if metrics is None:
            scorers = default_scorers(scorers, examples, dataset)
            needs_space = [c for c in (main, other, *scorers) if c is not None and c.topic_vectorizer]
            vectorizers = used_vectorizers(vectorizers, needs_space)
        for c in (main, other):
            if c is not None:
                check_controls(c, examples, dataset, strict_controls)
        check_metrics(scorers, examples, source, dataset, strict_controls, unreferenced=bool(per_document))

        with timed(timings, "topic_space_s"):
            spaces.update(topic_spaces({name: vectorizer for name, vectorizer in vectorizers.items()
                                         if name not in spaces}, topics, source, dataset))
        for c in needs_space:
            check_topics(c, spaces[c.topic_vectorizer], examples)
        bind_metrics(scorers, spaces)

        arms = {"run": main, "baseline": other} if other else {"run": main}
        outcomes = {}
        by_rank: dict[str, dict] = {}
        cache_stats = {"hits": 0, "misses": 0}
        with cache_scope(enabled=cache):  # judge answers too
            generations = Cache("generations") if cache else None
            for arm, arm_controller in arms.items():
                prefix = "" if arm == "run" else "baseline_"
                with timed(timings, prefix + "fit_s"):
                    fit_or_restore(arm_controller, model, source, spaces.get(arm_controller.topic_vectorizer), seed)
                    arm_controller.prepare(model)
                    if pool:
                        pool.prepared(arm_controller)
                with timed(timings, prefix + "generate_s"):
                    predictions = generate(arm_controller, model, examples, batch_size, progress, generations,
                                           cache_stats, pool)
                with timed(timings, prefix + "score_s"):
                    outcomes[arm] = (predictions, score(scorers, predictions, examples, progress,
                                                        unreferenced=bool(per_document), judge=judging,
                                                        scoring=f"controller '{arm_controller.name}'"))
                    if per_document > 1:
                        by_rank[arm] = scores_by_rank(scorers, predictions, examples)
    groups = groups_of(examples, source)
    with timed(timings, "bootstrap_s"):
        uncertainty = intervals_of(scorers, {arm: scores for arm, (_, scores) in outcomes.items()},
                                   groups, bootstrap, seed, progress)
    timings["total_s"] = time.perf_counter() - started
    left = {arm: uncontrolled(c, examples) for arm, c in arms.items()}
    report_uncontrolled(left["run"], len(examples), main)

    results = {
        "schema_version": SCHEMA_VERSION,
        "config": mask_secrets({
            "dataset": dataset, "data": data, "data_digest": digests["data_digest"], "split": chosen_split,
            "split_origin": source.describe_split(chosen_split), "controller": main.name,
            "backbone": backbone, "backbone_digest": digests["backbone_digest"], "metrics": [m.name for m in scorers],
            "topics": topics,
            "topics_digest": digests["topics_digest"], "only_topics": only_topics, "topic_source": topic_source,
            "judge": judge, "judge_options": judge_options(judging), "judge_digest": digests["judge_digest"],
            "baseline": other.name if other else None, "limit": limit, "sample": sample, "seed": seed,
            "batch_size": batch_size, "executor": executor, "workers": ray_workers, "strict_controls": strict_controls,
            "bootstrap": recorded(bootstrap, seed, source),
            "options": resolved_options(routed, datasets=[source], controllers=[main, other], backbones=[model],
                                        metrics=scorers,
                                        vectorizers={**vectorizers, PICKING_VECTORIZER: picker}.values()
                                        if picker else vectorizers.values()),
        }),
        "versions": versions(),
        "n_examples": len(examples),
        "n_skipped": source.skipped,
        "n_other_topics": len(loaded) - len(chosen) if only_topics else None,
        "topic_picks": {**describe_picks(examples, per_document), "by_rank": by_rank.get("run")}
        if per_document else None,
        "model_holdout": {"topics": model_holdout, "n_examples": n_held_out} if model_holdout else None,
        "cache": cache_stats if cache else None,
        "uncontrolled": left["run"],
        "scored": outcomes["run"][1].scored,
        "metrics": outcomes["run"][1].corpus,
        "intervals": uncertainty.get("run"),
        "baseline": {"controller": other.name, "metrics": outcomes["baseline"][1].corpus,
                     "intervals": uncertainty.get("baseline"),
                     "uncontrolled": left["baseline"], **({"by_rank": by_rank["baseline"]} if by_rank else {})}
        if other else None,
        "paired": uncertainty.get("paired"),
        "timings": {name: round(seconds, 4) for name, seconds in timings.items()},
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    samples = run_samples(examples, outcomes, arms, groups, picked=bool(per_document))
    if out is not None:
        write_run(out, results, samples)
    return RunResult(results, samples)
