"""Offline text utilities shared by components: sentences (pysbd), words, lemmas (simplemma)."""

from __future__ import annotations

import re
from functools import lru_cache

WORD = re.compile(r"\w+")

_segmenter = None


@lru_cache(maxsize=4096)
def sentences(text: str) -> tuple[str, ...]:
    """Sentences of ``text``, stripped, empty ones dropped."""
    global _segmenter
    if _segmenter is None:
        import pysbd

        _segmenter = pysbd.Segmenter(language="en", clean=False)
    return tuple(s.strip() for s in _segmenter.segment(text) if s.strip())


@lru_cache(maxsize=500_000)
def lemma(word: str) -> str:
    """Dictionary lemma of one word, lowercased (context-free: ``businesses`` -> ``business``)."""
    import simplemma

    return simplemma.lemmatize(word.lower(), lang="en").lower()


def word_count(text: str) -> int:
    return len(text.split())
