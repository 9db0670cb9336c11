"""Fitting prompts to a model's input limit, for every backbone that counts tokens itself (the
transformers backbones, ``llamacpp``): a prompt over the limit loses the end of its document, and a
few-shot prompt its earliest demonstrations, before anything else (:mod:`.document_cut`).

:class:`PromptFitting` needs of its backbone :meth:`~PromptFitting.prompt` (the text the model
reads for an input) and :meth:`~PromptFitting.token_ids` (that text's tokens, cut at one end where
a limit is given). :class:`ChatPromptFitting` adds the prompts of a decoder-only chat model: its
chat template where it has one, a plain ``source + "\\nTL;DR:"`` otherwise; it needs
:meth:`~ChatPromptFitting.render_chat` and :attr:`~ChatPromptFitting.has_chat_template`.
"""

from __future__ import annotations

import itertools

from ..chat import flatten_messages
from .document_cut import (MARK, Parts, cut_documents, demonstrations, marked_messages, split_at_mark,
                           without_demonstrations)


class PromptFitting:
    """Prompts fitted to an input limit; counts what it cuts in the backbone's truncation counts."""

    def fit_to_limit(self, inputs, texts: list[str], special: list[bool],
                     limit: int) -> tuple[list[list[int]], list[int]]:
        """The token ids of each input's prompt (``texts``, :meth:`prompt`'s; with the tokenizer's
        special tokens where ``special`` says) within ``limit``, and the positions of the prompts
        over it that the tokenizer cut at its ``truncation_side``. A prompt over the limit loses the
        end of its document where :meth:`document_parts` finds it, and a few-shot prompt its earliest
        demonstrations too, as few as leave its document a fair share
        (:meth:`_with_fewer_demonstrations`); only where neither can be done is the tokenizer's cut
        (a few-shot prompt's, without its demonstrations). Counts ``tokenized``, ``truncated`` and
        ``truncated_shots`` (the caller reports them once for all its batches)."""

        def tokenize(indices, batch, cut):  # the texts of ``batch`` as the inputs at ``indices`` are tokenized
            return self.token_ids(batch, [special[index] for index in indices], cut)

        ids = tokenize(range(len(texts)), texts, None)
        lengths = [len(row) for row in ids]
        self.tokenized += len(lengths)
        self.truncated += sum(length > limit for length in lengths)
        self.truncated_to = limit
        over = [index for index, length in enumerate(lengths) if length > limit]
        if not over:
            return ids, []
        few_shot = [index for index in over if _shots(inputs[index])]
        parts = [self.document_parts(inputs[index]) if index in over and index not in few_shot else None
                 for index in range(len(inputs))]
        counted = lambda indices, batch: [len(row) for row in tokenize(indices, batch, None)]  # noqa: E731
        fitted, _ = cut_documents(texts, parts, lengths, limit, counted)
        left_whole = [index for index in over if index not in few_shot and fitted[index] == texts[index]]
        for index, (text, dropped, fits) in self._with_fewer_demonstrations(inputs, few_shot, lengths, limit,
                                                                            counted).items():
            fitted[index] = text
            if dropped:
                self.truncated_shots += 1
            if not fits:
                left_whole.append(index)
        for index, row in zip(over, tokenize(over, [fitted[index] for index in over], limit)):
            ids[index] = row
        return ids, left_whole

    def _with_fewer_demonstrations(self, inputs, indices: list[int], lengths: list[int], limit: int,
                                   count) -> dict[int, tuple[str, int, bool]]:
        """The few-shot prompts of the ``inputs`` at ``indices`` (their token counts in ``lengths``),
        each over ``limit``, fitted: the end of the document cut, and the earliest demonstrations
        dropped, as few as leave the document at least half the limit (or all of its own tokens,
        where it has fewer); where none do, all of them. A prompt whose document is in none of its
        messages is shown as few as let it fit whole. One that nothing fits is shown none, for the
        tokenizer to cut. ``{index: (prompt, how many were dropped, whether it fits)}``;
        ``count(indices, texts)``: the token counts of texts, tokenized as the inputs at ``indices`` are."""
        found: dict[int, tuple[str, int, bool]] = {}
        pending = indices
        for dropped in itertools.count():
            pending = [index for index in pending if dropped <= _shots(inputs[index])]
            if not pending:
                break
            shown = [inputs[index].replace(messages=without_demonstrations(inputs[index].messages, dropped))
                     for index in pending]
            texts = [self.prompt(model_input) for model_input in shown]
            parts = [self.document_parts(model_input) for model_input in shown]
            whole = [lengths[index] for index in pending] if dropped == 0 else count(pending, texts)
            cuttable = [at for at, split in enumerate(parts) if split is not None and whole[at] > limit]
            empty = dict(zip(cuttable, count([pending[at] for at in cuttable],
                                             ["".join(parts[at][0]) for at in cuttable]) if cuttable else []))
            share = {at: min(whole[at] - empty[at], limit // 2) for at in cuttable}
            # a search only where the document can have its share, or no demonstration is left to drop
            searched = [at for at in cuttable if empty[at] <= limit and (
                limit - empty[at] >= share[at] or dropped == _shots(inputs[pending[at]]))]
            cut, cut_counts = cut_documents([texts[at] for at in searched], [parts[at] for at in searched],
                                            [whole[at] for at in searched], limit,
                                            lambda positions, batch: count([pending[searched[q]] for q in positions],
                                                                           batch))
            kept = dict(zip(searched, zip(cut, cut_counts)))  # {at: (prompt, its count)}
            still = []
            for at, index in enumerate(pending):
                if whole[at] <= limit:
                    found[index] = (texts[at], dropped, True)
                elif at in kept:
                    found[index] = (kept[at][0], dropped, True)
                    if kept[at][1] - empty[at] < share[at]:
                        still.append(index)
                else:
                    still.append(index)
            pending = still
        for index in indices:
            if index not in found:
                shots = _shots(inputs[index])
                shown = inputs[index].replace(messages=without_demonstrations(inputs[index].messages, shots))
                found[index] = (self.prompt(shown), shots, False)
        return found

    def token_ids(self, texts: list[str], special: list[bool], limit: int | None = None) -> list[list[int]]:
        """The token ids of each text, with the tokenizer's special tokens where ``special`` says,
        cut at one end (the backbone's) to ``limit`` where given."""
        raise NotImplementedError

    def prompt(self, model_input) -> str:
        """The text the model reads for one input."""
        raise NotImplementedError

    def document_parts(self, model_input) -> Parts | None:
        """The input's prompt split around its document, its ``source`` (:mod:`.document_cut`): the
        prompt rendered with a mark where the document is in its messages; None where no message
        holds it."""
        if not model_input.messages:
            return None
        messages = marked_messages(model_input.messages, model_input.source)
        if messages is None:
            return None
        return split_at_mark(self.prompt(model_input.replace(messages=messages)), model_input.source)


class ChatPromptFitting(PromptFitting):
    """The prompts of a decoder-only model: messages through its chat template where it has one,
    flattened to ``Role: content`` lines where it has none (a base model, which then counts as one
    that flattens messages); a plain source becomes ``source + "\\nTL;DR:"``. A prompt that cannot
    be cut in its document keeps its last tokens, where the cue to answer is."""

    @property
    def has_chat_template(self) -> bool:
        raise NotImplementedError

    def render_chat(self, messages) -> str:
        """``messages`` through the model's chat template, with the cue for the assistant's turn."""
        raise NotImplementedError

    @property
    def flattens_messages(self) -> bool:
        """True for a base model: it has no chat template (loads the model to know)."""
        return not self.has_chat_template

    def prompt(self, model_input) -> str:
        if model_input.messages:
            if self.has_chat_template:
                return self.render_chat(list(model_input.messages))
            return flatten_messages(model_input.messages)
        return f"{model_input.source}\nTL;DR:"

    def prompts(self, inputs) -> tuple[list[str], list[bool]]:
        """The prompt of each input, and whether the tokenizer adds its special tokens to it: not
        where a chat template wrote its own (BOS)."""
        templated = self.has_chat_template
        return ([self.prompt(model_input) for model_input in inputs],
                [not (templated and model_input.messages) for model_input in inputs])

    def fitted_ids(self, inputs, limit: int) -> list[list[int]]:
        """The token ids of each input's prompt, within ``limit``: a prompt over it has its document
        cut to fit, or where that cannot be, keeps its last ``limit`` tokens (counted in ``truncated``,
        and the latter in ``truncated_head`` too)."""
        ids, whole = self.fit_to_limit(inputs, *self.prompts(inputs), limit)
        self.truncated_head += len(whole)
        return ids

    def document_parts(self, model_input):
        """A plain prompt (``source + "\\nTL;DR:"``) split around its source; a chat prompt as
        every backbone here splits it."""
        source = model_input.source
        if model_input.messages:
            return super().document_parts(model_input)
        if not source.strip() or MARK in source:
            return None
        return split_at_mark(self.prompt(model_input.replace(source=MARK)), source)


def _shots(model_input) -> int:
    """How many demonstrations the input's prompt shows before the message holding its document."""
    return demonstrations(model_input.messages or (), model_input.source)
