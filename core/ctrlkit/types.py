"""The data that flows through a run: plain dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

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


EXAMPLE_FIELDS = ("id", "document", "references", "controls", "meta")
_EXPECTED = ("a ctrlkit.Example or a dict {'id': str, 'document': str, 'references': [str, ...], "
             "'controls': {...}, 'meta': {...}} (references, controls and meta may be left out)")


def as_example(value: Any) -> Example:
    """``value`` as an :class:`Example`: an Example as it is, a dict with its fields made into one
    (``references`` may be one string); anything else is a TypeError saying what is expected."""
    if isinstance(value, Example):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"an example must be {_EXPECTED}, got {type(value).__name__}")
    unknown = [str(key) for key in value if key not in EXAMPLE_FIELDS]
    if unknown:
        raise TypeError(f"an example has no field {unknown[0]!r}; expected {_EXPECTED}")
    for name in ("id", "document"):
        if not isinstance(value.get(name), str):
            got = "nothing" if name not in value else type(value[name]).__name__
            raise TypeError(f"an example's {name!r} must be a string, got {got}; expected {_EXPECTED}")
    references = value.get("references", [])
    references = [references] if isinstance(references, str) else references
    if not isinstance(references, (list, tuple)) or not all(isinstance(item, str) for item in references):
        raise TypeError(f"example {value['id']!r}: 'references' must be a string or a list of strings")
    for name in ("controls", "meta"):
        if not isinstance(value.get(name, {}), Mapping):
            raise TypeError(f"example {value['id']!r}: {name!r} must be a dict, got {type(value[name]).__name__}")
    return Example(id=value["id"], document=value["document"], references=list(references),
                   controls=dict(value.get("controls", {})), meta=dict(value.get("meta", {})))


@dataclass(frozen=True)
class ModelInput:
    """What a backbone consumes. Controllers return a modified copy with ``.replace(...)``."""

    source: str
    guidance: str | None = None
    messages: tuple[dict[str, str], ...] | None = None
    features: dict[str, Any] = field(default_factory=dict)

    def replace(self, **changes: Any) -> "ModelInput":
        """A copy with ``changes``: a controller's way to steer an input without changing it."""
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
    parts: dict[str, list[float | None]] | None = None
    """Per-example numbers the corpus values are computed from (:meth:`Metric.aggregate`), where
    they are not ``per_example`` itself: PCC's requested bin and generated length, F1's labels.
    None: the parts are ``per_example``."""

    def aggregation_parts(self) -> dict[str, list[float | None]]:
        """What :meth:`Metric.aggregate` reads: ``parts``, or ``per_example`` when there are none."""
        return self.per_example if self.parts is None else self.parts
