"""Zero-shot topics (Passali & Tsoumakas): hold named topics out of training, evaluate on them only.

``ctrlkit train --holdout-topics A,B`` drops every example whose topic is named, and records the
names in the model's folder; ``ctrlkit run --only-topics A,B`` keeps only the examples whose topic
is named. A name matches an example's ``topic`` control or its ``topic_id`` (NEWTS names a topic
by its word list, which holds commas, and by its LDA topic id: name it by the id on the command
line, or give a list in Python or a sweep configuration).
"""

from __future__ import annotations

import logging
from typing import Iterable, Sequence

from .errors import ConfigurationError, OptionError
from .types import Example

NAMING_CONTROLS = ("topic", "topic_id")
"""The controls a topic name is matched against."""
logger = logging.getLogger("ctrlkit")


def topic_names(value, what: str = "topics") -> list[str] | None:
    """``value`` as a list of topic names: None stays None; a string is comma-separated names (as
    the command line gives them); a list or tuple is taken name by name. Blank names are dropped;
    nothing left, or a value of another type, is an OptionError naming ``what``."""
    if value is None:
        return None
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        items = list(value)
    else:
        raise OptionError(f"{what} must be topic names: a comma-separated string or a list of strings, "
                          f"got {type(value).__name__}")
    names = list(dict.fromkeys(item.strip() for item in items if item.strip()))
    if not names:
        raise OptionError(f"{what} names no topic")
    return names


def names_of(example: Example) -> set[str]:
    """The names ``example``'s topic goes by: its ``topic`` and ``topic_id`` controls (a whole
    number id as its digits)."""
    names = set()
    for control in NAMING_CONTROLS:
        value = example.controls.get(control)
        if isinstance(value, str) and value.strip():
            names.add(value.strip())
        elif isinstance(value, int) and not isinstance(value, bool):
            names.add(str(value))
    return names


def check_names(names: Sequence[str], examples: Sequence[Example], where: str, what: str) -> None:
    """Refuse, in one line, the first of ``names`` that no example of ``examples`` (``where``:
    "dataset 'newts', split 'train'") goes by, listing a few names that do."""
    known = set().union(*(names_of(example) for example in examples)) if examples else set()
    unknown = [name for name in names if name not in known]
    if unknown:
        hint = ("; a name holding a comma is split on the command line: name it by its topic_id, or give a list "
                "in Python or a sweep file" if any("," in name for name in known) else "")
        raise ConfigurationError(f"{what}: topic '{unknown[0]}' matches no example's topic or topic_id in {where} "
                                 f"({_a_few(examples)}){hint}")


def keep_topics(examples: Sequence[Example], names: Sequence[str], where: str, what: str = "only_topics"
                ) -> list[Example]:
    """The examples whose topic is one of ``names`` (each name checked against ``examples``)."""
    check_names(names, examples, where, what)
    wanted = set(names)
    return [example for example in examples if names_of(example) & wanted]


def drop_topics(examples: Sequence[Example], names: Iterable[str]) -> list[Example]:
    """The examples whose topic is none of ``names``."""
    unwanted = set(names)
    return [example for example in examples if not names_of(example) & unwanted]


def check_something_left(names: Sequence[str], loaded: Sequence[Example], kept: Sequence[Example], where: str,
                         purpose: str) -> None:
    """Refuse, in one line, holding out ``names`` when they leave nothing of ``loaded`` (``where``'s
    examples) for ``purpose`` ("train on"), rather than fail later on an empty split."""
    if loaded and not kept:
        raise ConfigurationError(f"holdout_topics: every example of {where} requests a held-out topic "
                                 f"({', '.join(names)}); nothing is left to {purpose}")


def held_out_labels(names: Sequence[str], examples: Sequence[Example]) -> set[str]:
    """The ``topic`` labels of the examples that ``names`` (held-out topic names, labels or ids)
    match: how a held-out topic is recognised on an example that no longer carries its id."""
    wanted = set(names)
    return {example.controls["topic"] for example in examples
            if names_of(example) & wanted and isinstance(example.controls.get("topic"), str)}


def report_held_out(holdout: Sequence[str] | None, evaluated: Sequence[Example], pool: Sequence[Example]
                    ) -> int | None:
    """For a model trained with ``holdout`` topics held out: how many of the ``evaluated`` examples
    request a held-out topic (recognised by its label among ``pool``, the examples the run read), with
    one warning line when the run mixes held-out and trained topics or has none held out. None
    when the model records no held-out topics."""
    if not holdout:
        return None
    names = set(holdout) | held_out_labels(holdout, pool)
    unseen = sum(bool(names_of(example) & names) for example in evaluated)
    shown = ", ".join(holdout)
    if unseen < len(evaluated):
        logger.warning("ctrlkit: the model was trained with topic(s) %s held out; %d of the %d examples request "
                       "one of them, the others a topic it was trained on (--only-topics %s evaluates the "
                       "held-out ones only)", shown, unseen, len(evaluated), ",".join(holdout))
    return unseen


def _a_few(examples: Sequence[Example], shown: int = 8) -> str:
    """A few names examples go by: their topic ids when they have them (short), else their topics."""
    ids = sorted({str(e.controls["topic_id"]) for e in examples if e.controls.get("topic_id") not in (None, "")},
                 key=_natural)
    labels = sorted({e.controls["topic"] for e in examples if isinstance(e.controls.get("topic"), str)})
    names, kind = (ids, "topic_ids") if ids else (labels, "topics")
    if not names:
        return "no example has a topic"
    more = f", ... ({len(names)} in all)" if len(names) > shown else ""
    if any("," in name for name in names):  # quoted, so that the list's commas tell the names apart
        names = [f"'{name}'" for name in names]
    return f"known {kind}: {', '.join(names[:shown])}{more}"


def _natural(name: str):
    """Numbers in numeric order, before other names."""
    return (0, int(name), "") if name.isdigit() else (1, 0, name)
