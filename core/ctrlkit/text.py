"""Offline text utilities shared by components: sentences (pysbd), words, lemmas (simplemma)."""

from __future__ import annotations

import re
from functools import lru_cache

WORD = re.compile(r"\w+")

_segmenter = None

BLOCK_CHARS = 100_000
"""pysbd's time grows with the square of a text's length (400 KB in one paragraph: over a
minute), so a longer text is segmented in blocks of whole lines, at most this many characters
each. pysbd always cuts at a line break, but its choices still depend a little on the text
around; a text this long or shorter whose lines are all at most ``LINE_CHARS`` long (every NEWTS
article, every FD paper) is segmented whole, exactly as before blocks existed."""

LINE_CHARS = 20_000
"""A line (paragraph) longer than this is segmented in windows of ``WINDOW_CHARS``, cut where a
sentence most likely ends: pysbd is quadratic in a line's length above all. Lines up to this
length are left whole (one NEWTS article is a single line of 11,402 characters)."""

WINDOW_CHARS = 5_000
"""The longest window of a line over ``LINE_CHARS``: pysbd takes half the time per character
on windows of 5,000 characters as on windows of 20,000."""

MARKS_PER_BLOCK = 2_560
"""pysbd's time also grows with the square of the number of sentences in what it is given (16,000
characters of ``a\n``: 11 s in one block, so about seven minutes for 100,000), so a block holds at most this many
possible sentence ends (``_MARK``: a run of ``.!?``, or a line break), and a line with more is cut
in windows that hold no more. The most in any NEWTS or FD text in the shared data is 2,263 (a
58,265-character paper), so those are still segmented whole."""

_MARK = re.compile(r"[.!?]+|\n")
_LINE = re.compile(r"[^\n]*\n|[^\n]+")
_SAFE_CUT = re.compile(r"[.!?][\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")
"""A probable sentence end: punctuation, closing quotes, then whitespace before a capital letter
or a digit; a window cut there falls where pysbd would most likely cut too."""
_SPACE = re.compile(r"\s+")


@lru_cache(maxsize=4096)
def sentences(text: str) -> tuple[str, ...]:
    """Sentences of ``text``, stripped, empty ones dropped; together they hold all of its text.

    pysbd finds the boundaries, but its sentences can silently lose text (seen on arXiv
    abstracts), so only the start offsets it reports are used, as cut points in ``text``. A text
    over ``BLOCK_CHARS``, or with a line over ``LINE_CHARS``, is segmented block by block
    (``blocks``), each block start also a cut, so time grows linearly with its length.
    """
    cuts = sorted({start + cut for start, end in blocks(text) for cut in (0, *_cuts(text[start:end]))})
    pieces = (text[start:end].strip() for start, end in zip(cuts, cuts[1:] + [len(text)]))
    return tuple(piece for piece in pieces if piece)


def blocks(text: str, size: int = BLOCK_CHARS, line: int = LINE_CHARS, window: int = WINDOW_CHARS,
           marks: int = MARKS_PER_BLOCK) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of consecutive blocks that cover ``text``: whole lines, at most
    ``size`` characters and ``marks`` possible sentence ends a block, except that a line longer
    than ``line``, or with more marks, is cut in windows of at most ``window`` characters and
    ``marks`` marks (``_windows``)."""
    spans, start, end, held = [], 0, 0, 0
    for found in _LINE.finditer(text):
        count = len(_MARK.findall(text, found.start(), found.end()))
        if found.end() - found.start() > line or count > marks:
            if end > start:
                spans.append((start, end))
            spans.extend(_windows(text, found.start(), found.end(), window, marks))
            start = end = found.end()
            held = 0
            continue
        if found.end() - start > size or held + count > marks:
            spans.append((start, end))
            start, held = end, 0
        end = found.end()
        held += count
    if end > start or not spans:
        spans.append((start, end))
    return spans


def _windows(text: str, start: int, end: int, size: int, marks: int = MARKS_PER_BLOCK) -> list[tuple[int, int]]:
    """``text[start:end]`` (one long line) in windows of at most ``size`` characters and ``marks``
    possible sentence ends, each ending after the last probable sentence end in its second half,
    else after the last whitespace there, else at its limit."""
    spans = []
    while True:
        limit = min(start + size, end)
        for number, mark in enumerate(_MARK.finditer(text, start, limit)):
            if number == marks:  # the first mark past the budget: the window ends before it
                limit = max(mark.start(), start + 1)
                break
        if limit >= end:
            break
        cut = limit
        for pattern in (_SAFE_CUT, _SPACE):
            last = None
            for last in pattern.finditer(text, start + (limit - start) // 2, limit):
                pass
            if last is not None:
                cut = last.end()
                break
        spans.append((start, cut))
        start = cut
    return spans + [(start, end)]


def _cuts(text: str) -> set[int]:
    """Offsets in ``text`` where pysbd starts a sentence (0 and the end excluded)."""
    global _segmenter
    if _segmenter is None:
        import pysbd

        _segmenter = pysbd.Segmenter(language="en", clean=False, char_span=True)
    return {span.start for span in _segmenter.segment(text) if 0 < span.start < len(text)}


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
