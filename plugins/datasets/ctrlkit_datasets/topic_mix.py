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

Topics from words (``topics_from="words"``, the authors' pipeline): instead of its gold labels,
each article gets the one topic whose vocabulary its words hit most (:mod:`.topic_assignment`).
An article is dropped, and counted, when no vocabulary word occurs in it, when several topics
tie for the most hits, or when it has gold topics and the assigned one is not among them (no
reference was written for that topic). Its reference is the one written for the assigned topic,
or, for an article without gold topics (CNN/DailyMail with its highlights, as in the paper), its
first reference. Each article then has one topic, so any two on different topics can be mixed.
"""

from __future__ import annotations

import bisect
import logging
import random
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Iterable

from ctrlkit import DatasetError, Example, OptionError, get_dataset
from ctrlkit.plugin_api import carries, refuse_writing_over_inputs
from ctrlkit.plugin_api import atomic_write_jsonl
from ctrlkit.plugin_api import sentences

from .topic_assignment import TopicAssigner, TopicVocabularies, read_vocabularies, vocabularies_from_examples

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
class AssignmentCounts:
    """What assigning topics from words did to the articles (``topics_from="words"``)."""

    vocabularies: str  # TopicVocabularies.describe()
    articles: int = 0
    assigned: int = 0  # one topic, kept
    no_hit: int = 0  # no vocabulary word in the article: dropped
    multi_topic: int = 0  # several topics tie for the most hits: dropped
    differs_from_gold: int = 0  # assigned a topic the article's gold labels lack: dropped

    def summary(self) -> str:
        return (f"topics from words ({self.vocabularies}): {self.articles} articles, {self.assigned} assigned "
                f"one topic; dropped: {self.multi_topic} multi-topic (a tie), {self.differs_from_gold} with a "
                f"topic other than gold, {self.no_hit} without a vocabulary word")


@dataclass
class TopicMix:
    pairs: list[Pair]
    unpaired: list[Article]
    skipped: int = 0  # invalid dataset rows left out (the dataset's skip_invalid option)
    without_topic: int = 0  # examples left out for lacking a topic
    assignment: AssignmentCounts | None = None  # None: gold topics

    @property
    def topics_from(self) -> str:
        return "gold" if self.assignment is None else "words"

    def rows(self) -> list[dict]:
        """Two rows per pair, in the ``jsonl`` dataset's format; ``meta`` (the source example ids
        and topics of the pair, first article first) is provenance, ignored when read back."""
        rows = []
        for number, pair in enumerate(self.pairs, 1):
            document = interleave(pair.first.document, pair.second.document)
            sides = ((pair.first, pair.first_topic), (pair.second, pair.second_topic))
            meta = {"articles": [article.candidates[topic][0] for article, topic in sides],
                    "topics": [pair.first_topic, pair.second_topic], "topics_from": self.topics_from}
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


TOPICS_FROM = ("gold", "words")


def build_topic_mix(examples: Iterable[Example], seed: int = 0,
                    vocabularies: TopicVocabularies | None = None) -> list[dict]:
    """The super-article rows for ``examples`` (topic-labelled, with references)."""
    return mix_topics(examples, seed, vocabularies).rows()


def topic_mix(out: str | Path, dataset: str = "sample", data: str | None = None, split: str | None = None,
              options: dict | None = None, seed: int = 0, topics_from: str = "gold",
              vocabulary: str | Path | None = None) -> TopicMix:
    """Mix ``dataset``'s ``split`` (default: its train split; all of a file that is itself one
    split) and write the rows to ``out``; ``options`` are the dataset's. ``topics_from="words"``
    assigns each article a topic from its words, against the vocabularies of the CSV file
    ``vocabulary`` (one column per topic) or else of the examples' ``topic_words`` control."""
    if topics_from not in TOPICS_FROM:
        raise OptionError(f"topics_from: '{topics_from}' is not one of {', '.join(TOPICS_FROM)}")
    if vocabulary is not None and topics_from != "words":
        raise OptionError("--vocabulary applies only with --topics-from words")
    options = dict(options or {})
    if data is not None:
        options["path"] = data
    refuse_writing_over_inputs([out], {"--data": options.get("path"), "--vocabulary": vocabulary})
    source = get_dataset(dataset, **options)
    examples = source.load(source.training_split(split, "a topic mix is training data: it"))
    vocabularies = None
    if topics_from == "words":
        vocabularies = read_vocabularies(vocabulary) if vocabulary is not None else vocabularies_from_examples(examples)
        if not vocabularies.words:
            raise DatasetError(f"dataset '{dataset}': its examples carry no 'topic_words' to assign topics from; "
                               "give the topic vocabularies with --vocabulary FILE (a CSV, one column of words "
                               "per topic)")
    mix = write_topic_mix(out, examples, seed, vocabularies)
    mix.skipped = source.skipped
    return mix


