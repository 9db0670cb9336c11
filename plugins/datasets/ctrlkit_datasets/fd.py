"""FD, the facet-aware evaluation benchmark of Chen et al. (released as ScholarSum): papers with the
human abstract, the abstracts of several systems, human facet scores and stored metric scores.
The release has an arXiv half (``dataset/arxiv.json``) and a PubMed half (``dataset/pubmed.json``)
in one layout, which this loader reads from each line's keys rather than from a list of names:

- ``article`` is the paper, ``human`` its abstract (the reference), ``human_aspect`` (arXiv) or
  ``ground_aspect`` (PubMed) the reference's facets as JSON text;
- a system is any other key S holding text that has fields ``S_<name>``: its abstract is ``S``
  and its fields are every key ``S_<name>`` (the key belongs to the longest such S, so
  ``bigbird_pegasus_block_human`` is ``bigbird_pegasus_block``'s, not ``bigbird_pegasus``'s).
  A field holds a number (``human``, ``gpt4_fm``, ``acu3``, ``questeval``, ...), a list of
  numbers (``human_list``, the per-facet forms) or text (``aspect``, the system's facets);
- a key that belongs to no system is not read (PubMed's first line has ``gpt35_gpt4`` though
  its system is ``gpt35_fm``).

One example per (paper, system): the human abstract is the reference and the system's abstract
a given prediction (``meta["prediction"]``), so ``ctrlkit evaluate --dataset fd`` scores it
without generation. ``meta`` holds every field of the system under its name in the file
(``human``, ``human_list``, ``gpt4_fm``, ``newrouge1``, ...), the reference's facets as
``reference_aspect``, and ``system`` and ``paper`` (the line); ``evaluate`` keeps them under
``given`` for ``ctrlkit meta-eval``.
"""

from __future__ import annotations

import math
from typing import Any

from ctrlkit import Dataset, DatasetError, Example, Option
from ctrlkit.plugin_api import read_jsonl, require_text
from ctrlkit.plugin_api import SKIP_INVALID

PAPER_FIELDS = ("article", "human", "human_aspect", "ground_aspect")
"""Keys of the paper and its reference, never a system."""
REFERENCE_FACETS = ("human_aspect", "ground_aspect")
"""The reference's facets: arXiv names them one way, PubMed the other."""
OWN_META = ("prediction", "system", "paper", "reference_aspect")
"""What the loader itself puts in ``meta``: no field of a system may take these names."""


class FacetBenchmark(Dataset):
    """FD JSON lines (arxiv.json or pubmed.json): one example per (paper, system) with the system
    abstract as its prediction and every stored field of that system in ``meta``."""

    group_field = "paper"  # one example per system for each paper

    options = (
        Option("path", str, "", "the FD JSON lines file, arxiv.json or pubmed.json (--data)"),
        Option("systems", str, "", "comma-separated systems; empty: every system with human scores "
                                   "(a field S_human)"),
        SKIP_INVALID,
    )

    def load(self, split):
        if split is not None:
            raise DatasetError("dataset 'fd' has no splits")
        if not self.options["path"]:
            raise DatasetError("dataset 'fd' needs the FD JSON lines file: --data PATH (arxiv.json or pubmed.json)")
        named = [name.strip() for name in self.options["systems"].split(",") if name.strip()]
        first: list[tuple[int, list[str]]] = []  # the first line's systems, when none are named
        return self.build_examples(read_jsonl(self.options["path"]),
                                   lambda numbered: self._examples(*numbered, named, first))

    def _examples(self, line: int, paper: dict, named: list[str], first: list) -> list[Example]:
        where = f"{self.options['path']}:{line}"
        reference = require_text(paper, "human", where)
        document = require_text(paper, "article", where)
        systems = systems_of(paper, where)
        chosen = named or _judged(systems, where, first, line)
        reference_facets = next((paper[key] for key in REFERENCE_FACETS if key in paper), None)
        examples = []
        for system in chosen:
            if system in PAPER_FIELDS:
                raise DatasetError(f"{where}: '{system}' is the paper or its reference, not a system (fd.systems)")
            prediction = require_text(paper, system, where, "fd.systems")
            if system not in systems:
                raise DatasetError(f"{where}: field '{system}' is text but not a system's abstract: no field "
                                   f"'{system}_<score>' follows it (fd.systems)")
            meta = {"prediction": prediction, "system": system, "paper": line, **systems[system]}
            if reference_facets is not None:
                meta["reference_aspect"] = reference_facets
            examples.append(Example(id=f"{line}:{system}", document=document, references=[reference], meta=meta))
        return examples


