"""Which sentences of a text mention a named entity, found one of three ways: the option
``mentions`` of the ``entity`` metric and of the ``guidance`` controller (whose ``source=entity``
Lead3-ent reads). EntSUM found an entity's sentences with named-entity recognition and
coreference; ``rule`` needs no model, the others need spaCy (the ``ner`` extra).

- ``rule`` (the default): ``ctrlkit.entities``: the full name, a person-like name's surname
  decided by word lists, or the names of the ``aliases`` control.
- ``spacy``: the full name and the ``aliases`` control's names as ``rule`` finds them (whole
  words, any case) and, with no ``aliases`` control, a span that spaCy's recogniser labels
  PERSON and that names the entity (``names_person``): its last word is the entity's last name
  word and its other words are words of the entity's name, leading titles dropped. "Robin" and
  "Brice Robin" name Brice Robin; "Michelle Obama" does not name Barack Obama, nor the verb in
  "cook the books" Tim Cook. Whether a name is a person's is the recogniser's call, in context,
  not the word lists': "Goldman Sachs" gets no surname mention unless the recogniser calls a
  "Sachs" a person, "Margaret Court" gets "Court" where it is one.
- ``spacy-pronouns``: ``spacy``, and, with no ``aliases`` control, a sentence whose subject
  is "he" or "she" mentions the entity when the nearest earlier sentence naming anyone (a PERSON span) names one person only,
  and that person is the entity (``pronoun_sentences``): "Brice Robin told CNN ... He added ..."
  finds both sentences. It reads no gender and no other pronoun ("him", "his", "they").

Sentences are ctrlkit's (``ctrlkit.text.sentences``), each given to spaCy alone, so a mention
found in a text is one found in one of its sentences. This is no coreference resolver: none
installs without a model download (docs/reference/metrics.md, "entity", says which were tried).
"""

from __future__ import annotations

from functools import lru_cache

from .entities import ARABIC_ARTICLE, HONORIFICS, SUFFIXES, given_aliases, mentions
from .errors import OptionError
from .spacy_pipeline import english_pipeline
from .text import sentences

MENTION_FINDERS = ("rule", "spacy", "spacy-pronouns")
"""The values of the option ``mentions``; ``rule`` is the default."""

SUBJECT_PRONOUNS = frozenset({"he", "she"})
"""The pronouns ``spacy-pronouns`` attaches, as the subject of their sentence."""

_SUBJECT_RELATIONS = frozenset({"nsubj", "nsubjpass"})


class MentionFinder:
    """Finds an entity's mentions the way ``how`` (one of ``MENTION_FINDERS``) says. ``option``
    names the setting in errors ("entity.mentions"), so a missing spaCy is reported against it."""

    def __init__(self, how: str, option: str):
        if how not in MENTION_FINDERS:
            raise OptionError(f"option {option} must be one of {', '.join(MENTION_FINDERS)}; got {how!r}")
        self.how, self.option = how, option

    def load(self) -> None:
        """Load what the finder needs now (spaCy's pipeline), so that a missing one fails before any work."""
        if self.how != "rule":
            english_pipeline(f"{self.option}={self.how}")

    def sentences(self, document: str, entity: str, given=None) -> list[str]:
        """The sentences of ``document`` that mention ``entity``, in order; ``given`` is the example's
        ``aliases`` control (None when absent), which replaces the derived aliases."""
        split = sentences(document)
        if self.how == "rule":
            return [sentence for sentence in split if mentions(sentence, entity, given)]
        given = given_aliases(given)
        analysed = analyse(split, f"{self.option}={self.how}")
        named = [bool(mentions(sentence, entity, given or ())) or (
            given is None and any(names_person(span, entity) for span in people))
            for sentence, (people, _) in zip(split, analysed)]
        if self.how == "spacy-pronouns" and given is None:
            named = pronoun_sentences(named, analysed, entity)
        return [sentence for sentence, found in zip(split, named) if found]

    def mentions(self, text: str, entity: str, given=None) -> bool:
        """True when ``text`` mentions ``entity`` (one of its sentences does)."""
        if self.how == "rule":
            return mentions(text, entity, given)
        return bool(self.sentences(text, entity, given))


def pronoun_sentences(named: list[bool], analysed, entity: str) -> list[bool]:
    """``named`` (one flag a sentence: it names the entity) with the ``spacy-pronouns`` rule added:
    a sentence with a "he"/"she" subject names it too when the nearest earlier sentence with
    PERSON spans has spans of one person only, and they name ``entity``."""
    found, last_people = list(named), ()
    for index, (people, pronoun_subject) in enumerate(analysed):
        if pronoun_subject and last_people and all(names_person(span, entity) for span in last_people):
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
    name = [_plain(word) for word in entity.split()]
    while len(name) > 1 and name[-1] in SUFFIXES:
        name = name[:-1]
    return bool(words) and bool(name) and words[-1] == name[-1] and set(words) <= set(name)


def analyse(split: tuple[str, ...], option: str) -> tuple[tuple[tuple[str, ...], bool], ...]:
    """For each sentence: the texts of its PERSON spans, and whether its subject is "he" or "she"."""
    english_pipeline(option)  # the one-line error names the option when spaCy is missing
    return _analysed(split)


@lru_cache(maxsize=256)
def _analysed(split: tuple[str, ...]) -> tuple[tuple[tuple[str, ...], bool], ...]:
    found = []
    for doc in english_pipeline("mentions=spacy").pipe(split):
        people = tuple(span.text for span in doc.ents if span.label_ == "PERSON")
        subject = any(token.lower_ in SUBJECT_PRONOUNS and token.dep_ in _SUBJECT_RELATIONS for token in doc)
        found.append((people, subject))
    return tuple(found)


def _plain(word: str) -> str:
    """A name word compared: lowercased, without a possessive, trailing punctuation or Arabic article."""
    word = word.lower().rstrip(".,;:")
    for possessive in ("'s", "’s"):
        if word.endswith(possessive):
            word = word[:-len(possessive)]
    return ARABIC_ARTICLE.sub("", word.rstrip("'’"))
