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

Values a plugin hands over (a dataset's controls and meta, a metric's numbers and details, a
controller's features) are made plain where they enter (:func:`plain`): a numpy scalar or 0-d
array becomes the Python number, bool or text it holds, and anything that is not JSON-like data
(an object, a complex number, an array, nesting over ``MAX_DEPTH``, an integer no float holds) is refused in one line naming
the plugin and the field, before any work is written.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

from .errors import CtrlkitError, DatasetError
from .types import Example

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_DOCUMENT_CHARS = 2_000_000
"""The longest document a run or an evaluation accepts, in characters (about 2 MB of English,
a long book): sentence splitting takes about 10 s per million characters, and a longer document
is more likely a mistake (a whole corpus in one field) than a text to summarize."""

MAX_DEPTH = 100
"""The deepest nesting of lists and dicts a plugin's value may have (a value deeper than this is
a mistake, and deep enough would overflow Python's stack when written)."""

logger = logging.getLogger("ctrlkit")


def nesting(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep lists and dicts nest in ``value`` (a number or a text: 0), counted without
    recursion, and only up to ``limit + 1``: a JSON, TOML or YAML reader calls it on what it read
    (:func:`check_nesting`), since code that walks a value recursively overflows Python's stack
    on nesting a parser still accepts (about 500 to 1000 levels)."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, (list, tuple)):
            continue
        depth += 1
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth) for child in item)
    return deepest


def check_nesting(value: Any, where: str, error: type[CtrlkitError] = CtrlkitError) -> Any:
    """``value`` when its lists and dicts nest at most ``MAX_DEPTH`` deep; else one ``error`` line
    naming ``where`` (the file, and line)."""
    if nesting(value) > MAX_DEPTH:
        raise too_deep(where, error)
    return value


def too_deep(where: str, error: type[Exception] = CtrlkitError) -> Exception:
    """The one-line error for a value from ``where`` nested over ``MAX_DEPTH`` deep (also when
    the parser's own stack gave out first)."""
    return error(f"{where}: nested over {MAX_DEPTH} levels deep (lists or objects inside each other); "
                 f"refused, as no ctrlkit data nests so deep")


def scalar(value: Any) -> Any:
    """``value`` as a plain Python value when it is a numpy scalar, a 0-d array or a subclass of a
    plain type (``np.float64``, ``np.str_``, ``np.bool_``, an IntEnum); anything else as it is.
    numpy is never imported: any value with ``item()`` and an empty ``shape`` is one number."""
    kind = type(value)
    if kind in (str, int, float, bool) or value is None:
        return value
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if getattr(value, "shape", None) == () and callable(getattr(value, "item", None)):
        try:
            item = value.item()
        except Exception:  # noqa: BLE001 -- an odd object: refused by the caller as what it is
            return value
        if type(item) in (str, int, float, bool, complex, bytes) or item is None:
            return item
    return value


def beyond_float(value: Any) -> str:
    """What is wrong with an int that no float holds (``"is an integer of about 5001 digits,
    ..."``), or "" for any other value. Such an int is no score, count or setting, fails any mean,
    and past 4,300 digits Python refuses to write it as text: found only when results are written,
    it would lose the work done."""
    if type(value) is not int:
        return ""
    if value.bit_length() <= 1024:
        try:
            float(value)
            return ""
        except OverflowError:
            pass
    return (f"is an integer of about {int(value.bit_length() * 0.30103) + 1} digits, beyond the largest "
            f"float (about 1.8e308)")


