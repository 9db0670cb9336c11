"""The one warning line a run owes for the inputs a backbone (or a judge) cut to its input limit."""

from __future__ import annotations

import logging
from contextlib import contextmanager

from ..components import TRUNCATION_COUNTS

logger = logging.getLogger("ctrlkit")


@contextmanager
def truncation_reported(backbone, during: str, judge: bool = False):
    """One warning line for the inputs ``backbone`` cut to its limit inside the block, however
    many batches it took: ``backbone 'hf' (controller 'tag'): 8 of 8 inputs truncated to 1024 tokens``,
    saying how many of them lost their prompt's head or what follows their document
    (:attr:`ctrlkit.Backbone.truncated_head`, :attr:`ctrlkit.Backbone.truncated_tail`); for a
    ``judge``, whose prompts hold no document, only which end they lost."""
    before = {name: getattr(backbone, name) for name in TRUNCATION_COUNTS}
    yield
    added = {name: getattr(backbone, name) - before[name] for name in TRUNCATION_COUNTS}
    if not added["truncated"]:
        return
    hint = f"--set {backbone.name}.max_input_tokens=N sets the limit"
    if judge:
        ends = [end for end, name in (("from the left", "truncated_head"), ("at their end", "truncated_tail"))
                if added[name]]
        detail = (f", {' and '.join(ends)} (a judge's prompt holds no document to cut; a prompt asked again is "
                  "counted again)" if ends else "")
        hint += ", for a generating backbone of that name too"
    else:
        why = "(the document is in none of their messages, or the rest of the prompt is over the limit)"
        detail = "".join(f", {added[name]} of them {what} {why}" for name, what in (
            ("truncated_head", "from the left: their prompts lost the head, where a control or instruction is "
                               "written"),
            ("truncated_tail", "prompts cut at their end: they lost the cue to answer, and some of them their "
                               "document too")) if added[name])
        if added["truncated_shots"]:
            detail += (f", {added['truncated_shots']} of them few-shot prompts shown fewer demonstrations (the "
                       "earliest dropped, to leave their document more room)")
    logger.warning("ctrlkit: backbone '%s' (%s): %d of %d inputs truncated to %d tokens%s (%s)", backbone.name,
                   during, added["truncated"], added["tokenized"], backbone.truncated_to, detail, hint)
