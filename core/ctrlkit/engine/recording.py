"""What a run records: :class:`RunResult`, one samples.jsonl line per example, and the warning
lines it owes (examples left uncontrolled, rows skipped)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ..controls import uncontrolled
from ..results import format_table

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
