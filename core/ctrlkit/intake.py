"""Text and numbers as they enter a run, made safe to write out once the work is done.

JSON may spell a lone surrogate (``"\\ud800"``) and Python's json reads ``NaN`` and ``Infinity``;
neither can be written back as UTF-8 JSON, and found only when results are written, they would
lose everything computed. So every text that enters (examples from any dataset, predictions given
to ``ctrlkit evaluate``, each backbone's generations and each judge's answers, topic documents)
passes through here first, with one policy:

- a lone surrogate is replaced by U+FFFD, the replacement character;
- a NaN or infinite number in data (controls, meta, the extra fields of a predictions line) is
  replaced by null;

each counted, and reported in one warning line per source. A document over
``MAX_DOCUMENT_CHARS`` characters is refused before any work (``admit_examples``).
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from .errors import DatasetError
from .types import Example

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_DOCUMENT_CHARS = 2_000_000
"""The longest document a run or an evaluation accepts, in characters (about 2 MB of English,
a long book): sentence splitting takes about 10 s per million characters, and a longer document
is more likely a mistake (a whole corpus in one field) than a text to summarize."""

logger = logging.getLogger("ctrlkit")


@dataclass
class Intake:
    """Cleans values from one source (``what``: "dataset 'x'", a file name, "backbone 'y'") and
    counts what it changed, per field; ``report`` warns once."""

    what: str
    surrogates: Counter = field(default_factory=Counter)
    non_finite: Counter = field(default_factory=Counter)

    def text(self, value: str, name: str) -> str:
        """``value`` with each lone surrogate replaced by U+FFFD (counted under ``name``)."""
        if not isinstance(value, str):
            return value
        cleaned, count = _SURROGATE.subn(REPLACEMENT, value)
        if count:
            self.surrogates[name] += count
        return cleaned

    def value(self, value: Any, name: str) -> Any:
        """A JSON-like value with its texts (keys too) cleaned and non-finite numbers made None."""
        if isinstance(value, str):
            return self.text(value, name)
        if isinstance(value, float) and not math.isfinite(value):
            self.non_finite[name] += 1
            return None
        if isinstance(value, dict):
            return {self.text(key, name): self.value(item, name) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.value(item, name) for item in value)
        return value

    def example(self, example: Example) -> Example:
        """``example`` cleaned in place (id, document, references, controls, meta), and returned."""
        example.id = self.text(example.id, "id")
        example.document = self.text(example.document, "document")
        example.references = [self.text(reference, "references") for reference in example.references]
        example.controls = self.value(example.controls, "controls")
        example.meta = self.value(example.meta, "meta")
        return example

    def report(self) -> None:
        """One warning line saying what was replaced, if anything was."""
        parts = []
        if self.surrogates:
            parts.append(f"replaced {sum(self.surrogates.values())} lone surrogate(s) with U+FFFD "
                         f"(in {_fields(self.surrogates)})")
        if self.non_finite:
            parts.append(f"replaced {sum(self.non_finite.values())} NaN or infinite number(s) with null "
                         f"(in {_fields(self.non_finite)})")
        if parts:
            logger.warning("ctrlkit: %s: %s", self.what, "; ".join(parts))


def replace_surrogates(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, uncounted (for writers: a last guard)."""
    return _SURROGATE.sub(REPLACEMENT, text)


def _fields(counts: Counter) -> str:
    return ", ".join(f"{name}: {n}" for name, n in sorted(counts.items()))


def admit_examples(examples: Sequence[Example], dataset: str) -> list[Example]:
    """Every example of a dataset (ours or a plugin's) cleaned, with one warning for the lot; a
    document over ``MAX_DOCUMENT_CHARS`` characters is refused before any work, naming it."""
    intake = Intake(f"dataset '{dataset}'")
    cleaned = [intake.example(example) for example in examples]
    intake.report()
    for example in cleaned:
        if len(example.document) > MAX_DOCUMENT_CHARS:
            raise DatasetError(f"dataset '{dataset}': the document of example '{example.id}' has "
                               f"{len(example.document):,} characters, over the limit of {MAX_DOCUMENT_CHARS:,}")
    return cleaned