def write_topic_mix(path: str | Path, examples: Iterable[Example], seed: int = 0,
                    vocabularies: TopicVocabularies | None = None) -> TopicMix:
    """Write the rows to ``path`` as JSONL, atomically; returns the mix for its counts."""
    mix = mix_topics(examples, seed, vocabularies)
    atomic_write_jsonl(path, mix.rows())
    return mix


def mix_topics(examples: Iterable[Example], seed: int = 0, vocabularies: TopicVocabularies | None = None) -> TopicMix:
    """Pair the articles of ``examples`` (see the module's docstring); refuses when no pair exists.
    Gold topics: examples without a topic are left out, counted in ``without_topic`` and in one
    warning line. With ``vocabularies``, topics are assigned from the articles' words instead."""
    examples = list(examples)
    without_topic, assignment = 0, None
    if vocabularies is None:
        articles, without_topic = gold_articles(examples)
    else:
        articles, assignment = assigned_articles(examples, vocabularies)
    rng = random.Random(seed)
    groups: dict[frozenset[str], list[Article]] = {}
    for article in articles:
        groups.setdefault(article.topics, []).append(article)
    for group in groups.values():
        rng.shuffle(group)
    pairs = []
    ranking = _Ranking(groups)
    while (keys := ranking.mixable()) is not None:
        first, second = (ranking.pop(key) for key in keys)
        first_topic = rng.choice(sorted(first.topics - second.topics))
        second_topic = rng.choice(sorted(second.topics - first.topics))
        pairs.append(Pair(first, first_topic, second, second_topic))
    if not pairs:
        _refuse(articles, assignment)
    return TopicMix(pairs, [article for group in groups.values() for article in group], without_topic=without_topic,
                    assignment=assignment)


def gold_articles(examples: list[Example]) -> tuple[list[Article], int]:
    """The articles of the examples carrying a topic, and how many examples lack one (warned)."""
    with_topic = [example for example in examples if carries(example, "topic")]
    if examples and not with_topic:
        raise DatasetError(f"none of the {len(examples)} examples has a topic (control 'topic'); "
                           "a topic mix needs topic-labelled examples")
    without_topic = len(examples) - len(with_topic)
    if without_topic:
        logger.warning("ctrlkit: topic mix: %d of %d examples have no topic (control 'topic') and are left out",
                       without_topic, len(examples))
    return collect_articles(with_topic), without_topic


