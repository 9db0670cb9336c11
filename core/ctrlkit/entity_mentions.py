"""Which sentences of a text mention a named entity, found one of three ways: the option
``mentions`` of the ``entity`` metric and of the ``guidance`` controller (whose ``source=entity``
Lead3-ent reads). EntSUM found an entity's sentences with named-entity recognition and
coreference; ``rule`` needs no model, the others need spaCy (the ``ner`` extra).

- ``rule`` (the default): ``ctrlkit.entities``: the full name, a person-like name's surname
  decided by word lists, or the names of the ``aliases`` control.
- ``spacy``: the rule, corrected by the entities spaCy's recogniser finds in each sentence. The
  full name and the ``aliases`` control's names count as in the rule. With no ``aliases``
  control, the surname (the last name word, written capitalised as in the name, whole) counts
  when the entity is a person, and where it does not stand inside an entity of several words
  that is not this one:

  - *a person*: where the text has a span equal to the full name, the recogniser's label of it
    decides (PERSON, or not: "Goldman Sachs" as ORG gets no surname); elsewhere, a PERSON span
    naming the entity (``names_person``), or the rule's person-like test;
  - *inside another entity*: "Obama" in "Michelle Obama" (PERSON) is no mention of Barack Obama,
    nor "Sterling" in "Sterling Cooper" (ORG) of Roger Sterling; a one-word span is no such
    entity ("Washington" labelled a place still names Isaiah Washington);
  - a PERSON span naming the entity counts even where the rule's word lists refuse the name
    ("Court" for Margaret Court, when the recogniser calls it a person).

- ``spacy-pronouns``: ``spacy``, and (with no ``aliases`` control) a sentence that opens with
  "He" or "She" and names no person mentions the entity when the nearest earlier sentence that
  names anyone names only the entity (``pronoun_sentences``): "Brice Robin told CNN ... He
  added ..." gives both sentences. It reads no gender, no pronoun elsewhere in a sentence, and
  none in a sentence that opens with a quotation mark (quoted speech speaks of others).

Sentences are ctrlkit's (``ctrlkit.text.sentences``), each given to spaCy alone, so a mention
found in a text is one found in one of its sentences. This is no coreference resolver: none
installs without a model download (docs/reference/metrics.md, "entity", says which were tried).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from .entities import ARABIC_ARTICLE, HONORIFICS, SUFFIXES, given_aliases, mentions, person_like, surname
from .errors import OptionError
from .spacy_pipeline import english_pipeline, pipeline_identity
from .text import sentences

MENTION_FINDERS = ("rule", "spacy", "spacy-pronouns")
"""The values of the option ``mentions``; ``rule`` is the default."""

OPENING_PRONOUNS = ("He", "She")
"""The first words whose sentence ``spacy-pronouns`` may attach to the person named before."""


class Span(NamedTuple):
    """One entity spaCy found in a sentence: its text, label and character offsets there."""

    text: str
    label: str
    start: int
    end: int


class Sentence(NamedTuple):
    """What ``spacy`` and ``spacy-pronouns`` read of one sentence."""

    text: str
    spans: tuple[Span, ...]
    opens_with_pronoun: bool

    @property
    def people(self) -> tuple[str, ...]:
        return tuple(span.text for span in self.spans if span.label == "PERSON")


class MentionFinder:
    """Finds an entity's mentions the way ``how`` (one of ``MENTION_FINDERS``) says. ``option``
    names the setting in errors ("entity.mentions"), so a missing spaCy is reported against it."""

    def __init__(self, how: str, option: str):
        if how not in MENTION_FINDERS:
            raise OptionError(f"option {option} must be one of {', '.join(MENTION_FINDERS)}; got {how!r}")
        self.how, self.option = how, option

    def load(self) -> dict[str, str]:
        """Load what the finder needs now (spaCy's pipeline), so that a missing one fails before any
        work; what a run records of it: ``{"mentions_pipeline": "PACKAGE VERSION, spacy VERSION"}``
        (nothing for the rule)."""
        if self.how == "rule":
            return {}
        return {"mentions_pipeline": pipeline_identity(f"{self.option}={self.how}")}

    def sentences(self, document: str, entity: str, given=None) -> list[str]:
        """The sentences of ``document`` that mention ``entity``, in order; ``given`` is the example's
        ``aliases`` control (None when absent), which replaces the derived aliases."""
        split = sentences(document)
        if self.how == "rule":
            return [sentence for sentence in split if mentions(sentence, entity, given)]
        english_pipeline(f"{self.option}={self.how}")  # the one-line error names the option without spaCy
        given = given_aliases(given)
        if given is not None:  # the aliases control names the mentions: read as the rule reads it
            return [sentence for sentence in split if mentions(sentence, entity, given)]
        analysed = _analysed(split)
        named = named_sentences(analysed, entity.strip())
        if self.how == "spacy-pronouns":
            named = pronoun_sentences(named, analysed, entity.strip())
        return [sentence for sentence, found in zip(split, named) if found]

    def mentions(self, text: str, entity: str, given=None) -> bool:
        """True when ``text`` mentions ``entity`` (one of its sentences does)."""
        if self.how == "rule":
            return mentions(text, entity, given)
        return bool(self.sentences(text, entity, given))


def named_sentences(analysed: tuple[Sentence, ...], entity: str) -> list[bool]:
    """For each sentence, whether it names ``entity`` by the ``spacy`` rule (no aliases control)."""
    person = is_person(analysed, entity)
    pattern = surname_pattern(entity) if person else None
    found = []
    for sentence in analysed:
        found.append(mentions(sentence.text, entity, ())
                     or any(names_person(name, entity) for name in sentence.people)
                     or (pattern is not None and any(not _inside_another(match, sentence.spans, entity)
                                                     for match in pattern.finditer(sentence.text))))
    return found


def is_person(analysed: tuple[Sentence, ...], entity: str) -> bool:
    """Whether ``entity`` is a person in this text: the label of a span equal to its full name
    where there is one, else a PERSON span naming it, else the rule's person-like test."""
    full = " ".join(entity.split()).lower()
    labels = {span.label for sentence in analysed for span in sentence.spans
              if " ".join(_without_possessive(span.text).split()).lower() == full}
    if labels:
        return "PERSON" in labels
    return any(names_person(name, entity) for sentence in analysed for name in sentence.people) \
        or person_like(entity)


def surname_pattern(entity: str) -> re.Pattern | None:
    """The entity's surname as whole words, its first letter as written in the name: the rule's
    surname ("Bashar al-Assad": "al-Assad" or "Assad"), else the last name word."""
    words = _name_words(entity)
    last = surname(entity) or (words[-1].rstrip(".,") if words else "")
    if not last:
        return None
    forms = {last, ARABIC_ARTICLE.sub("", last)}
    names = [f"(?-i:{re.escape(form[0])})" + re.escape(form[1:]) for form in sorted(forms, key=len, reverse=True)]
    return re.compile(r"(?<!\w)(?:" + "|".join(names) + r")(?!\w)", re.IGNORECASE)


def pronoun_sentences(named: list[bool], analysed: tuple[Sentence, ...], entity: str) -> list[bool]:
    """``named`` (one flag a sentence: it names the entity) with the ``spacy-pronouns`` rule added:
    a sentence opening with "He" or "She" and naming no person names it too when the nearest
    earlier sentence with PERSON spans has spans of one person only, and they name ``entity``."""
    found, last_people = list(named), ()
    for index, sentence in enumerate(analysed):
        people = sentence.people
        if sentence.opens_with_pronoun and not people and last_people \
                and all(names_person(name, entity) for name in last_people):
            found[index] = True
        if people:
            last_people = people
    return found


def names_person(span: str, entity: str) -> bool:
    """True when the PERSON span's text names ``entity``: its last word (possessive dropped, any
    case, an Arabic article ignored) is the entity's last name word, and its other words, leading
    titles dropped, are all words of the entity's name."""
    words = [_plain(word) for word in span.split()]
    while len(words) > 1 and words[0] in HONORIFICS:
        words = words[1:]
    name = [_plain(word) for word in _name_words(entity)]
    return bool(words) and bool(name) and words[-1] == name[-1] and set(words) <= set(name)


SPACY_BATCH = 8
"""Sentences spaCy analyses at once: its memory is that of the batch, not of the text."""


@lru_cache(maxsize=256)
def _analysed(split: tuple[str, ...]) -> tuple[Sentence, ...]:
    """What spaCy's pipeline (already loaded) finds in each sentence, kept for the last documents."""
    found = []
    # a few sentences a batch: spaCy holds one array for all the tokens of a batch, so its default
    # (1,000 sentences, each up to a 5,000-character window) took 3.7 GB for a 1.1 MB prediction
    for text, doc in zip(split, english_pipeline("mentions=spacy").pipe(split, batch_size=SPACY_BATCH)):
        spans = tuple(Span(span.text, span.label_, span.start_char, span.end_char) for span in doc.ents)
        found.append(Sentence(text, spans, text.split(" ", 1)[0] in OPENING_PRONOUNS))
    return tuple(found)


def _inside_another(match: re.Match, spans: tuple[Span, ...], entity: str) -> bool:
    """Whether the surname ``match`` lies inside a span of several words that does not name ``entity``."""
    return any(span.start <= match.start() and match.end() <= span.end and len(span.text.split()) > 1
               and not (span.label == "PERSON" and names_person(span.text, entity)) for span in spans)


def _name_words(entity: str) -> list[str]:
    """The words of ``entity`` without a trailing generational suffix ("Jr.", "III")."""
    words = entity.split()
    while len(words) > 1 and words[-1].lower().rstrip(".,") in SUFFIXES:
        words = words[:-1]
    return words


def _without_possessive(text: str) -> str:
    return re.sub(r"['’]s$", "", text)


def _plain(word: str) -> str:
    """A name word compared: lowercased, without a possessive, trailing punctuation or Arabic article."""
    word = _without_possessive(word.lower()).rstrip(".,;:'’")
    return ARABIC_ARTICLE.sub("", word)
