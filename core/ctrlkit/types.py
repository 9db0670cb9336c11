"""The data that flows through a run: plain dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

TAG = "[TAG]"
"""Marks a topic term in the source: ``[TAG] businesses [TAG]`` (the tag controller)."""

SEP = "<sep>"
"""Separates prepended control text from the document: ``sports <sep> The match ...``."""

WELL_KNOWN_CONTROLS = ("topic", "entity", "keywords", "length", "readability", "focus")


@dataclass
class Example:
    """One source document with its gold summaries and the controls requested for it.

    ``controls`` holds well-known keys (see ``WELL_KNOWN_CONTROLS``) and any other key a
    third-party attribute needs; ``meta`` holds what is neither input nor control.
    """

    id: str
    document: str
    references: list[str] = field(default_factory=list)
    controls: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelInput:
    """What a backbone consumes. Controllers return a modified copy with ``.replace(...)``."""

    source: str
    guidance: str | None = None
    messages: tuple[dict[str, str], ...] | None = None
    features: dict[str, Any] = field(default_factory=dict)

    def replace(self, **changes: Any) -> "ModelInput":
        return replace(self, **changes)


@dataclass
class MetricResult:
    """A metric's scores: one value per example for each per-example value name, and the
    corpus-level values (means of those, plus values that exist only at corpus level)."""

    per_example: dict[str, list[float | None]]
    corpus: dict[str, float | None]
    details: list[dict] | None = None
    """Optional per-example record beyond numbers (a judge's extractions and ratings), kept in
    samples.jsonl. A value that could not be computed is None, and the metric counts it in
    ``corpus`` (e.g. ``failed``) rather than scoring it."""
