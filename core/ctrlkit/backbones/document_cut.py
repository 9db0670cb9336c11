"""Fitting a prompt to a model's input limit by cutting the end of its document, not its head.

A decoder-only model's prompt is the document with what a controller put around it: a prepended
control (``sports <sep> ...``), the prompt controller's instruction and requirements, a chat
template's system turn, and after it the cue to answer (``TL;DR:``, the assistant turn). Cutting
tokens from either end of a prompt that is too long loses one of them; cutting the document's
end keeps them all, so that the run still asks for what it asked for.

The backbone says where the document is: it renders the prompt with a mark in the document's
place (:func:`marked_messages`, :data:`MARK`) and splits it there. A few-shot prompt whose
demonstrations leave too little room for its document is shown fewer of them, the earliest
dropped (:func:`demonstrations`, :func:`without_demonstrations`). Where none of this can be done
(the document is in no message, as a controller that rewrote it leaves it, or the rest of the
prompt is over the limit on its own), the prompt is kept whole, and the tokenizer cuts it.
"""

from __future__ import annotations

import itertools
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
                  count: Count) -> tuple[list[str], list[int]]:
    """``prompts`` with the end of each one's document cut where its token count (``lengths``)
    is over ``limit`` and its ``parts`` are known, and each one's count as it now is (the search
    counted every text it kept): as much of the document is kept as fits. A search
    over the document's characters, all prompts of the batch counted in one call a step: its first
    steps guess from the counts so far (a count grows about in step with the characters), the
    rest halve what is left; only a count that fits is ever kept, whether or not counts grow with
    the characters kept."""
    over_limit = {index: split for index, (split, length) in enumerate(zip(parts, lengths))
                  if split is not None and length > limit}
    empty = count(list(over_limit), ["".join(pieces) for pieces, _ in over_limit.values()]) if over_limit else []
    # kept[index]: characters known to fit, over[index]: characters known not to, each with its count
    kept = {index: (0, length) for index, length in zip(over_limit, empty) if length <= limit}
    over = {index: (len(over_limit[index][1]), lengths[index]) for index in kept}
    for step in itertools.count():
        searching = [index for index in kept if over[index][0] - kept[index][0] > 1]
        if not searching:
            break
        guesses = [_guess(kept[index], over[index], limit, step < GUESSED_STEPS) for index in searching]
        counts = count(searching, [_with(over_limit[index], guess) for index, guess in zip(searching, guesses)])
        for index, guess, length in zip(searching, guesses, counts):
            if length <= limit:
                kept[index] = (guess, length)
            else:
                over[index] = (guess, length)
    cut, counts = list(prompts), list(lengths)
    for index, (characters, length) in kept.items():
        cut[index], counts[index] = _with(over_limit[index], characters), length
    return cut, counts


GUESSED_STEPS = 4
"""How many steps of :func:`cut_documents` guess where the limit falls before halving takes over
(it bounds the steps where counts do not grow in step with the characters)."""


def _guess(kept: tuple[int, int], over: tuple[int, int], limit: int, interpolate: bool) -> int:
    """The next number of characters to count, strictly between ``kept`` and ``over`` (each
    ``(characters, count)``): where the limit falls on the line between them, or halfway."""
    (low, low_count), (high, high_count) = kept, over
    if interpolate and high_count > low_count:
        return min(max(low + (high - low) * (limit - low_count) // (high_count - low_count), low + 1), high - 1)
    return (low + high) // 2


def _with(parts: Parts, characters: int) -> str:
    pieces, document = parts
    return document[:characters].join(pieces)


def demonstrations(messages: Sequence[dict], document: str = "") -> int:
    """How many few-shot demonstrations ``messages`` give as turns: the user and assistant pairs
    after an optional system message and before the last message, the task's (a user's), and
    before the last message holding ``document`` where one does (a conversation that gives its
    document in an earlier turn has none after it). Any such conversation counts so, whoever wrote
    it: its earlier turns are what can go."""
    roles = [message["role"].strip().lower() for message in messages]
    start = 1 if roles[:1] == ["system"] else 0
    turns = roles[start:-1]
    if roles[-1:] != ["user"] or len(turns) % 2 or turns != ["user", "assistant"] * (len(turns) // 2):
        return 0
    holding = [at for at, message in enumerate(messages) if document.strip() and document in message["content"]]
    return max(0, min(len(turns), holding[-1] - start)) // 2 if holding else len(turns) // 2


def without_demonstrations(messages: Sequence[dict], count: int) -> tuple[dict, ...]:
    """``messages`` without their first ``count`` demonstrations (see :func:`demonstrations`)."""
    start = 1 if messages[0]["role"].strip().lower() == "system" else 0
    return (*messages[:start], *messages[start + 2 * count:])