def plain(value: Any, where: str, depth: int = 0, error: type[CtrlkitError] = CtrlkitError) -> Any:
    """``value`` as plain JSON-like data (str, int, float, bool, None, lists and dicts with text
    keys), numpy scalars made Python ones; anything else, or an int no float holds
    (:func:`beyond_float`), is a :class:`CtrlkitError` naming ``where`` (``"metric 'x':
    details[3]"``) and what was found (an ``error``)."""
    value = scalar(value)
    if type(value) is int and value.bit_length() > 53:
        problem = beyond_float(value)
        if problem:
            raise error(f"{where} {problem}")
    if value is None or type(value) in (str, int, float, bool):
        return value
    if depth >= MAX_DEPTH:
        raise error(f"{where} is nested over {MAX_DEPTH} levels deep")
    if isinstance(value, dict):
        found = {}
        for key, item in value.items():
            key = scalar(key)
            if not isinstance(key, str):
                raise error(f"{where} has a key of type {type(key).__name__}, not text")
            found[key] = plain(item, f"{where}.{key}", depth + 1, error)
        return found
    if isinstance(value, (list, tuple)):
        return [plain(item, f"{where}[{i}]", depth + 1, error) for i, item in enumerate(value)]
    raise error(f"{where} is {_kind(value)}, not a number, text, list or dict")


def _kind(value: Any) -> str:
    shape = getattr(value, "shape", None)
    name = type(value).__name__
    return f"a {name} of shape {tuple(shape)}" if isinstance(shape, tuple) else f"a {name} ({str(value)[:40]!r})"


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

    def value(self, value: Any, name: str, depth: int = 0) -> Any:
        """A JSON-like value with its texts (keys too) cleaned and non-finite numbers made None; a
        value nested over ``MAX_DEPTH`` deep is one CtrlkitError naming the source and field."""
        value = scalar(value)
        if depth > MAX_DEPTH:
            raise CtrlkitError(f"{self.what}: {name} is nested over {MAX_DEPTH} levels deep")
        if isinstance(value, str):
            return self.text(value, name)
        if isinstance(value, float) and not math.isfinite(value):
            self.non_finite[name] += 1
            return None
        if isinstance(value, dict):
            cleaned = {self.text(key, name): self.value(item, name, depth + 1) for key, item in value.items()}
            if not all(type(key) is str for key in cleaned):
                _refuse_keys_written_alike(cleaned, f"{self.what}: {name}")
            return cleaned
        if isinstance(value, (list, tuple)):  # a named tuple, or another subclass, as a list
            kind = type(value) if type(value) in (list, tuple) else list
            return kind(self.value(item, name, depth + 1) for item in value)
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


def admit_examples(examples: Sequence[Example], dataset: str, intake: "Intake | None" = None) -> list[Example]:
    """Every example of a dataset (ours or a plugin's) cleaned, with one warning for the lot; a
    document over ``MAX_DOCUMENT_CHARS`` characters is refused before any work, naming it. Given an
    ``intake``, the cleaning is counted there and its caller reports it (examples admitted a chunk
    at a time)."""
    reporting = intake is None
    intake = intake or Intake(f"dataset '{dataset}'")
    for example in examples:
        for name in ("controls", "meta"):
            where = f"dataset '{dataset}': example '{example.id}': {name}"
            if not isinstance(getattr(example, name), dict):
                raise DatasetError(f"{where} is {_kind(getattr(example, name))}, not a dict")
            setattr(example, name, plain(getattr(example, name), where, error=DatasetError))
    cleaned = [intake.example(example) for example in examples]
    if reporting:
        intake.report()
    for example in cleaned:
        if len(example.document) > MAX_DOCUMENT_CHARS:
            raise DatasetError(f"dataset '{dataset}': the document of example '{example.id}' has "
                               f"{len(example.document):,} characters, over the limit of {MAX_DOCUMENT_CHARS:,}")
    return cleaned


def _refuse_keys_written_alike(mapping: dict, where: str) -> None:
    """Refuse two keys that JSON writes as one (``1`` and ``"1"``, ``None`` and ``"null"``): the file
    would hold the key twice, and a reader would keep only one of the two values."""
    written = [key if isinstance(key, str) else json.dumps(key) for key in mapping]
    if len(set(written)) < len(written):
        twice = next(text for text in written if written.count(text) > 1)
        raise CtrlkitError(f"{where} has two keys written as {json.dumps(twice)} (a number or null beside its "
                           "text); one would be lost")
