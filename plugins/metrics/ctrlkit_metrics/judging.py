"""Asking an LLM judge: cached, batched, parsed, retried, and failures recorded, never scored.

A judge is any backbone with the ``messages`` capability (usually ``openai``). Answers are
cached on disk (``ctrlkit.cache``) under the judge's identity and the exact messages, so a rerun
asks nothing twice; only answers that parse are cached, so a bad answer is never replayed.
An answer that does not parse is asked again, bypassing the cache, up to ``retries`` times;
then the item is a failure that carries the raw answer and the reason, for the metric to
report as None and count, rather than to guess a score from.
"""

from __future__ import annotations

import itertools
import json
import logging
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ctrlkit import Backbone, ConfigurationError, CtrlkitError, ModelInput, Option
from ctrlkit.plugin_api import Cache, cache_key
from ctrlkit.plugin_api import Intake

Messages = tuple[dict[str, str], ...]
NAMESPACE = "judge"
RETRIES = Option("retries", int, 2, "times an unparseable judge answer is asked again before it counts as failed",
                 minimum=0)
_SHOWN_CHARS = 80
logger = logging.getLogger("ctrlkit")
MAX_BRACES = 64
"""The most ``{`` of an answer from which a JSON object is looked for, after the whole answer and
its fenced blocks."""
# the spaces around an optional full stop are one run or two separated by the stop: two adjacent
# \s* were quadratic on a number followed by many spaces and then anything else
_BARE_NUMBER = re.compile(r"\s*(?:[A-Za-z][A-Za-z ]{0,19}:\s*)?(\d+)\s*(?:\.\s*)?")


class UnparseableAnswer(ValueError):
    """A judge answer that does not say what was asked; the message is the reason."""


@dataclass
class Verdict:
    """One parsed judge answer, or a failure (``value`` None, ``reason`` set)."""

    value: Any
    answer: str
    reason: str | None = None
    attempts: int = 1

    @property
    def failed(self) -> bool:
        return self.reason is not None

    def failure(self) -> dict:
        """What samples.jsonl keeps of a failure: enough to see why without rerunning."""
        return {"reason": self.reason, "answer": self.answer, "attempts": self.attempts}


def require_messages(metric: str, judge: Backbone) -> Backbone:
    """Refuse, before any work, a judge that cannot take chat messages (prompts are messages)."""
    if "messages" not in judge.capabilities:
        raise ConfigurationError(f"metric '{metric}' needs a judge that takes chat messages; backbone "
                                 f"'{judge.name}' lacks capability messages (use e.g. --judge openai:MODEL)")
    return judge


def ask(judge: Backbone, prompts: Sequence[Messages], *, refresh: bool = False,
        keep: Callable[[int, str], bool] = lambda index, answer: True) -> list[str]:
    """The judge's answer to each prompt. Cached answers are reused unless ``refresh``; the other
    distinct prompts go to the judge in one batched ``generate`` call, and the answers that
    ``keep(index of the prompt, answer)`` accepts are cached."""
    cache = Cache(NAMESPACE)
    identity = judge.identity()  # secrets and transport options are not part of it
    keys = [{"judge": identity, "messages": list(prompt)} for prompt in prompts]
    answers = {} if refresh else {i: cache.get(key) for i, key in enumerate(keys)}
    answers = {i: answer for i, answer in answers.items() if answer is not None}
    first: dict[str, int] = {}  # each distinct unanswered prompt (by hash) -> the first index asking it
    for i, key in enumerate(keys):
        if i not in answers:
            first.setdefault(cache_key(key), i)
    # In chunks, each cached when done, so a judge failing midway (a server down) loses little.
    chunk = 4 * max(1, int(judge.options.get("concurrency", 4) or 4))
    todo = list(first.items())
    fresh = {}
    received = Intake(f"judge '{judge.name}'")
    for start in range(0, len(todo), chunk):
        part = todo[start : start + chunk]
        replies = judge.generate([ModelInput(source="", messages=tuple(prompts[i])) for _, i in part])
        if len(replies) != len(part):
            raise CtrlkitError(f"judge '{judge.name}' returned {len(replies)} answers for {len(part)} prompts")
        replies = [received.text(reply, "answers") for reply in replies]  # a lone surrogate: U+FFFD
        for (hashed, i), reply in zip(part, replies):
            fresh[hashed] = reply
            if keep(i, reply):
                cache.put(keys[i], reply)
    received.report()
    for i, key in enumerate(keys):
        if i not in answers:
            answers[i] = fresh[cache_key(key)]
    return [answers[i] for i in range(len(prompts))]


