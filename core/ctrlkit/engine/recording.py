"""What a run records: :class:`RunResult`, results.json (:func:`run_results`, from a
:class:`RunRecord`), one samples.jsonl line per example, the timings, and the warning lines it
owes (examples left uncontrolled, rows skipped)."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Sequence

from ..controls import uncontrolled
from ..results import SCHEMA_VERSION, format_table, versions
from ..secrets import mask_secrets
from ..topic_source import describe_picks
from ..uncertainty import recorded
from .assembly import judge_options

logger = logging.getLogger("ctrlkit")


@dataclass
class RunResult:
    """``results`` is what results.json holds; ``samples`` one dict per example (samples.jsonl): a
    list, or for an evaluation written to a folder a :class:`ctrlkit.results.SamplesFile` that
    reads them from there a line at a time."""

    results: dict
    samples: Sequence[dict]

    @property
    def metrics(self) -> dict:
        return self.results["metrics"]

    def table(self) -> str:
        """The table ``ctrlkit run`` prints: each metric value with its interval, beside the baseline's."""
        return format_table(self.results)


def run_samples(examples, outcomes, arms, groups, picked: bool = False) -> list[dict]:
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


@contextmanager
def timed(timings: dict[str, float], key: str):
    """Add the seconds the block takes to ``timings[key]`` (results.json's ``timings``)."""
    start = time.perf_counter()
    yield
    timings[key] = timings.get(key, 0.0) + time.perf_counter() - start


@dataclass
class RunRecord:
    """What a run learns on its way, for its results.json: the seconds of each step, the digests
    of what it read, the split and the examples read from it, the examples of other topics and of topics the model was trained
    without, the cache's hits, and each arm's (run, baseline) predictions and scores."""

    timings: dict[str, float] = field(default_factory=dict)
    workers: int | None = None
    digests: dict = field(default_factory=dict)
    split: str | None = None
    loaded: list = field(default_factory=list)
    n_other_topics: int | None = None
    model_holdout: list | None = None
    n_held_out: int = 0
    cache: dict = field(default_factory=lambda: {"hits": 0, "misses": 0})
    outcomes: dict = field(default_factory=dict)
    by_rank: dict = field(default_factory=dict)


def run_results(settings, parts, record: RunRecord, examples, uncertainty: dict, left: dict) -> dict:
    """results.json of a run: its settings as given and as resolved (the components' options, the
    split chosen, the digests), the versions, the counts, and each arm's corpus values with their
    intervals; ``left`` counts the examples each arm left uncontrolled."""
    source, main = parts.dataset, parts.controllers[0]
    other = parts.controllers[1] if len(parts.controllers) > 1 else None
    config = {**settings.recorded(), **record.digests, "split": record.split,
              "split_origin": source.describe_split(record.split), "controller": main.name,
              "metrics": [metric.name for metric in parts.metrics], "judge_options": judge_options(parts.judge),
              "baseline": other.name if other else None, "workers": record.workers,
              "bootstrap": recorded(settings.bootstrap, settings.seed, source), "options": parts.recorded_options()}
    run_scores = record.outcomes["run"][1]
    return {
        "schema_version": SCHEMA_VERSION,
        "config": mask_secrets(config),
        "versions": versions(),
        "n_examples": len(examples),
        "n_skipped": source.skipped,
        "n_other_topics": record.n_other_topics,
        "topic_picks": {**describe_picks(examples, settings.topics_per_document), "by_rank": record.by_rank.get("run")}
        if settings.topics_per_document else None,
        "model_holdout": {"topics": record.model_holdout, "n_examples": record.n_held_out}
        if record.model_holdout else None,
        "cache": record.cache if settings.cache else None,
        "uncontrolled": left["run"],
        "scored": run_scores.scored,
        "metrics": run_scores.corpus,
        "intervals": uncertainty.get("run"),
        "baseline": {"controller": other.name, "metrics": record.outcomes["baseline"][1].corpus,
                     "intervals": uncertainty.get("baseline"), "uncontrolled": left["baseline"],
                     **({"by_rank": record.by_rank["baseline"]} if record.by_rank else {})} if other else None,
        "paired": uncertainty.get("paired"),
        "timings": {name: round(seconds, 4) for name, seconds in record.timings.items()},
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
