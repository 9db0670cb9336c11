"""What scoring gives (:class:`Scores`), apart from the code that makes it, so that
:mod:`ctrlkit.uncertainty` can name it without importing the engine."""

from __future__ import annotations

from dataclasses import dataclass, field


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