def ask_parsed(judge: Backbone, prompts: Sequence[Messages], parsers: Sequence[Callable[[str], Any]],
               retries: int) -> list[Verdict]:
    """``parsers[i]`` applied to the answer to ``prompts[i]`` (one parser per prompt, since what a
    valid answer holds can depend on the prompt); a parser raises UnparseableAnswer. A prompt
    whose answer does not parse is asked again, fresh, up to ``retries`` times, all such
    prompts of a round in one batch."""

    def attempt(i: int, answer: str) -> Verdict:
        try:
            return Verdict(parsers[i](answer), answer)
        except UnparseableAnswer as exc:
            return Verdict(None, answer, str(exc))

    answers = ask(judge, prompts, keep=lambda i, answer: not attempt(i, answer).failed)
    verdicts = [attempt(i, answer) for i, answer in enumerate(answers)]
    for round_ in range(1, retries + 1):
        pending = [i for i, verdict in enumerate(verdicts) if verdict.failed]
        if not pending:
            break
        answers = ask(judge, [prompts[i] for i in pending], refresh=True,
                      keep=lambda j, answer: not attempt(pending[j], answer).failed)
        for i, answer in zip(pending, answers):
            verdicts[i] = attempt(i, answer)
            verdicts[i].attempts = round_ + 1
    return verdicts


def report_failures(metric: str, failures: Sequence[dict], total: int) -> None:
    """One warning line when the judge failed on some of ``total`` examples (``failures`` are the
    ``failed`` details), naming the first reason and answer; louder when it failed on all of them,
    since the metric is then undefined while the run itself succeeds."""
    if not failures:
        return
    first = failures[0]
    answer = " ".join(str(first.get("answer", "")).split())
    answer = answer if len(answer) <= _SHOWN_CHARS else answer[: _SHOWN_CHARS - 3] + "..."
    first_text = f"first: {first['reason']}, answer {json.dumps(answer, ensure_ascii=False)}"
    if len(failures) == total:
        logger.warning("ctrlkit: WARNING: metric '%s': the judge failed on every one of the %d examples (%s); the "
                       "metric is undefined. Check the judge (--judge) and the answers under details in "
                       "samples.jsonl", metric, total, first_text)
    else:
        logger.warning("ctrlkit: metric '%s': the judge failed on %d of %d examples (%s); they are left out of "
                       "the value and counted in '%s.failed'", metric, len(failures), total, first_text, metric)


def json_object(answer: str) -> dict:
    """The JSON object an answer holds: the whole answer, a fenced ```json block, or the first
    ``{...}`` inside surrounding prose (models often explain before or after) that starts at one of
    its first ``MAX_BRACES`` braces."""
    candidates = [answer.strip(), *(block.strip() for block in fenced_blocks(answer))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (ValueError, RecursionError):  # RecursionError: [[[[...]]]] deeper than json parses
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    # only the first MAX_BRACES: each failed try costs time in the answer's length (the error's
    # line number is counted from its start), so trying every brace of a hostile answer was quadratic
    for match in itertools.islice(re.finditer(r"\{", answer), MAX_BRACES):
        try:
            value, _ = decoder.raw_decode(answer, match.start())
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    raise UnparseableAnswer("no JSON object in the answer")


def fenced_blocks(answer: str) -> list[str]:
    """The body of each block between a pair of ``` fences, less a ``json`` tag after the opening
    one; a fence left open holds no block. One split, so linear: a pattern with a lazy body was
    quadratic on an opening fence that never closes."""
    parts = answer.split("```")
    return [body[4:] if body[:4].lower() == "json" else body for body in parts[1:-1:2]]


def integer(value: Any, what: str, low: int, high: int) -> int:
    """``value`` as an int in ``[low, high]`` (a digit string such as "3" is accepted too)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UnparseableAnswer(f"{what} must be an integer from {low} to {high}, got {json.dumps(value)}")
    return value


def single_rating(answer: str, what: str, high: int) -> int:
    """The one rating an answer gives, an integer from 1 to ``high``: ``{"rating": N}`` (found as
    ``json_object`` finds it), or the number alone, perhaps after a short label and a colon
    (``3``, ``Rating: 3``), as a prompt that asks for just the number gets it."""
    bare = _BARE_NUMBER.fullmatch(answer)
    if bare:
        return integer(int(bare.group(1)), what, 1, high)
    try:
        found = json_object(answer)
    except UnparseableAnswer:
        raise UnparseableAnswer(f'no {what} in the answer: expected {{"rating": N}} or the number alone') from None
    if "rating" not in found:
        raise UnparseableAnswer(f'{what} is missing: expected {{"rating": N}}')
    return integer(found["rating"], what, 1, high)


def messages(system: str, user: str) -> Messages:
    return ({"role": "system", "content": system}, {"role": "user", "content": user})
