"""Bootstrap intervals and paired tests of corpus values, for any metric.

A corpus value is recomputed on each resample from the examples' per-example parts
(:meth:`ctrlkit.Metric.aggregate`), so a correlation or an F1 gets an interval as a mean does.
A resample is a row of weights over the examples: how many times each was drawn. Examples that
share a document (a group, :func:`groups_of`) are drawn together (a cluster bootstrap), since
they are not independent. All resamples go to ``aggregate`` at once (in chunks of rows when the
weights would take much memory), so there is no Python loop over resamples.

Without groups (each example its own), a resample draws the same indices as
``scipy.stats.bootstrap`` given ``np.random.default_rng(seed)`` (when the weights fit in one
chunk), and the interval is its ``method='percentile'`` interval.
"""

from __future__ import annotations

import json
from array import array
from typing import TYPE_CHECKING, Iterator, Mapping, Sequence

import numpy as np

from .digest import hash64
from .errors import CtrlkitError

if TYPE_CHECKING:
    from .components import Dataset, Metric
    from .types import Example

CHUNK_CELLS = 1 << 22
"""Weights held at once (rows x examples): 4M floats, 32 MB; more resamples go in several chunks."""
PERMUTATION_STREAM = 1
"""Added to the seed for the permutation test's draws, so they are not the resamples' draws."""
ONE_GROUP = ("one bootstrap group (every example shares one document, or there is one example): each resample "
             "draws the same examples, so there is no spread to give an interval")
"""Why an interval is undefined (``undefined`` beside null ``low``, ``high`` and ``se``) when the
examples form a single group: a zero-width interval would claim a certainty nothing measured."""


def groups_of(examples: Sequence["Example"], dataset: "Dataset | None" = None) -> np.ndarray:
    """The group index (0, 1, ... in order of first appearance) of each example.

    An example's group is the value of the dataset's ``group_field`` in its ``meta``, else in its
    ``controls``; an example that has neither, or a dataset without a ``group_field``, is a group of
    its own, except a topic picked by rank (``ID#rankN``, ``topic_source`` topK), which groups with
    the other picks for the same document (``ID``)."""
    field = getattr(dataset, "group_field", None)
    keys: dict[str, int] = {}
    codes = np.empty(len(examples), dtype=np.int64)
    for i, example in enumerate(examples):
        codes[i] = keys.setdefault(_group_key(example, field), len(keys))
    return codes


class GroupCodes:
    """:func:`groups_of` over examples given a chunk at a time (``add``), holding 8 bytes an
    example: a 64-bit hash of each group's key, numbered in order of first appearance by ``codes``.
    Two keys share a hash with odds of about 1 in 3.7 x 10^7 among a million groups."""

    def __init__(self, dataset: "Dataset | None" = None):
        self.field = getattr(dataset, "group_field", None)
        self.hashes = array("Q")

    def add(self, examples: Sequence["Example"]) -> None:
        for example in examples:
            self.hashes.append(hash64(_group_key(example, self.field)))

    def codes(self) -> np.ndarray:
        hashes = np.frombuffer(self.hashes, dtype=np.uint64)
        _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        rank = np.empty(len(first), dtype=np.int64)
        rank[np.argsort(first, kind="stable")] = np.arange(len(first))
        return rank[inverse.reshape(-1)]


def _group_key(example: "Example", field: str | None) -> str:
    for where in ("meta", "controls"):
        found = getattr(example, where)
        if field and field in found:
            return "field:" + json.dumps(found[field], sort_keys=True, default=str)
    if "topic_pick" in example.meta:
        return "id:" + example.id.rsplit("#rank", 1)[0]
    return "id:" + example.id