def assigned_articles(examples: list[Example], vocabularies: TopicVocabularies
                      ) -> tuple[list[Article], AssignmentCounts]:
    """One article per distinct document, with the one topic its words give (see the module's
    docstring for what is dropped and which reference is kept)."""
    if not vocabularies.words:
        raise DatasetError(f"no topic vocabulary in {vocabularies.source}")
    by_document: dict[str, list[Example]] = {}
    for example in examples:
        _check_reference(example)
        by_document.setdefault(example.document, []).append(example)
    gold_labels = {_topic(example) for example in examples if carries(example, "topic")}
    if gold_labels and not gold_labels & set(vocabularies.words):
        raise DatasetError(f"{vocabularies.source}: none of its topics ({_a_few(vocabularies.words)}) is a topic of "
                           f"the examples ({_a_few(gold_labels)})")
    assigner = TopicAssigner(vocabularies.words)
    counts = AssignmentCounts(vocabularies.describe(), articles=len(by_document))
    articles = []
    for document, group in by_document.items():
        gold: dict[str, Example] = {}
        for example in group:
            if carries(example, "topic"):
                gold.setdefault(_topic(example), example)
        topic = assigner.assign(document)
        if not topic.topics:
            counts.no_hit += 1
        elif topic.topic is None:
            counts.multi_topic += 1
        elif gold and topic.topic not in gold:
            counts.differs_from_gold += 1
        else:
            chosen = gold.get(topic.topic, group[0])
            articles.append(Article(document, {topic.topic: (chosen.id, chosen.references[0])}))
    counts.assigned = len(articles)
    return articles, counts


def collect_articles(examples: Iterable[Example]) -> list[Article]:
    """Examples (each with a topic) grouped by document, in first-seen order; a topic keeps its
    first reference."""
    articles: dict[str, Article] = {}
    for example in examples:
        topic = _topic(example)
        _check_reference(example)
        article = articles.setdefault(example.document, Article(example.document))
        article.candidates.setdefault(topic, (example.id, example.references[0]))
    return list(articles.values())


def _topic(example: Example) -> str:
    topic = example.controls["topic"]
    if not isinstance(topic, str):
        raise DatasetError(f"example '{example.id}': the topic (control 'topic') must be text, "
                           f"not {type(topic).__name__}")
    return topic


def _check_reference(example: Example) -> None:
    if not example.references:
        raise DatasetError(f"example '{example.id}': a topic mix needs a reference summary")


def interleave(first: str, second: str) -> str:
    """A1 B1 A2 B2 ..., then the rest of the longer one, joined by spaces.

    Segmenting the result again need not give back the same sentences (pysbd can merge two
    quoted sentences that meet at a new boundary): the source sentences are the truth."""
    merged = zip_longest(sentences(first), sentences(second))
    return " ".join(sentence for both in merged for sentence in both if sentence is not None)


class _Ranking:
    """The non-empty groups, largest first (ties by their sorted topics), kept in order as articles
    are taken, so that each pair costs a search of the ranking rather than a sort of every group."""

    def __init__(self, groups: dict[frozenset[str], list[Article]]):
        self.groups = groups
        self.ranked = sorted(self._rank(key) for key, group in groups.items() if group)

    def _rank(self, key: frozenset[str]) -> tuple:
        return (-len(self.groups[key]), tuple(sorted(key)), key)

    def mixable(self) -> tuple[frozenset, frozenset] | None:
        """The largest group and the largest one it can be mixed with (each has a topic the other
        lacks), or None."""
        for i, (_, _, key) in enumerate(self.ranked):
            for _, _, other in self.ranked[i + 1:]:
                if key - other and other - key:
                    return key, other
        return None

    def pop(self, key: frozenset[str]) -> Article:
        """An article of group ``key``, the group moved to its new place in the ranking."""
        del self.ranked[bisect.bisect_left(self.ranked, self._rank(key))]
        article = self.groups[key].pop()
        if self.groups[key]:
            bisect.insort(self.ranked, self._rank(key))
        return article


def _a_few(names, shown: int = 3) -> str:
    names = sorted(names)
    return ", ".join(f"'{name}'" for name in names[:shown]) + (f", ... {len(names)} in all" if len(names) > shown else "")


def _refuse(articles: list[Article], assignment: AssignmentCounts | None) -> None:
    if assignment is not None:
        raise DatasetError(f"no two articles are on different topics after assigning {assignment.summary()}")
    topics = sorted({topic for article in articles for topic in article.topics})
    if len(topics) < 2:
        found = f": '{topics[0]}'" if topics else ""
        raise DatasetError(f"a topic mix needs articles on at least two topics; found {len(topics)}{found}")
    raise DatasetError(f"no two of the {len(articles)} articles can be mixed: each must have a topic the other lacks")
