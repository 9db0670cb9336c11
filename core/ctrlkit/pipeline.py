"""A run: dataset -> controller -> backbone -> metrics; results.json and samples.jsonl.

Generation and scoring are one batched step each, so an executor can later take either over
without touching controllers or metrics.
"""

from __future__ import annotations

import logging
import random
import sys
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from .api import backbone_name, create_controller, get_backbone, get_dataset, get_metric, get_vectorizer
from .bootstrap import groups_of
from .cache import Cache, scope as cache_scope
from .component_options import Component, RunOptions, qualified
from .components import TRUNCATION_COUNTS, Backbone
from .controls import apply_control, carries, check_controls, scored_indices, uncontrolled
from .digest import backbone_digest, data_digest
from .errors import ConfigurationError, CtrlkitError, OptionError
from .intake import Intake, admit_examples
from .plugins import get_registry
from .metric_values import is_count, number
from .outputs import check_output, leaves_no_empty_folder
from .progress import Progress, say
from .quiet import quietly
from .ray_support import check_executor_options
from .results import format_table, versions, write_run
from .sampling import check_sample, draw_sample
from .secrets import mask_secrets
from .topic_selection import drop_topics, keep_topics, report_held_out, topic_names
from .topic_source import ORACLE, PICKING_VECTORIZER, describe_picks, pick_topics, ranks, topic_count
from .topics import TopicSpace, load_topic_documents
from .types import Example, ModelInput
from .uncertainty import DEFAULT_RESAMPLES, check_resamples, corpus_intervals, paired_differences, recorded

DEFAULT_METRICS = ("rouge", "stas")
"""The metrics of a run given none, less those reading a control no example has (:func:`default_metrics`)."""
logger = logging.getLogger("ctrlkit")