def resample_weights(groups: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """(R, N) weights of a cluster bootstrap: each row draws as many groups as there are, with
    replacement; an example weighs how many times its group was drawn."""
    chunks = list(weight_chunks(groups, resamples, seed))
    return np.concatenate(chunks) if chunks else np.zeros((0, len(groups)))


def weight_chunks(groups: np.ndarray, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """:func:`resample_weights` in chunks of rows of at most :data:`CHUNK_CELLS` weights (one row
    when a row alone holds more), so that memory does not grow with resamples x examples."""
    codes, count = _compact(groups)
    alone = count == len(codes)  # each example its own group: the counts are the weights
    rng = np.random.default_rng(seed)
    for size in _chunk_sizes(resamples, len(codes)):
        counts = row_counts(rng.integers(0, count, (size, count)), count)
        yield counts if alone else counts[:, codes]


def row_counts(drawn: np.ndarray, n: int) -> np.ndarray:
    """How many times each of ``n`` indices occurs in each row of ``drawn`` (rows x draws), as floats.
    Counted a row at a time: one count over the whole chunk, its bins spread over tens of
    megabytes, was six times slower (cache misses)."""
    counts = np.empty((len(drawn), n))
    for row, indices in enumerate(drawn):
        counts[row] = np.bincount(indices, minlength=n)
    return counts


def _chunk_sizes(total: int, row_cells: int) -> Iterator[int]:
    """The sizes of the chunks of ``total`` rows of ``row_cells`` cells each that fit ``CHUNK_CELLS``."""
    rows = max(1, CHUNK_CELLS // max(1, row_cells))
    for start in range(0, total, rows):
        yield min(rows, total - start)


def _compact(groups: np.ndarray) -> tuple[np.ndarray, int]:
    groups = np.asarray(groups)
    if groups.ndim != 1:
        raise ValueError(f"groups must be one index per example, got an array of shape {groups.shape}")
    unique, codes = np.unique(groups, return_inverse=True)
    return codes.reshape(-1), len(unique)


def as_parts(parts: Mapping[str, Sequence[float | None]]) -> dict[str, np.ndarray]:
    """Per-example parts (lists with None, or arrays) as float arrays with NaN for None."""
    return {name: np.asarray(values, dtype=float) if isinstance(values, np.ndarray)
            else np.array([np.nan if value is None else value for value in values], dtype=float)
            for name, values in parts.items()}


def intervals(metric: "Metric", parts: Mapping[str, Sequence[float | None]], groups: np.ndarray,
              resamples: int = 1000, seed: int = 0, confidence: float = 0.95) -> dict[str, dict[str, float]]:
    """``{value: {"low", "high", "se"}}``: the percentile interval at ``confidence`` and the standard
    error (standard deviation, ddof=1) of each corpus value ``metric.aggregate`` returns, over
    ``resamples`` cluster-bootstrap resamples of the examples. Resamples on which a value is
    undefined (NaN) are left out of its interval and counted (``undefined_resamples``, only when
    some are); a value defined on fewer than two gets none."""
    arrays = _checked(parts, groups)
    drawn = _stacked(aggregated(metric, arrays, weights) for weights in weight_chunks(groups, resamples, seed))
    return {name: _unless_one_group(summary, groups) for name, values in drawn.items()
            if (summary := _summary(values, confidence)) is not None}


def _unless_one_group(summary: dict, groups: np.ndarray) -> dict:
    """``summary`` as it is, or with its interval undefined (:data:`ONE_GROUP`) when ``groups``
    hold fewer than two groups."""
    if len(np.unique(groups)) >= 2:
        return summary
    return {**summary, "low": float("nan"), "high": float("nan"), "se": float("nan"), "undefined": ONE_GROUP}


def paired(metric: "Metric", parts_a: Mapping[str, Sequence[float | None]],
           parts_b: Mapping[str, Sequence[float | None]], groups: np.ndarray, resamples: int = 1000,
           seed: int = 0, confidence: float = 0.95) -> dict[str, dict[str, float]]:
    """``{value: {"difference", "low", "high", "se", "p"}}`` for arm a (a controller) minus arm b
    (its baseline) scored on the same examples: ``difference`` on all the examples; the interval
    and standard error of the difference from the same resamples applied to both arms (a paired
    cluster bootstrap); ``p`` from a paired approximate-randomization test: each of ``resamples``
    permutations swaps the two arms' parts of each group with probability 1/2, and ``p = (1 +
    #(|d_perm| >= |d|)) / (1 + R)`` (two-sided; permutations on which the value is undefined are
    left out: ``permutations`` is how many counted, and ``1 / (1 + permutations)`` the smallest p)."""
    arrays_a, arrays_b = _checked(parts_a, groups), _checked(parts_b, groups)
    n = len(groups)
    observed = aggregated(metric, _joined(arrays_a, arrays_b), np.concatenate([
        np.concatenate([np.ones(n), np.zeros(n)])[None], np.concatenate([np.zeros(n), np.ones(n)])[None]]))
    observed = {name: values[0] - values[1] for name, values in observed.items()}
    differences = _stacked(_difference(aggregated(metric, arrays_a, weights), aggregated(metric, arrays_b, weights))
                           for weights in weight_chunks(groups, resamples, seed))
    permuted = _stacked(_permuted(metric, _joined(arrays_a, arrays_b), groups, resamples, seed))
    found = {}
    for name, difference in observed.items():
        summary = _summary(differences.get(name), confidence)
        if summary is None or not np.isfinite(difference):
            continue
        p, counted = permutation_p(difference, permuted[name], 100 * np.finfo(float).eps * abs(difference))
        found[name] = {"difference": float(difference), **_unless_one_group(summary, groups), "p": p,
                       "permutations": counted}
    return found


def permutation_p(observed: float, permuted: np.ndarray, tolerance: float) -> tuple[float, int]:
    """``(p, permutations)``: the two-sided ``(1 + #(|permuted| >= |observed| - tolerance)) / (1 +
    permutations)`` over the permuted values that are defined (``permutations`` counts them)."""
    null = permuted[np.isfinite(permuted)]
    extreme = int(np.count_nonzero(np.abs(null) >= abs(observed) - tolerance))
    return (1 + extreme) / (1 + len(null)), len(null)


class AggregateError(CtrlkitError):
    """A metric's ``aggregate`` raised or returned something other than ``{value: array (R,)}``."""


def aggregated(metric: "Metric", parts: Mapping[str, np.ndarray], weights: np.ndarray) -> dict[str, np.ndarray]:
    """``metric.aggregate(parts, weights)`` as float arrays, one value per row of ``weights``; an
    :class:`AggregateError` naming the metric when it raises or returns another shape."""
    try:
        found = metric.aggregate(parts, weights)
    except Exception as exc:  # a plugin's code: any error is its aggregate's
        detail = " ".join(str(exc).split())  # one line, whatever the plugin's message holds
        raise AggregateError(f"metric '{metric.name}': aggregate failed: {type(exc).__name__}: {detail}") from exc
    if not isinstance(found, Mapping):
        raise AggregateError(f"metric '{metric.name}': aggregate returned {type(found).__name__}, "
                             "not {value name: array}")
    arrays = {}
    for name, values in found.items():
        try:
            array = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as exc:
            raise AggregateError(f"metric '{metric.name}': aggregate's '{name}' is not numbers "
                                 f"({' '.join(str(exc).split())})") from exc
        if array.shape != (len(weights),):
            raise AggregateError(f"metric '{metric.name}': aggregate's '{name}' has shape {array.shape}, "
                                 f"not ({len(weights)},) (one value per row of weights)")
        arrays[name] = array
    return arrays


def _permuted(metric, joined, groups, resamples, seed) -> Iterator[dict[str, np.ndarray]]:
    """The differences of ``resamples`` random swaps of the arms (per group) of the 2N stacked parts."""
    codes, count = _compact(groups)
    rng = np.random.default_rng(seed + PERMUTATION_STREAM)
    for size in _chunk_sizes(resamples, 4 * len(codes)):  # 2 arms x 2N weights a row
        swapped = rng.integers(0, 2, (size, count))[:, codes].astype(float)
        kept = 1.0 - swapped
        weights = np.concatenate([np.hstack([kept, swapped]), np.hstack([swapped, kept])])
        values = aggregated(metric, joined, weights)
        yield {name: array[:size] - array[size:] for name, array in values.items()}


def _joined(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: np.concatenate([a[name], b[name]]) for name in a if name in b}


def _difference(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: np.asarray(a[name], dtype=float) - np.asarray(b[name], dtype=float) for name in a if name in b}


def _stacked(chunks) -> dict[str, np.ndarray]:
    """One array per value name from the chunks' ``{value: array}``."""
    collected: dict[str, list[np.ndarray]] = {}
    for chunk in chunks:
        for name, values in chunk.items():
            collected.setdefault(name, []).append(np.asarray(values, dtype=float).reshape(-1))
    return {name: np.concatenate(arrays) for name, arrays in collected.items()}


def _summary(values: np.ndarray | None, confidence: float) -> dict[str, float] | None:
    """The percentile interval and standard error of the defined resampled values, and how many
    resamples left the value undefined when some did; None with fewer than two defined (one value
    has no spread)."""
    if values is None:
        return None
    defined = values[np.isfinite(values)]
    if len(defined) < 2:
        return None
    low, high, se = percentile_interval(defined, confidence)
    found = {"low": low, "high": high, "se": se}
    return found if len(defined) == len(values) else {**found, "undefined_resamples": len(values) - len(defined)}


def percentile_interval(defined: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """``(low, high, se)``: the percentile interval at ``confidence`` and the standard error
    (standard deviation, ddof=1) of two or more resampled values, all defined."""
    alpha = (1 - confidence) / 2
    low, high = np.percentile(defined, [100 * alpha, 100 * (1 - alpha)])
    return float(low), float(high), float(np.std(defined, ddof=1))


def _checked(parts: Mapping[str, Sequence[float | None]], groups: np.ndarray) -> dict[str, np.ndarray]:
    arrays = as_parts(parts)
    for name, values in arrays.items():
        if values.shape != (len(groups),):
            raise ValueError(f"part '{name}' has {values.size} values for {len(groups)} examples")
    return arrays
