"""Fitting a prompt to a model's input limit by cutting the end of its document, not its head.

A decoder-only model's prompt is the document with what a controller put around it: a prepended
control (``sports <sep> ...``), the prompt controller's instruction and requirements, a chat
template's system turn, and after it the cue to answer (``TL;DR:``, the assistant turn). Cutting
tokens from either end of a prompt that is too long loses one of them; cutting the document's
end keeps them all, so that the run still asks for what it asked for.

The document is found in the prompt as written (its last occurrence: a few-shot prompt shows
other documents first). Where it is not there (a controller that rewrote it) or cutting all of
it still leaves too many tokens, the prompt is kept whole and the tokenizer cuts it as before.
"""

from __future__ import annotations

from typing import Callable, Sequence

Count = Callable[[list[str]], list[int]]
"""The token count of each of a list of prompts, as the model's tokenizer makes them."""


def cut_documents(prompts: Sequence[str], documents: Sequence[str], lengths: Sequence[int], limit: int,
                  count: Count) -> list[str]:
    """``prompts`` with the end of each one's document (``documents``, same order) cut where its
    token count (``lengths``) is over ``limit``: as much of the document is kept as fits. A binary
    search over the document's characters, all prompts of the batch counted in one call a step;
    only a count that fits is ever kept, whether or not counts grow with the characters kept."""
    parts = {}  # index: (before the document, the document, after it)
    for index, (prompt, document, length) in enumerate(zip(prompts, documents, lengths)):
        found = _found(prompt, document) if length > limit else None
        if found is not None:
            start, text = found
            parts[index] = (prompt[:start], text, prompt[start + len(text):])
    empty = count([before + after for before, _, after in parts.values()]) if parts else []
    # kept[index]: characters known to fit; over[index]: characters known not to
    kept = {index: 0 for index, length in zip(parts, empty) if length <= limit}
    over = {index: len(parts[index][1]) for index in kept}
    while searching := [index for index in kept if over[index] - kept[index] > 1]:
        middles = [(kept[index] + over[index]) // 2 for index in searching]
        counts = count([_with(parts[index], middle) for index, middle in zip(searching, middles)])
        for index, middle, length in zip(searching, middles, counts):
            if length <= limit:
                kept[index] = middle
            else:
                over[index] = middle
    cut = list(prompts)
    for index, characters in kept.items():
        cut[index] = _with(parts[index], characters)
    return cut


def _found(prompt: str, document: str) -> tuple[int, str] | None:
    """Where the document starts in the prompt (its last occurrence) and the text found there: the
    document, or without its outer whitespace (a chat template may trim a message); None if neither is."""
    for text in dict.fromkeys((document, document.strip())):
        start = prompt.rfind(text) if text else -1
        if start >= 0:
            return start, text
    return None


def _with(parts: tuple[str, str, str], characters: int) -> str:
    before, document, after = parts
    return before + document[:characters] + after
