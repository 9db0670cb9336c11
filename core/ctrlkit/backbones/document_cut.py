"""Fitting a prompt to a model's input limit by cutting the end of its document, not its head.

A decoder-only model's prompt is the document with what a controller put around it: a prepended
control (``sports <sep> ...``), the prompt controller's instruction and requirements, a chat
template's system turn, and after it the cue to answer (``TL;DR:``, the assistant turn). Cutting
tokens from either end of a prompt that is too long loses one of them; cutting the document's
end keeps them all, so that the run still asks for what it asked for.

The backbone says where the document is: it renders the prompt with a mark in the document's
place (:func:`marked_messages`, :data:`MARK`) and splits it there. Where it cannot (the document
is in no message, as a controller that rewrote it leaves it) or cutting all of it still leaves
too many tokens, the prompt is kept whole, and the tokenizer cuts it.
"""

from __future__ import annotations

from typing import Callable, Sequence

MARK = "\ue000"
"""A private-use character standing for the document while the prompt is rendered."""

Count = Callable[[list[int], list[str]], list[int]]
"""``count(indices, texts)``: the token count of each text, tokenized as the prompt at its index
is (a tokenizer may add its special tokens to one prompt of a batch and not to another)."""

Parts = tuple[tuple[str, ...], str]
"""A prompt as the text around its document (where a template shows the message twice, the
document is in it twice), and the document: the prompt is the pieces joined by the document."""


def marked_messages(messages: Sequence[dict], document: str) -> tuple[dict, ...] | None:
    """``messages`` with the document's last occurrence (in the last message holding it: a
    few-shot prompt shows other documents first) replaced by :data:`MARK`; None where no message
    holds it, or the mark is already in one."""
    if not document.strip() or any(MARK in message["content"] for message in messages):
        return None
    for index in range(len(messages) - 1, -1, -1):
        content = messages[index]["content"]
        start = content.rfind(document)
        if start >= 0:
            marked = {**messages[index], "content": content[:start] + MARK + content[start + len(document):]}
            return (*messages[:index], marked, *messages[index + 1:])
    return None


def split_at_mark(rendered: str, document: str) -> Parts | None:
    """The prompt rendered with :data:`MARK` for ``document``, as :data:`Parts`; None where the
    template left the mark out."""
    pieces = tuple(rendered.split(MARK))
    return (pieces, document) if len(pieces) > 1 else None


def cut_documents(prompts: Sequence[str], parts: Sequence[Parts | None], lengths: Sequence[int], limit: int,
                  count: Count) -> list[str]:
    """``prompts`` with the end of each one's document cut where its token count (``lengths``)
    is over ``limit`` and its ``parts`` are known: as much of the document is kept as fits. A binary
    search over the document's characters, all prompts of the batch counted in one call a step;
    only a count that fits is ever kept, whether or not counts grow with the characters kept."""
    over_limit = {index: split for index, (split, length) in enumerate(zip(parts, lengths))
                  if split is not None and length > limit}
    empty = count(list(over_limit), ["".join(pieces) for pieces, _ in over_limit.values()]) if over_limit else []
    # kept[index]: characters known to fit; over[index]: characters known not to
    kept = {index: 0 for index, length in zip(over_limit, empty) if length <= limit}
    over = {index: len(over_limit[index][1]) for index in kept}
    while searching := [index for index in kept if over[index] - kept[index] > 1]:
        middles = [(kept[index] + over[index]) // 2 for index in searching]
        counts = count(searching, [_with(over_limit[index], middle) for index, middle in zip(searching, middles)])
        for index, middle, length in zip(searching, middles, counts):
            if length <= limit:
                kept[index] = middle
            else:
                over[index] = middle
    cut = list(prompts)
    for index, characters in kept.items():
        cut[index] = _with(over_limit[index], characters)
    return cut


def _with(parts: Parts, characters: int) -> str:
    pieces, document = parts
    return document[:characters].join(pieces)
