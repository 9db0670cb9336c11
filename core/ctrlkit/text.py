"""Offline text utilities shared by components: sentences (pysbd), words, lemmas (simplemma)."""

from __future__ import annotations

import re
from functools import lru_cache

WORD = re.compile(r"\w+")

_segmenter = None


@lru_cache(maxsize=4096)
def sentences(text: str) -> tuple[str, ...]:
    """Sentences of ``text``, stripped, empty ones dropped; together they hold all of its text.

    pysbd finds the boundaries, but its sentences can silently lose text (seen on arXiv
    abstracts), so only the start offsets it reports are used, as cut points in ``text``.
    """
    global _segmenter
    if _segmenter is None:
        import pysbd

        _segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
    cuts = sorted({0, *(span.start for span in _segmenter.segment(text) if 0 < span.start < len(text))})
    pieces = (text[start:end].strip() for start, end in zip(cuts, cuts[1:] + [len(text)]))
    return tuple(piece for piece in pieces if piece)


_lemmatizer = None


@lru_cache(maxsize=500_000)
def lemma(word: str) -> str:
    """Dictionary lemma of one word, lowercased (context-free: ``businesses`` -> ``business``).

    simplemma's own memo is switched off: this cache is the one, and ``lemma.cache_clear()``
    empties it all."""
    global _lemmatizer
    if _lemmatizer is None:
        import simplemma

        _lemmatizer = simplemma.Lemmatizer(cache_max_size=0)
    return _lemmatizer.lemmatize(word.lower(), lang="en").lower()


def word_count(text: str) -> int:
    return len(text.split())