MAX_SYSTEM_NAME = 100
"""The longest system name looked for: a key's owner is found among its first 100 characters, so
reading a line costs time linear in its keys however they are built."""


def systems_of(paper: dict, where: str) -> dict[str, dict[str, Any]]:
    """Each system of one line (see the module's docstring) and its fields by name, in the
    line's order; a field that holds neither a number, a list of numbers nor text is refused."""
    texts = {key for key, value in paper.items()
             if isinstance(value, str) and key not in PAPER_FIELDS and len(key) <= MAX_SYSTEM_NAME}
    found = {key: _prefixes(key, texts) for key in paper if key not in PAPER_FIELDS}
    named = {prefix for prefixes in found.values() for prefix in prefixes}
    systems: dict[str, dict[str, Any]] = {key: {} for key in paper if key in named}
    unowned = []
    for key, value in paper.items():
        if key in PAPER_FIELDS or key in systems:
            continue
        owners = [prefix for prefix in found[key] if prefix in systems]
        if not owners:
            unowned.append(key)
            continue
        owner = owners[-1]  # the longest
        name = key[len(owner) + 1:]
        if name in OWN_META:
            raise DatasetError(f"{where}: field '{key}' names a system's '{name}', which the loader sets itself")
        systems[owner][name] = _stored(value, key, where)
    _refuse_systems_without_text(paper, unowned, where)
    return systems


def _prefixes(key: str, texts: set[str]) -> list[str]:
    """The text keys that ``key`` starts with followed by ``_``, shortest first (only its first
    ``MAX_SYSTEM_NAME`` characters are looked at)."""
    found, at = [], key.find("_", 1)
    while 0 < at <= MAX_SYSTEM_NAME:
        if key[:at] in texts:
            found.append(key[:at])
        at = key.find("_", at + 1)
    return found


def _stored(value: Any, key: str, where: str) -> Any:
    if isinstance(value, str) or _finite(value):
        return value
    if isinstance(value, list) and all(_finite(item) for item in value):
        return value
    raise DatasetError(f"{where}: field '{key}' must be a number, a list of numbers or text, got "
                       f"{_kind(value)}")


def _refuse_systems_without_text(paper: dict, unowned: list[str], where: str) -> None:
    """A key of no system whose human scores (``K_human``) are there too is a system whose abstract
    is not text (``"gpt35": null`` beside ``gpt35_human``): refused, rather than left unread."""
    keys = set(unowned)
    for key in unowned:
        if f"{key}_human" in keys:
            raise DatasetError(f"{where}: field '{key}' must be a system's abstract (text, since '{key}_human' "
                               f"follows it), got {_kind(paper[key])}")


def _judged(systems: dict, where: str, first: list, line: int) -> list[str]:
    """The systems with human scores; every line must have the first line's."""
    judged = [system for system, fields in systems.items() if "human" in fields]
    if not judged:
        raise DatasetError(f"{where}: no system has human scores (a field S_human beside a text field S)")
    if not first:
        first.append((line, judged))
    elif set(judged) != set(first[0][1]):
        raise DatasetError(f"{where}: the systems with human scores are {', '.join(judged)}, line "
                           f"{first[0][0]}'s were {', '.join(first[0][1])} (name the ones to read with fd.systems)")
    return first[0][1]


def _finite(value: Any) -> bool:
    """A number a float holds: an integer of over 308 digits is not one (``math.isfinite`` would
    overflow on it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return value.bit_length() <= 1024 if isinstance(value, int) else math.isfinite(value)


def _kind(value: Any) -> str:
    if isinstance(value, list):
        bad = next((item for item in value if not _finite(item)), None)
        if bad is None:
            return "a list of numbers"
        return "a list holding " + ("a list" if isinstance(bad, list) else _kind(bad))
    if isinstance(value, float):
        return f"{value!r}"
    return "null" if value is None else type(value).__name__