@dataclass
class RunResult:
    """``results`` is what results.json holds; ``samples`` one dict per example (samples.jsonl)."""

    results: dict
    samples: list[dict]

    @property
    def metrics(self) -> dict:
        return self.results["metrics"]

    def table(self) -> str:
        return format_table(self.results)


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
        dataset=dataset, controllers=[*_names(controller), *_names(baseline)], backbone=backbone,
        metrics=metrics or DEFAULT_METRICS, judge=judge), strict=strict_options)
    check_counts(limit=limit, batch_size=batch_size)
    ray_workers = check_executor_options(executor, workers, address)
    check_resamples(bootstrap)
    check_sample(sample, limit)
    only_topics = topic_names(only_topics, "only_topics")
    per_document = topic_count(topic_source)
    if metrics is not None and not metrics:
        raise ConfigurationError("a run needs at least one metric")
    _seed_everything(seed)
    if out is not None:
        check_output(out)

    source = get_dataset(dataset, **routed.of("datasets", dataset))
    main = create_controller(controller, routed.names("controllers"))
    other = create_controller(baseline, routed.names("controllers")) if baseline and baseline != controller else None
    model = get_backbone(backbone, **routed.of("backbones", backbone_name(backbone)))
    scorers, judging = create_metrics(metrics or DEFAULT_METRICS, routed, judge)
    needs_space = [c for c in (main, other, *scorers) if c is not None and c.topic_vectorizer]
    vectorizers = create_vectorizers(needs_space, routed)
    picker = (vectorizers.get(PICKING_VECTORIZER) or create_vectorizers([_Picking()], routed)[PICKING_VECTORIZER]
              if per_document else None)
    routed.check_unused()
    for c in (main, other):
        if c is not None and not c.requires <= model.capabilities:
            missing = ", ".join(sorted(c.requires - model.capabilities))
            raise ConfigurationError(f"controller '{c.name}' needs backbone capability {missing}, "
                                     f"which backbone '{backbone}' lacks")
    # connected before any work: an unreachable or too small cluster is one line; the workers start
    # making their backbones as the block opens, while this process loads what the run reads
    with (_ray_generation(address, backbone, routed.of("backbones", backbone_name(backbone)), model, ray_workers,
                          cache) if ray_workers else nullcontext()) as pool:
        with _timed(timings, "load_s"):
            # taken before reading: a file changed after this makes a sweep run the cell again
            digests = {"data_digest": data_digest(source.options.get("path")), "topics_digest": data_digest(topics),
                       "backbone_digest": backbone_digest(model),
                       "judge_digest": backbone_digest(judging) if judging is not None else None}
            chosen_split = split if split is not None else source.default_split
            loaded = source.load(chosen_split)
            chosen = keep_topics(loaded, only_topics, _where(dataset, chosen_split)) if only_topics else loaded
            examples = admit_examples(chosen[:limit], dataset)
        report_skipped(source, dataset)
        if not examples:
            raise CtrlkitError(f"dataset '{dataset}' gave no examples")
        if sample is not None:
            examples = draw_sample(examples, sample, seed, dataset)
        spaces: dict[str, TopicSpace] = {}
        if per_document:
            with _timed(timings, "topic_space_s"):
                spaces = _topic_spaces({PICKING_VECTORIZER: picker}, topics, source, dataset)
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

        with _timed(timings, "topic_space_s"):
            spaces.update(_topic_spaces({name: vectorizer for name, vectorizer in vectorizers.items()
                                         if name not in spaces}, topics, source, dataset))
        for c in needs_space:
            _check_topics(c, spaces[c.topic_vectorizer], examples)
        bind_metrics(scorers, spaces)

        arms = {"run": main, "baseline": other} if other else {"run": main}
        outcomes = {}
        by_rank: dict[str, dict] = {}
        cache_stats = {"hits": 0, "misses": 0}
        with cache_scope(enabled=cache):  # judge answers too
            generations = Cache("generations") if cache else None
            for arm, arm_controller in arms.items():
                prefix = "" if arm == "run" else "baseline_"
                with _timed(timings, prefix + "fit_s"):
                    fit_or_restore(arm_controller, model, source, spaces.get(arm_controller.topic_vectorizer), seed)
                    arm_controller.prepare(model)
                    if pool:
                        pool.prepared(arm_controller)
                with _timed(timings, prefix + "generate_s"):
                    predictions = generate(arm_controller, model, examples, batch_size, progress, generations,
                                           cache_stats, pool)
                with _timed(timings, prefix + "score_s"):
                    outcomes[arm] = (predictions, score(scorers, predictions, examples, progress,
                                                        unreferenced=bool(per_document), judge=judging,
                                                        scoring=f"controller '{arm_controller.name}'"))
                    if per_document > 1:
                        by_rank[arm] = scores_by_rank(scorers, predictions, examples)
    groups = groups_of(examples, source)
    with _timed(timings, "bootstrap_s"):
        uncertainty = intervals_of(scorers, {arm: scores for arm, (_, scores) in outcomes.items()},
                                   groups, bootstrap, seed, progress)
    timings["total_s"] = time.perf_counter() - started
    left = {arm: uncontrolled(c, examples) for arm, c in arms.items()}
    report_uncontrolled(left["run"], len(examples), main)

    results = {
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
    samples = _samples(examples, outcomes, arms, groups, picked=bool(per_document))
    if out is not None:
        write_run(out, results, samples)
    return RunResult(results, samples)


def _samples(examples, outcomes, arms, groups, picked: bool = False) -> list[dict]:
    """One dict per example: its references and group (:func:`ctrlkit.bootstrap.groups_of`: a
    sweep resamples the cells' samples by it), prediction and scores of the run, and of the
    baseline when there is one; ``uncontrolled`` names the controllers that left the example as it
    was; ``topic_pick`` (``picked``: a non-oracle topic source) says how its topic was picked."""
    samples = []
    for i, example in enumerate(examples):
        sample = sample_head(example, groups[i])
        if picked:
            sample["topic_pick"] = example.meta["topic_pick"]
        sample.update(_scored(outcomes["run"], i, arms["run"], example))
        if "baseline" in outcomes:
            sample["baseline"] = _scored(outcomes["baseline"], i, arms["baseline"], example)
        samples.append(sample)
    return samples


def sample_head(example, group) -> dict:
    """What a samples.jsonl line says of the example itself."""
    return {"id": example.id, "controls": example.controls, "references": list(example.references),
            "group": int(group)}


def _scored(outcome, i, controller, example) -> dict:
    predictions, scores = outcome
    scored = {"prediction": predictions[i], "scores": scores.per_example[i]}
    if scores.per_example_parts[i]:
        scored["parts"] = scores.per_example_parts[i]
    if scores.details[i]:
        scored["details"] = scores.details[i]
    left = [name for name, n in uncontrolled(controller, [example]).items() if n]
    if left:
        scored["uncontrolled"] = left
    return scored


def report_uncontrolled(counts: dict[str, int], total: int, controller) -> None:
    """One warning line naming each controller that left examples uncontrolled, and how many."""
    links = {link.name: link for link in getattr(controller, "controllers", [controller])}
    parts = [f"controller '{name}' left {n} of {total} examples uncontrolled (no "
             f"{' or '.join(repr(a) for a in links[name].reads)} control)" for name, n in counts.items() if n]
    if parts:
        logger.warning("ctrlkit: %s; --strict-controls refuses such a run", "; ".join(parts))


def report_skipped(source, dataset: str) -> None:
    if source.skipped:
        logger.warning("ctrlkit: dataset '%s': %d invalid rows skipped", dataset, source.skipped)


def components(*, dataset: str, controllers: Sequence[str] = (), backbone: str | None = None,
               metrics: Sequence[str] = (), judge: str | None = None) -> list[Component]:
    """The ``(kind, name)`` of each component a run names (topic vectorizers come later)."""
    return [("datasets", dataset), *(("controllers", name) for name in controllers),
            *(("backbones", backbone_name(spec)) for spec in (backbone, judge) if spec),
            *(("metrics", name) for name in metrics)]


def with_data(options: Mapping[str, Mapping[str, Any]] | None, dataset: str, data: str | None) -> dict:
    """``options`` with ``data`` as the dataset's ``path`` option (``--data``)."""
    options = {key: dict(values) for key, values in (options or {}).items()}
    if data is not None:
        options.setdefault(qualified(("datasets", dataset)), {})["path"] = data
    return options


def create_metrics(names: Sequence[str], options: RunOptions, judge: str | None) -> tuple[list, Backbone | None]:
    """The named metrics with their options, each given the judge backbone when it needs one; and
    that backbone (None when no metric needs one), whose options a results.json records."""
    scorers = [get_metric(name, **options.of("metrics", name)) for name in dict.fromkeys(names)]
    needing = [m.name for m in scorers if m.needs_judge]
    if needing and not judge:
        raise ConfigurationError(f"metric '{needing[0]}' needs a judge: --judge BACKBONE (e.g. openai:MODEL)")
    if not needing:
        return scorers, None
    judging = get_backbone(judge, **options.of("backbones", backbone_name(judge)))
    for metric in scorers:
        if metric.needs_judge:
            metric.use_judge(judging)
    return scorers, judging


def judge_options(judging: Backbone | None) -> dict | None:
    """The judge backbone's options as results.json records them (under ``judge_options``, apart from
    the run's backbone, which may be of the same name with other options)."""
    return judging.recorded_options() if judging is not None else None


def default_metrics(examples: Sequence[Example], dataset: str, choose: str = "-m") -> list[str]:
    """The metrics a run given none scores ``examples`` with: DEFAULT_METRICS less those reading a
    control no example has (stas without topics), which are named in one warning line, as
    ``choose`` (the option naming metrics) would refuse them."""
    registry = get_registry("metrics")
    kept, lacking = [], []
    for name in DEFAULT_METRICS:
        reads = getattr(registry.entry(name).load(registry.kind), "reads", ())
        missing = [a for a in reads if not any(carries(example, a) for example in examples)]
        if missing:
            lacking += [a for a in missing if a not in lacking]
        else:
            kept.append(name)
    if lacking:
        logger.warning("ctrlkit: no example of dataset '%s' has a %s, so the default metrics are %s only "
                       "(give %s to choose)", dataset, " or ".join(lacking), " and ".join(kept), choose)
    return kept


def default_scorers(scorers, examples: Sequence[Example], dataset: str) -> list:
    """Those of ``scorers`` (made for DEFAULT_METRICS, before the examples were read) that
    :func:`default_metrics` keeps for ``examples``."""
    kept = default_metrics(examples, dataset)
    return [scorer for scorer in scorers if scorer.name in kept]


def used_vectorizers(vectorizers: Mapping[str, Any], users) -> dict:
    """``vectorizers`` less those none of ``users`` (controllers, metrics) asks for."""
    wanted = {c.topic_vectorizer for c in users}
    return {name: vectorizer for name, vectorizer in vectorizers.items() if name in wanted}


def check_metrics(scorers, examples, source, dataset, strict_controls: bool = False,
                  unreferenced: bool = False) -> None:
    """Refuse, before any work, metrics that need what the examples lack. A metric checks the
    examples it will score: those carrying the controls it reads (with ``unreferenced``, as
    :func:`scoring_indices` says)."""
    for scorer in scorers:
        check_controls(scorer, examples, dataset, strict_controls)
        scoring = [examples[i] for i in scoring_indices(scorer, examples, unreferenced)]
        if scorer.needs_references and unreferenced and not scoring:
            raise ConfigurationError(f"metric '{scorer.name}' needs references, but none of the {len(examples)} "
                                     "examples has one for its picked topic (a picked topic that is no gold topic "
                                     "of its document has none); score with metrics that need no references")
        if scorer.needs_references:
            _check_references(scorer, scoring, dataset)
        scorer.use_dataset(source)
        scorer.check(scoring)


def bind_metrics(scorers, spaces) -> None:
    for scorer in scorers:
        if scorer.topic_vectorizer:
            scorer.use_topic_space(spaces[scorer.topic_vectorizer])


def fit_or_restore(controller, backbone, source, topic_space, seed: int = 0,
                   holdout_topics: Sequence[str] | None = None) -> None:
    """Give the controller the dataset and the run's ``seed``, then restore the controller state
    saved with a trained model, or fit the controller (on the train examples whose topic is none
    of ``holdout_topics``)."""
    controller.use_dataset(source)
    controller.use_seed(seed)
    saved = backbone.saved_controller()
    if saved is not None and saved["controller"] == controller.name:
        controller.load_state(saved["state"])
        return
    if saved is not None and controller.name != "none":
        logger.warning("ctrlkit: the model was trained with controller '%s', not '%s'", saved["controller"],
                       controller.name)
    untrained = [c.name for c in getattr(controller, "controllers", [controller]) if c.trained_with_model]
    if untrained:
        logger.warning("ctrlkit: %s was not trained with this model: its parameters are random "
                       "(ctrlkit train first)", ", ".join(untrained))
    train = source.load("train") if controller.needs_train_examples else []
    controller.fit(drop_topics(train, holdout_topics or ()), topic_space)


def generate(controller, backbone, examples: Sequence[Example], batch_size: int, progress: bool,
             cache: Cache | None = None, stats: dict | None = None, pool=None) -> list[str]:
    """Apply the controller to every example (so a bad control fails before any generation), then
    generate in batches of similar length, longest first, and return predictions in input order.

    With a cache, an input the same backbone already answered is not generated again, and each
    batch is stored as soon as it is done: a run killed midway resumes where it stopped.
    ``stats`` counts ``hits`` and ``misses``. Generations are cleaned as they come (``intake``):
    a lone surrogate becomes U+FFFD, so nothing generated fails to be written. With ``pool``
    (:class:`ctrlkit.ray_generation.RayGeneration`) the batches are generated on Ray workers; what
    a worker found in its node's cache counts as a hit, and is stored in this one too."""
    inputs = [apply_control(controller, example, ModelInput(source=example.document)) for example in examples]
    keys = [[backbone.identity(), _input_key(model_input)] for model_input in inputs] if cache else []
    cached = [cache.get(key) for key in keys] if cache else [None] * len(inputs)
    predictions: list[str] = [text if text is not None else "" for text in cached]
    todo = sorted((i for i, text in enumerate(cached) if text is None), key=lambda i: -_input_length(inputs[i]))
    if stats is not None:
        stats["hits"] = stats.get("hits", 0) + len(inputs) - len(todo)
        stats["misses"] = stats.get("misses", 0) + len(todo)
    what = f"generate [{controller.name}]" + (pool.label if pool else "")
    if progress and not todo:
        say(f"{what}: all {len(inputs)} already done (cached)")
    elif progress and len(todo) < len(inputs):
        say(f"{what}: resuming: {len(inputs) - len(todo)} of {len(inputs)} already done (cached)")
    received = Intake(f"backbone '{backbone.name}'")
    batches = (pool.batches(inputs, keys, todo, [example.id for example in examples], batch_size) if pool
               else _local_batches(backbone, inputs, todo, batch_size))
    with truncation_reported(backbone, f"controller '{controller.name}'"), \
            Progress(what, len(todo), "examples", enabled=progress and bool(todo)) as bar:
        for batch, outputs, found in batches:
            if len(outputs) != len(batch):
                raise CtrlkitError(f"backbone '{backbone.name}' returned {len(outputs)} summaries "
                                   f"for {len(batch)} inputs")
            for i, output in zip(batch, outputs):
                if not isinstance(output, str):
                    raise CtrlkitError(f"backbone '{backbone.name}' returned {type(output).__name__}, not text, "
                                       f"for example '{examples[i].id}'")
                output = predictions[i] = received.text(output, "generations")
                if cache:
                    cache.put(keys[i], output)
            for i, text in found.items():
                predictions[i] = text
                cache.put(keys[i], text)
            if stats is not None and found:
                stats["hits"] += len(found)
                stats["misses"] -= len(found)
            bar.update(len(batch) + len(found))
    received.report()
    return predictions


def _local_batches(backbone, inputs, todo, batch_size):
    """``(indices, outputs, {})`` for each batch of ``todo``, generated here."""
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        yield batch, list(backbone.generate([inputs[i] for i in batch])), {}


def _ray_generation(address, spec, options, backbone, workers, cache):
    """The Ray side of a run (:mod:`ctrlkit.ray_generation`), imported only when asked for."""
    from .ray_generation import RayGeneration

    return RayGeneration(address, spec, options, backbone, workers, cache)


@contextmanager
def truncation_reported(backbone, during: str, judge: bool = False):
    """One warning line for the inputs ``backbone`` cut to its limit inside the block, however
    many batches it took: ``backbone 'hf' (controller 'tag'): 8 of 8 inputs truncated to 1024 tokens``,
    saying how many of them lost their prompt's head or what follows their document
    (:attr:`ctrlkit.Backbone.truncated_head`, :attr:`ctrlkit.Backbone.truncated_tail`); for a
    ``judge``, whose prompts hold no document, only which end they lost."""
    before = {name: getattr(backbone, name) for name in TRUNCATION_COUNTS}
    yield
    added = {name: getattr(backbone, name) - before[name] for name in TRUNCATION_COUNTS}
    if not added["truncated"]:
        return
    hint = f"--set {backbone.name}.max_input_tokens=N sets the limit"
    if judge:
        ends = [end for end, name in (("from the left", "truncated_head"), ("at their end", "truncated_tail"))
                if added[name]]
        detail = (f", {' and '.join(ends)} (a judge's prompt holds no document to cut; a prompt asked again is "
                  "counted again)" if ends else "")
        hint += ", for a generating backbone of that name too"
    else:
        why = "(the document is in none of their messages, or the rest of the prompt is over the limit)"
        detail = "".join(f", {added[name]} of them {what} {why}" for name, what in (
            ("truncated_head", "from the left: their prompts lost the head, where a control or instruction is "
                               "written"),
            ("truncated_tail", "prompts cut at their end: they lost the cue to answer, and some of them their "
                               "document too")) if added[name])
        if added["truncated_shots"]:
            detail += (f", {added['truncated_shots']} of them few-shot prompts shown fewer demonstrations (the "
                       "earliest dropped, to leave their document more room)")
    logger.warning("ctrlkit: backbone '%s' (%s): %d of %d inputs truncated to %d tokens%s (%s)", backbone.name,
                   during, added["truncated"], added["tokenized"], backbone.truncated_to, detail, hint)


def _input_key(model_input: ModelInput) -> dict:
    return {"source": model_input.source, "guidance": model_input.guidance,
            "messages": list(model_input.messages) if model_input.messages else None,
            "features": model_input.features}


def _input_length(model_input: ModelInput) -> int:
    messages = sum(len(message["content"]) for message in model_input.messages or ())
    return len(model_input.source) + len(model_input.guidance or "") + messages


@dataclass
class Scores:
    """What ``score`` gives: corpus values ``{metric: {value: x}}``, per-example values in the same
    nesting, per-example details ``{metric: detail}``, and how many examples each metric scored;
    ``parts`` ``{metric: (positions scored, MetricResult.aggregation_parts())}``, what intervals are
    computed from, and ``per_example_parts`` each example's parts in the nesting of
    ``per_example`` for the metrics whose parts are not their per-example values."""

    corpus: dict[str, dict]
    per_example: list[dict]
    details: list[dict]
    scored: dict[str, int]
    parts: dict[str, tuple[list[int], dict]] = field(default_factory=dict)
    per_example_parts: list[dict] = field(default_factory=list)


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
            if len(keep) == len(examples):
                result = metric.compute(predictions, examples)
            else:
                result = metric.compute([predictions[i] for i in keep], [examples[i] for i in keep])
        for i, detail in zip(keep, result.details or []):
            details[i][metric.name] = detail
        for value_name, values in result.per_example.items():
            if len(values) != len(keep):
                raise CtrlkitError(f"metric '{metric.name}' returned {len(values)} '{value_name}' values "
                                   f"for {len(keep)} examples")
            for scores in per_example:
                scores.setdefault(metric.name, {})[value_name] = None
            for i, value in zip(keep, values):
                per_example[i][metric.name][value_name] = number(value, is_count(value_name))
        corpus[metric.name] = {name: number(value, is_count(name)) for name, value in result.corpus.items()}
        for part_name, values in (result.parts or {}).items():
            if len(values) != len(keep):
                raise CtrlkitError(f"metric '{metric.name}' returned {len(values)} '{part_name}' parts "
                                   f"for {len(keep)} examples")
        parts[metric.name] = (keep, result.aggregation_parts())
        if result.parts is not None and result.parts != result.per_example:
            for name, values in result.parts.items():
                for i, value in zip(keep, values):
                    per_example_parts[i].setdefault(metric.name, {})[name] = number(value)
        bar.update(1)
    return Scores(corpus, per_example, details, scored, parts, per_example_parts)


def _topic_spaces(vectorizers, topics, source, dataset) -> dict[str, TopicSpace]:
    if not vectorizers:
        return {}
    documents = load_topic_documents(topics) if topics else source.topic_documents()
    if not documents:
        raise ConfigurationError(f"dataset '{dataset}' supplies no topic documents; pass --topics FILE "
                                 '(JSONL lines {"topic": ..., "text": ...})')
    return {name: TopicSpace.fit(documents, vectorizer) for name, vectorizer in vectorizers.items()}


def _check_references(metric, examples, dataset) -> None:
    lacking = [example.id for example in examples if not example.references]
    if lacking:
        more = f" (and {len(lacking) - 1} more)" if len(lacking) > 1 else ""
        raise ConfigurationError(f"metric '{metric.name}' needs references, but example '{lacking[0]}'{more} "
                                 f"of dataset '{dataset}' has none")


def _check_topics(component, space: TopicSpace, examples) -> None:
    """Refuse a topic (on an example that has one) that the topic space does not know."""
    if "topic" not in component.reads:
        return
    examples = [example for example in examples if carries(example, "topic")]
    for example in examples:
        if not isinstance(example.controls["topic"], str):
            raise ConfigurationError(f"example '{example.id}': control 'topic' must be a string, "
                                     f"got {type(example.controls['topic']).__name__}")
    known = set(space.topics)
    unknown = [example for example in examples if example.controls["topic"] not in known]
    if unknown:
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise ConfigurationError(f"'{component.name}': topic '{unknown[0].controls['topic']}' of example "
                                 f"'{unknown[0].id}'{more} has no topic documents ({len(known)} topics known)")


def create_vectorizers(users, options: RunOptions) -> dict:
    """The topic vectorizer each of ``users`` (controllers, metrics) asks for, by name."""
    return {name: get_vectorizer(name, **options.of("vectorizers", name))
            for name in dict.fromkeys(c.topic_vectorizer for c in users)}


def resolved_options(routed: RunOptions, **made) -> dict:
    """Each component's options as it took them (``Configurable.recorded_options``), keyed by its
    name (``kind:name`` where two share it); ``made`` lists the components by kind:
    ``datasets=[source], metrics=scorers``. A chain of controllers counts as its links."""
    return {routed.key((kind, link.name)): link.recorded_options() for kind, components in made.items()
            for component in components if component is not None
            for link in getattr(component, "controllers", [component])}


class _Picking:
    """What asks for the topic space that ranks a document's topics (``topic_source``)."""

    topic_vectorizer = PICKING_VECTORIZER


def _where(dataset: str, split: str | None) -> str:
    return f"dataset '{dataset}'" + (f", split '{split}'" if split else "")


def _names(spec: str | None) -> list[str]:
    return [name.strip() for name in spec.split("+")] if spec else []


MAX_SEED = 2**32 - 1
"""numpy's seeds are 32-bit: a larger or negative seed is refused before any work."""


def check_counts(**counts: Any) -> None:
    """``limit``, ``batch_size`` and the like are whole numbers of at least 1 (``limit`` may be None:
    every example); the command line checks its own, this checks the library's callers too, since
    ``examples[:-5]`` would silently drop rows."""
    for name, value in counts.items():
        if value is None and name == "limit":
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise OptionError(f"{name} must be a whole number of at least 1, got {value!r}")


def _seed_everything(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        raise OptionError(f"seed must be a whole number from 0 to {MAX_SEED}, got {seed!r}")
    random.seed(seed)
    import numpy as np

    np.random.seed(seed)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


@contextmanager
def _timed(timings: dict[str, float], key: str):
    start = time.perf_counter()
    yield
    timings[key] = timings.get(key, 0.0) + time.perf_counter() - start
