"""Topic-oriented training data (Passali & Tsoumakas): "super-articles" that interleave the
sentences of two articles on different topics, each paired once with the summary of one article
and that summary's topic. Only the topic tells which article to summarize, so a model trained on
them must learn to follow the topic.

An article is a distinct document; each of its examples contributes a (topic, reference)
candidate, the first reference of the first example for that topic (NEWTS repeats articles for
several annotators). Topic-labelled datasets usually give an article several topics (NEWTS and
the bundled sample give two), so none is a pure-topic source. Two articles are therefore mixed
only when each has a topic the other lacks: the super-article is paired with A's summary for a
topic only A has and with B's summary for a topic only B has, so the requested topic always
points at exactly one of the two articles. For single-topic articles this is simply "different
topics". Each article is used at most once, with one of its topics.

Pairing is greedy over groups of articles with the same topic set: always mix the largest
group with the largest group it can be mixed with. For single-topic articles (or, as in NEWTS
and the sample, articles that all have two topics) this gives the most pairs possible; in
general it stops only when no two remaining articles can be mixed. ``random.Random(seed)``
orders the articles within each group and picks a topic when an article has several the other
lacks, so the same examples and seed give the same rows.

A mix is training data, so :func:`topic_mix` reads a dataset's train split unless told
otherwise: mixed from the test split, it would train a model on the examples it is scored on.
Data given as one file that is itself one split (``Dataset.data_splits`` is empty: MACSum's
val.json, a CCSBench test.csv, a JSONL file) is read whole, the file chosen being the choice of
split; a NEWTS CSV file is split by article, so its train part is read.

Examples without a topic (MACSum gives one on some references only) are left out and counted,
as a run leaves examples lacking a control uncontrolled; a mix is refused only when none has one.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Iterable

from ctrlkit import DatasetError, Example, get_dataset
from ctrlkit.plugin_api import carries
from ctrlkit.plugin_api import atomic_write_jsonl
from ctrlkit.plugin_api import sentences

logger = logging.getLogger("ctrlkit")


@dataclass
class Article:
    """One distinct document and its candidates: topic -> (source example id, reference)."""

    document: str
    candidates: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def topics(self) -> frozenset[str]:
        return frozenset(self.candidates)


@dataclass
class Pair:
    """Article ``first`` summarized for ``first_topic``, ``second`` for ``second_topic``."""

    first: Article
    first_topic: str
    second: Article
    second_topic: str


@dataclass
class TopicMix:
    pairs: list[Pair]
    unpaired: list[Article]
    skipped: int = 0  # invalid dataset rows left out (the dataset's skip_invalid option)
    without_topic: int = 0  # examples left out for lacking a topic

    def rows(self) -> list[dict]:
        """Two rows per pair, in the ``jsonl`` dataset's format; ``meta`` (the source example ids
        and topics of the pair, first article first) is provenance, ignored when read back."""
        rows = []
        for number, pair in enumerate(self.pairs, 1):
            document = interleave(pair.first.document, pair.second.document)
            sides = ((pair.first, pair.first_topic), (pair.second, pair.second_topic))
            meta = {"articles": [article.candidates[topic][0] for article, topic in sides],
                    "topics": [pair.first_topic, pair.second_topic]}
            for suffix, (article, topic) in zip("ab", sides):
                rows.append({"id": f"mix-{number}-{suffix}", "document": document,
                             "references": [article.candidates[topic][1]], "controls": {"topic": topic},
                             "meta": meta})
        return rows

    def unpaired_by_topics(self) -> dict[str, int]:
        """Articles left out, counted by their topics (``"a + b"`` for an article with two)."""
        counts: dict[str, int] = {}
        for article in self.unpaired:
            label = " + ".join(sorted(article.topics))
            counts[label] = counts.get(label, 0) + 1
        return dict(sorted(counts.items()))


def build_topic_mix(examples: Iterable[Example], seed: int = 0) -> list[dict]:
    """The super-article rows for ``examples`` (topic-labelled, with references)."""
    return mix_topics(examples, seed).rows()


def topic_mix(out: str | Path, dataset: str = "sample", data: str | None = None, split: str | None = None,
              options: dict | None = None, seed: int = 0) -> TopicMix:
    """Mix ``dataset``'s ``split`` (default: its train split; all of a file that is itself one
    split) and write the rows to ``out``; ``options`` are the dataset's."""
    options = dict(options or {})
    if data is not None:
        options["path"] = data
    source = get_dataset(dataset, **options)
    mix = write_topic_mix(out, source.load(source.training_split(split, "a topic mix is training data: it")), seed)
    mix.skipped = source.skipped
    return mix


