"""Scores gathered a chunk of examples at a time (``ctrlkit evaluate`` of a large file): each
chunk's per-example values are written out with its samples, and only the parts the corpus values
and intervals are computed from are kept, as float arrays.

A metric may be scored in chunks when it says its check and scores of an example do not depend on
the other examples (:attr:`ctrlkit.Metric.scores_each_example_alone`). Its corpus values over all
the chunks are then what its ``aggregate`` recomputes from the kept parts (the contract every
metric keeps: ``aggregate(parts, ones((1, N)))`` gives what ``compute`` gave), and a count
(``n_...``, ``failed``) is the sum of the chunks' counts."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..bootstrap import AggregateError, aggregated, as_parts
from ..errors import CtrlkitError
from ..metric_values import is_count, number
from .scores import Scores

CHUNK_EXAMPLES = 10_000
"""Examples scored (and held) at once when every metric may be scored in chunks."""


def chunk_size(metrics: Sequence, total: int) -> int:
    """How many examples to score at once: :data:`CHUNK_EXAMPLES`, or all of them when a metric
    needs to see every example together."""
    if all(getattr(metric, "scores_each_example_alone", False) for metric in metrics):
        return CHUNK_EXAMPLES
    return max(total, 1)


class ScoredChunks:
    """Adds up the :class:`Scores` of consecutive chunks (``add``) into the Scores of the whole
    (``total``), which holds the corpus values, counts and parts, not the per-example values."""

    def __init__(self, metrics: Sequence, several: bool = True):
        self.metrics = list(metrics)
        self.by_name = {metric.name: metric for metric in self.metrics}
        self.several = several  # more than one chunk: each chunk's corpus values are checked
        self.chunks = 0
        self.corpus: dict[str, list[dict]] = {metric.name: [] for metric in self.metrics}
        self.scored: dict[str, int] = {metric.name: 0 for metric in self.metrics}
        self.positions: dict[str, list[np.ndarray]] = {metric.name: [] for metric in self.metrics}
        self.parts: dict[str, dict[str, list[np.ndarray]]] = {metric.name: {} for metric in self.metrics}

    def add(self, start: int, scores: Scores) -> None:
        """The scores of the chunk whose first example is example ``start`` of the whole."""
        self.chunks += 1
        for name in self.corpus:
            self.scored[name] += scores.scored.get(name, 0)
            if name not in scores.parts:
                continue
            keep, parts = scores.parts[name]
            if self.parts[name] and set(parts) != set(self.parts[name]):
                raise CtrlkitError(f"metric '{name}' gave the parts {', '.join(sorted(parts))} for one chunk of "
                                   f"examples and {', '.join(sorted(self.parts[name]))} for another; it should not "
                                   "declare scores_each_example_alone")
            if self.several:
                _check_chunk(self.by_name[name], scores.corpus[name], parts, len(keep))
            self.corpus[name].append(scores.corpus[name])
            self.positions[name].append(start + np.asarray(keep, dtype=np.int64))
            for part, values in as_parts(parts).items():
                self.parts[name].setdefault(part, []).append(values)

    def total(self) -> Scores:
        corpus, parts = {}, {}
        for metric in self.metrics:
            name = metric.name
            if not self.corpus[name]:
                corpus[name] = {}
                continue
            joined = {part: np.concatenate(values) for part, values in self.parts[name].items()}
            parts[name] = (np.concatenate(self.positions[name]), joined)
            corpus[name] = (self.corpus[name][0] if len(self.corpus[name]) == 1
                            else _gathered(metric, self.corpus[name], joined))
        return Scores(corpus, [], [], dict(self.scored), parts, [])


def _recomputed(metric, parts: dict[str, np.ndarray], n: int) -> dict[str, np.ndarray]:
    """``aggregate`` of all ``n`` examples' parts; its failure is one line, as the values cannot be
    gathered without it."""
    try:
        return aggregated(metric, parts, np.ones((1, n)))
    except AggregateError as exc:
        raise CtrlkitError(f"{exc}; its corpus values over the chunks of a large evaluation cannot be computed "
                           "(score it apart, or fix its aggregate)") from exc


def _check_chunk(metric, corpus: dict, parts: dict, n: int) -> None:
    """Refuse, in one line, a chunk whose corpus values are not what the metric's ``aggregate``
    recomputes from the chunk's parts: gathered over the chunks, they would silently differ from
    the values of the examples scored together."""
    found = _recomputed(metric, as_parts(parts), n)
    for value, given in corpus.items():
        if value in found and not is_count(value):
            again = number(float(found[value][0]))
            if (given is None) != (again is None) or (given is not None and not np.isclose(given, again, rtol=1e-9,
                                                                                             atol=1e-12)):
                raise CtrlkitError(f"metric '{metric.name}': its corpus value '{value}' is {given} on a chunk of "
                                   f"{n} examples, but its aggregate gives {again} from the same parts, so it cannot be "
                                   "gathered over chunks; it should not declare scores_each_example_alone")


def _gathered(metric, chunks: list[dict], parts: dict[str, np.ndarray]) -> dict:
    """The corpus values of ``metric`` over every chunk: recomputed by its ``aggregate`` from all the
    parts, and counts summed; any other value is one error, as the metric broke its contract."""
    found = _recomputed(metric, parts, len(next(iter(parts.values()), ())))
    corpus = {}
    for value in dict.fromkeys(name for chunk in chunks for name in chunk):
        if value in found:
            corpus[value] = number(float(found[value][0]), is_count(value))
        elif is_count(value):
            counts = [chunk.get(value) for chunk in chunks if chunk.get(value) is not None]
            corpus[value] = number(sum(counts), True) if counts else None
        else:
            raise CtrlkitError(f"metric '{metric.name}': its corpus value '{value}' is neither recomputed by its "
                               "aggregate nor a count, so it cannot be gathered over the chunks of a large "
                               "evaluation; it should not declare scores_each_example_alone")
    return corpus
