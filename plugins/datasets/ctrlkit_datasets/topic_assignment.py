"""A topic for an article from its words (Passali & Tsoumakas's data pipeline): count, for every
topic, the article's words that belong to the topic's vocabulary (its representative words); the
topic with the most is the article's. When several topics share the most, the article has no
single topic and the caller drops it.

Counting is over the bag of words: a word (a run of ``\\w``) counts once per occurrence, for each
topic whose vocabulary holds its lowercased form or its simplemma lemma. This is the tag
controller's matching rule; the authors lemmatize with NLTK's WordNet lemmatizer after POS
tagging, which can differ on some words.

A vocabulary comes from a file in the layout of the authors' topic seed file (a CSV with one
column per topic: the header names the topic, the cells below are its words) or from the
examples' ``topic_words`` control (NEWTS: each LDA topic's top words).
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from ctrlkit import DatasetError, Example
from ctrlkit.plugin_api import WORD, lemma

from .csvfiles import open_csv

@dataclass(frozen=True)
class TopicVocabularies:
    """Each topic's words, and where they come from (a file, or the examples' topic_words)."""

    words: Mapping[str, frozenset[str]]
    source: str

    def describe(self) -> str:
        return f"{len(self.words)} topic vocabularies from {self.source}"


@dataclass(frozen=True)
class Assignment:
    """The topics with the most vocabulary hits (one when the article is assigned) and that count."""

    topics: tuple[str, ...]
    hits: int

    @property
    def topic(self) -> str | None:
        """The assigned topic, or None: no hit at all, or a tie between several topics."""
        return self.topics[0] if len(self.topics) == 1 else None


def vocabulary_words(text: str) -> frozenset[str]:
    """The lowercased words of ``text`` (a topic's words, separated by commas or spaces)."""
    return frozenset(WORD.findall(text.lower()))


def read_vocabularies(path: str | Path) -> TopicVocabularies:
    """The topics of a seed-word CSV file: one column per topic, named in the header."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: {'not a regular file' if path.exists() else 'no such file'} (topic vocabularies)")
    try:
        with open_csv(path) as file:  # a row at a time: what is kept is each topic's set of words
            rows = csv.reader(file)
            header = [name.strip() for name in next(rows, [])]
            columns = _header_columns(header, path)
            for row in rows:  # each cell once: the time is the file's size, not its columns times its rows
                for words, cell in zip(columns, row):
                    words.update(vocabulary_words(cell))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DatasetError(f"{path}: cannot read as CSV ({exc})") from None
    for topic, words in zip(header, columns):
        if not words:
            raise DatasetError(f"{path}: topic '{topic}' has no words")
    return TopicVocabularies({topic: frozenset(words) for topic, words in zip(header, columns)}, str(path))


def _header_columns(header: list[str], path: Path) -> list[set[str]]:
    """An empty word set per topic of ``header``, which must name each column once."""
    if not any(header):
        raise DatasetError(f"{path}: no header row naming the topics (one column per topic)")
    seen: set[str] = set()
    for column, topic in enumerate(header):
        if not topic:
            raise DatasetError(f"{path}: column {column + 1} has no topic name in the header")
        if topic in seen:
            raise DatasetError(f"{path}: topic '{topic}' names two columns")
        seen.add(topic)
    return [set() for _ in header]


def vocabularies_from_examples(examples: Iterable[Example]) -> TopicVocabularies:
    """Each topic's words from the examples' ``topic_words`` control (the union when they vary)."""
    vocabularies: dict[str, set[str]] = {}
    for example in examples:
        topic, words = example.controls.get("topic"), example.controls.get("topic_words")
        if isinstance(topic, str) and isinstance(words, str) and words.strip():
            vocabularies.setdefault(topic, set()).update(vocabulary_words(words))
    return TopicVocabularies({topic: frozenset(words) for topic, words in vocabularies.items()},
                             "the examples' topic_words")


class TopicAssigner:
    """Assigns articles a topic against fixed vocabularies (each word is looked up once)."""

    def __init__(self, vocabularies: Mapping[str, frozenset[str]]):
        self.topics = tuple(vocabularies)
        self._topics_of_term: dict[str, list[str]] = {}
        for topic, words in vocabularies.items():
            for word in words:
                self._topics_of_term.setdefault(word, []).append(topic)

    def hits(self, document: str) -> dict[str, int]:
        """For each topic, how many of ``document``'s words (with repeats) are in its vocabulary."""
        counts = dict.fromkeys(self.topics, 0)
        for word, occurrences in Counter(WORD.findall(document.lower())).items():
            for topic in {topic for key in (word, lemma(word)) for topic in self._topics_of_term.get(key, ())}:
                counts[topic] += occurrences
        return counts

    def assign(self, document: str) -> Assignment:
        counts = self.hits(document)
        most = max(counts.values(), default=0)
        return Assignment(tuple(topic for topic, n in counts.items() if n == most) if most else (), most)
