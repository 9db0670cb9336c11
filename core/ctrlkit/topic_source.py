"""Non-oracle topics (Passali & Tsoumakas): request the topics a document is about, not the gold one.

``topic_source="oracle"`` (the default) requests each example's gold topic and changes nothing.
``"topK"`` (``top1``, ``top3``, ...) requests instead each document's K topics nearest to it in the
topic space, ranked by ``TopicSpace.similarities`` on the document (cosine; a tie goes to the
topic sorted first): each document gives K examples, ``ID#rank1`` ... ``ID#rankK``, each asking
for one topic and scored (by STAS) against that topic.

Where this departs from the paper: Passali & Tsoumakas took the topics of a document from their
topic model of the documents; ctrlkit has no such model and ranks the topics of its topic space
(the space STAS measures in, built with the ``tfidf`` vectorizer from the dataset's topic
documents or ``--topics``) by cosine similarity to the document instead.

Documents, references and other controls:

- Examples that share a document and every control but the topic ask for the same K topics, so
  they give one set of K examples (NEWTS has an example per topic of an article: both give one).
- A reference answers one request. A picked topic keeps the references of the examples of the
  data (of the split read, before ``limit``) with the same document, the same other controls and
  that gold topic, with their ``topic_*`` controls (NEWTS's ``topic_id``, ``topic_words``, ...);
  a picked topic that is no gold topic of the document has no reference, and its ``topic_*``
  controls, which describe the gold topic, are removed. Metrics that need references score only
  the examples that have one for their topic (``scored`` in results.json, ``n=`` in the table):
  they are never scored against another topic's summary.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Sequence

from .errors import ConfigurationError, OptionError
from .types import Example

ORACLE = "oracle"
PICKING_VECTORIZER = "tfidf"
"""The topic space that ranks a document's topics is built with this vectorizer."""
_TOP = re.compile(r"top([1-9][0-9]*)")


def topic_count(source: str) -> int:
    """How many topics ``source`` picks per document: 0 for ``oracle``, K for ``topK``; anything
    else is an OptionError."""
    if source == ORACLE:
        return 0
    match = _TOP.fullmatch(source) if isinstance(source, str) else None
    if match is None:
        raise OptionError(f"topic source must be 'oracle' or 'topK' with K a whole number of at least 1 "
                          f"(top1, top3), got {source!r}")
    return int(match.group(1))


def is_topic_control(name: str) -> bool:
    """``topic`` and the controls that describe it (``topic_id``, ``topic_words``, ...)."""
    return name == "topic" or name.startswith("topic_")


def pick_topics(examples: Sequence[Example], space, k: int, pool: Sequence[Example], source: str
                ) -> list[Example]:
    """For each document of ``examples`` (those sharing a document and their other controls count
    once), K examples requesting its K nearest topics in ``space``, with the references and topic
    controls of ``pool``'s examples whose gold topic it is (see the module docstring)."""
    if k > len(space.topics):
        raise ConfigurationError(f"topic source '{source}' asks for {k} topics per document, but the topic space "
                                 f"has {len(space.topics)}")
    firsts = {}
    for example in examples:
        firsts.setdefault(_request(example), example)
    requests = list(firsts.values())
    if not requests:
        return []
    similarities = space.similarities([example.document for example in requests])
    import numpy as np  # here: the command line reads ORACLE and topic_count at start-up

    ranked = np.argsort(-similarities, axis=1, kind="stable")[:, :k]
    gold = _gold(pool)
    picked = []
    for example, row, columns in zip(requests, similarities, ranked):
        answers = gold.get(_request(example), {})
        for rank, column in enumerate(columns, 1):
            topic = space.topics[column]
            golden = answers.get(topic, [])
            controls = {name: value for name, value in example.controls.items() if not is_topic_control(name)}
            if golden:
                controls.update((name, value) for name, value in golden[0].controls.items() if is_topic_control(name))
            controls["topic"] = topic
            references = list(dict.fromkeys(reference for answer in golden for reference in answer.references))
            pick = {"source": source, "rank": rank, "similarity": float(row[column]),
                    "gold_topics": sorted(answers), "reference": bool(references)}
            picked.append(Example(id=f"{example.id}#rank{rank}", document=example.document, references=references,
                                  controls=controls, meta={**example.meta, "topic_pick": pick}))
    return picked


def describe_picks(picked: Sequence[Example], k: int) -> dict:
    """What results.json records of the picks: documents, examples, how many picked topics are a
    gold topic of their document, and how many have a reference."""
    picks = [example.meta["topic_pick"] for example in picked]
    return {"per_document": k, "documents": len(picked) // k if k else 0, "examples": len(picked),
            "gold": sum(example.controls["topic"] in pick["gold_topics"] for example, pick in zip(picked, picks)),
            "with_reference": sum(pick["reference"] for pick in picks)}


def ranks(picked: Sequence[Example]) -> dict[int, list[int]]:
    """``{rank: positions of the examples requesting the topic of that rank}``."""
    positions: dict[int, list[int]] = defaultdict(list)
    for i, example in enumerate(picked):
        positions[example.meta["topic_pick"]["rank"]].append(i)
    return dict(sorted(positions.items()))


def _request(example: Example) -> tuple[str, str]:
    """What a topic is picked for: the document, and every control but the topic ones."""
    others = {name: value for name, value in example.controls.items() if not is_topic_control(name)}
    return example.document, json.dumps(others, sort_keys=True, default=str)


def _gold(pool: Sequence[Example]) -> dict:
    """``{request: {gold topic: [examples]}}`` over ``pool``."""
    gold: dict = defaultdict(lambda: defaultdict(list))
    for example in pool:
        topic = example.controls.get("topic")
        if isinstance(topic, str) and topic.strip():
            gold[_request(example)][topic].append(example)
    return gold
