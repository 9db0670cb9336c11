"""Fast term tagging: each distinct word is lemmatized and matched once, not each token.

The rule is the tag controller's: a word (a run of ``\\w``) is tagged when its lowercased form,
or the lemma of that, is one of the topic's terms. Applying it token by token costs a lemmatizer
call and a term lookup per token. Here a text is reduced to its set of distinct words, each word
never seen before is classified once for every topic at the same time (through an index from
term to topics), and the words to tag are then found with ``str.find``; a test checks the output
against the token-by-token rule.
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache
from typing import Hashable, Iterable, Mapping

from ctrlkit import TAG
from ctrlkit.plugin_api import WORD, lemma

# In ASCII text a \w run is a run of [A-Za-z0-9_]: every other ASCII character becomes a space.
_NON_WORD_TO_SPACE = str.maketrans({chr(c): " " for c in range(128) if not re.fullmatch(r"\w", chr(c))})
_FORGET_AFTER = 1_000_000  # distinct words remembered before the memory is cleared and rebuilt


@lru_cache(maxsize=256)  # datasets pair one article with several topics, often one after another
def distinct_words(text: str) -> frozenset[str]:
    """The set of ``\\w+`` runs in ``text``, as ``set(WORD.findall(text))``, faster for ASCII."""
    if text.isascii():
        return frozenset(text.translate(_NON_WORD_TO_SPACE).split())
    return frozenset(WORD.findall(text))


def _is_word_character(character: str) -> bool:
    return character.isalnum() or character == "_"  # what \w matches in a str pattern


def wrap_words(text: str, words: Iterable[str]) -> str:
    """``text`` with every whole-word occurrence of ``words`` surrounded by the tag token."""
    spans = []
    find = text.find
    size = len(text)
    for word in words:
        start = find(word)
        while start >= 0:
            end = start + len(word)
            if not (start and _is_word_character(text[start - 1])) and not (end < size and _is_word_character(text[end])):
                spans.append((start, end))
            # No whole word starts inside a \w run, so the search may go on from its end.
            start = find(word, end)
    spans.sort()
    pieces = []
    last = 0
    for start, end in spans:
        pieces += (text[last:start], f"{TAG} {text[start:end]} {TAG}")
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


class TermTagger:
    """Tags texts for any of several term sets (one per topic), remembering each word's match."""

    def __init__(self, terms: Mapping[Hashable, Iterable[str]]):
        self._matching: dict[Hashable, set[str]] = {topic: set() for topic in terms}
        self._topics_of_term: dict[str, list[set[str]]] = defaultdict(list)
        for topic, topic_terms in terms.items():
            for term in set(topic_terms):
                self._topics_of_term[term].append(self._matching[topic])
        self._seen: set[str] = set()

    def __contains__(self, topic) -> bool:
        try:
            return topic in self._matching
        except TypeError:  # an unhashable topic (a list or object from a JSON file)
            return False

    def tag(self, text: str, topic: Hashable) -> str:
        """``text`` with its words that match ``topic``'s terms tagged (KeyError: unknown topic)."""
        matching = self._matching[topic]
        words = distinct_words(text)
        if len(self._seen) > _FORGET_AFTER:  # memory stays bounded on an endless stream of new words
            self._seen.clear()
            for remembered in self._matching.values():
                remembered.clear()
        self._learn(words - self._seen)
        hits = words & matching
        return wrap_words(text, hits) if hits else text

    def _learn(self, words: frozenset[str]) -> None:
        for word in words:
            lowered = word.lower()
            for key in {lowered, lemma(lowered)}:
                for matching in self._topics_of_term.get(key, ()):
                    matching.add(word)
        self._seen |= words