def write_topic_mix(path: str | Path, examples: Iterable[Example], seed: int = 0) -> TopicMix:
    """Write the rows to ``path`` as JSONL, atomically; returns the mix for its counts."""
    mix = mix_topics(examples, seed)
    atomic_write_jsonl(path, mix.rows())
    return mix


def mix_topics(examples: Iterable[Example], seed: int = 0) -> TopicMix:
    """Pair the articles of ``examples`` (see the module's docstring); refuses when no pair exists.
    Examples without a topic are left out, counted in ``without_topic`` and in one warning line."""
    examples = list(examples)
    with_topic = [example for example in examples if carries(example, "topic")]
    if examples and not with_topic:
        raise DatasetError(f"none of the {len(examples)} examples has a topic (control 'topic'); "
                           "a topic mix needs topic-labelled examples")
    without_topic = len(examples) - len(with_topic)
    if without_topic:
        logger.warning("ctrlkit: topic mix: %d of %d examples have no topic (control 'topic') and are left out",
                       without_topic, len(examples))
    articles = collect_articles(with_topic)
    rng = random.Random(seed)
    groups: dict[frozenset[str], list[Article]] = {}
    for article in articles:
        groups.setdefault(article.topics, []).append(article)
    for group in groups.values():
        rng.shuffle(group)
    pairs = []
    while (keys := _mixable_groups(groups)) is not None:
        first, second = (groups[key].pop() for key in keys)
        first_topic = rng.choice(sorted(first.topics - second.topics))
        second_topic = rng.choice(sorted(second.topics - first.topics))
        pairs.append(Pair(first, first_topic, second, second_topic))
    if not pairs:
        _refuse(articles)
    return TopicMix(pairs, [article for group in groups.values() for article in group], without_topic=without_topic)


def collect_articles(examples: Iterable[Example]) -> list[Article]:
    """Examples (each with a topic) grouped by document, in first-seen order; a topic keeps its
    first reference."""
    articles: dict[str, Article] = {}
    for example in examples:
        topic = example.controls["topic"]
        if not isinstance(topic, str):
            raise DatasetError(f"example '{example.id}': the topic (control 'topic') must be text, "
                               f"not {type(topic).__name__}")
        if not example.references:
            raise DatasetError(f"example '{example.id}': a topic mix needs a reference summary")
        article = articles.setdefault(example.document, Article(example.document))
        article.candidates.setdefault(topic, (example.id, example.references[0]))
    return list(articles.values())


def interleave(first: str, second: str) -> str:
    """A1 B1 A2 B2 ..., then the rest of the longer one, joined by spaces.

    Segmenting the result again need not give back the same sentences (pysbd can merge two
    quoted sentences that meet at a new boundary): the source sentences are the truth."""
    merged = zip_longest(sentences(first), sentences(second))
    return " ".join(sentence for both in merged for sentence in both if sentence is not None)


def _mixable_groups(groups: dict[frozenset[str], list[Article]]) -> tuple[frozenset, frozenset] | None:
    """The largest non-empty group and the largest one it can be mixed with, or None."""
    ranked = sorted((key for key, group in groups.items() if group), key=lambda key: (-len(groups[key]), sorted(key)))
    for i, key in enumerate(ranked):
        for other in ranked[i + 1:]:
            if key - other and other - key:
                return key, other
    return None


def _refuse(articles: list[Article]) -> None:
    topics = sorted({topic for article in articles for topic in article.topics})
    if len(topics) < 2:
        found = f": '{topics[0]}'" if topics else ""
        raise DatasetError(f"a topic mix needs articles on at least two topics; found {len(topics)}{found}")
    raise DatasetError(f"no two of the {len(articles)} articles can be mixed: each must have a topic the other lacks")
