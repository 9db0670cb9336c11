"""Pearson, Spearman and Kendall (tau-b) correlations of many series at once, for resampling.

Each function correlates ``x`` and ``y`` along their last axis, over the positions where
``valid`` is true, for every leading index at once (thousands of bootstrap resamples in one
array operation). The result is NaN exactly where the correlation is undefined: fewer than three
valid pairs, or a series that is constant over its valid pairs. Callers count those NaNs; they
never average them. Ties are handled as scipy.stats does: average ranks for Spearman, tau-b for
Kendall, so a duplicated point (a system drawn twice) is a tie, not an error.
``correlate_weighted`` gives the same on data given as counts of each pair (a bootstrap
resample), without writing the copies out.
"""

from __future__ import annotations

import numpy as np

CORRELATIONS = ("pearson", "spearman", "kendall")
MINIMUM_PAIRS = 3
_BLOCK_CELLS = 1_000_000
"""Weighted Kendall builds its sign matrices this many cells at a time (memory)."""


def correlate_arrays(name: str, x: np.ndarray, y: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """The correlation ``name`` along the last axis (NaN where undefined)."""
    if name == "pearson":
        return _pearson(x, y, valid)
    if name == "spearman":
        return _pearson(_ranks(x, valid), _ranks(y, valid), valid)
    if name == "kendall":
        return _kendall(x, y, valid)
    raise ValueError(f"unknown correlation '{name}'")


def _undefined(x: np.ndarray, y: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Fewer than three valid pairs, or a constant series."""
    return (valid.sum(-1) < MINIMUM_PAIRS) | _constant(x, valid) | _constant(y, valid)


def _constant(values: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Whether ``values`` are all equal where ``kept`` (compared exactly, not by their variance,
    which rounding leaves a hair above zero); false where nothing is kept."""
    return np.where(kept, values, -np.inf).max(-1) == np.where(kept, values, np.inf).min(-1)


def scaled(values: np.ndarray) -> np.ndarray:
    """``values`` scaled along the last axis by the power of two that brings their largest
    magnitude (finite values only) into [0.5, 1), so that sums and products of them neither
    overflow (scores near 1e308) nor underflow (near 1e-308). A power of two scales exactly: ties,
    means and every ordinary correlation come out bit for bit as unscaled."""
    values = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore"):
        largest = np.where(np.isfinite(values), np.abs(values), 0.0).max(-1, keepdims=True, initial=0.0)
    _, exponent = np.frexp(largest)
    return np.ldexp(values, -exponent)


def _pearson(x, y, valid):
    """Scaled, centred, and scaled again before any product (:func:`scaled`), so r is in [-1, 1]
    for any finite scores."""
    weight = valid.astype(float)
    count = np.maximum(weight.sum(-1, keepdims=True), 1)
    constant = _undefined(x, y, valid)
    x = scaled(np.where(valid, x, 0.0))
    y = scaled(np.where(valid, y, 0.0))
    dx = scaled((x - (x * weight).sum(-1, keepdims=True) / count) * weight)
    dy = scaled((y - (y * weight).sum(-1, keepdims=True) / count) * weight)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (dx * dy).sum(-1) / np.sqrt((dx * dx).sum(-1) * (dy * dy).sum(-1))
    r = np.clip(r, -1.0, 1.0)
    return np.where(constant, np.nan, r)


def _ranks(values, valid):
    """Average ranks (1-based) among the valid positions; invalid positions get 0 (masked later).
    Invalid positions sort last (as +inf), so the valid ones' ranks are unaffected by them."""
    order = np.argsort(np.where(valid, values, np.inf), axis=-1, kind="stable")
    ordered = np.take_along_axis(np.where(valid, values, np.inf), order, axis=-1)
    position = np.broadcast_to(np.arange(values.shape[-1]), values.shape)
    starts = np.concatenate([np.ones_like(ordered[..., :1], bool), ordered[..., 1:] != ordered[..., :-1]], -1)
    ends = np.concatenate([starts[..., 1:], np.ones_like(starts[..., :1])], -1)
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=-1)
    last = np.flip(np.minimum.accumulate(np.flip(np.where(ends, position, values.shape[-1]), -1), axis=-1), -1)
    ranks = np.empty(values.shape)
    np.put_along_axis(ranks, order, (first + last) / 2 + 1, axis=-1)
    return np.where(valid, ranks, 0.0)


def _kendall(x, y, valid):
    """tau-b = sum(sx*sy) / sqrt(sum(sx^2) * sum(sy^2)) over the pairs i < j of valid positions,
    where sx, sy are the signs of the pair's differences (a tie adds 0 to the numerator and to its
    side of the denominator)."""
    first, second = np.triu_indices(x.shape[-1], 1)
    both = valid[..., first] & valid[..., second]

    def signs(values):  # int8 keeps the pair arrays small: this is the costly step
        low, high = values[..., first], values[..., second]
        return ((low > high).view(np.int8) - (low < high).view(np.int8)) * both.view(np.int8)

    sx, sy = signs(x), signs(y)
    concordance = (sx * sy).sum(-1, dtype=np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = concordance / np.sqrt(np.abs(sx).sum(-1, dtype=np.int64) * np.abs(sy).sum(-1, dtype=np.int64))
    tau = np.clip(tau, -1.0, 1.0)
    return np.where(_undefined(x, y, valid), np.nan, tau)


def correlate_weighted(name: str, x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The correlation ``name`` of the series ``x``, ``y`` (length N) repeated by ``weights``
    (resamples x N whole counts), one per resample: what ``correlate_arrays`` gives on the data
    with pair i written ``weights[r, i]`` times, without building it. A bootstrap resample of N
    pairs only changes these counts, so the cost no longer grows with the copies' pairs."""
    weights = np.asarray(weights, float)
    if name == "pearson":
        r = _weighted_pearson(x[None], y[None], weights)
    elif name == "spearman":
        r = _weighted_pearson(_weighted_ranks(x, weights), _weighted_ranks(y, weights), weights)
    elif name == "kendall":
        r = _weighted_kendall(x, y, weights)
    else:
        raise ValueError(f"unknown correlation '{name}'")
    return np.where(_weighted_undefined(x, y, weights), np.nan, r)


def weighted_pearson(x, y, weights) -> np.ndarray:
    """The Pearson correlation of ``x`` and ``y`` (N,) under each row of ``weights`` (R, N), a pair
    counted as often as its weight (what scipy's pearsonr gives on the pairs repeated); NaN for a
    row on which either side is constant or that weighs nothing. Unlike :func:`correlate_weighted`,
    two distinct pairs are enough (the ``length`` metric's PCC)."""
    x, y, weights = np.asarray(x, dtype=float), np.asarray(y, dtype=float), np.asarray(weights, dtype=float)
    drawn = weights > 0
    r = _weighted_pearson(x[None], y[None], weights)
    return np.where(_constant(x, drawn) | _constant(y, drawn), np.nan, r)


def _weighted_undefined(x, y, weights):
    drawn = weights > 0
    return (weights.sum(-1) < MINIMUM_PAIRS) | _constant(x, drawn) | _constant(y, drawn)


def _weighted_pearson(x, y, weights):
    """Centred in two passes (not sum(w x^2) - (sum w x)^2 / W, which cancels), scaled before the
    mean and again before the products (:func:`scaled`)."""
    total = np.maximum(weights.sum(-1, keepdims=True), 1)
    x, y = scaled(x), scaled(y)
    dx = scaled(np.where(weights > 0, x - (weights * x).sum(-1, keepdims=True) / total, 0.0))
    dy = scaled(np.where(weights > 0, y - (weights * y).sum(-1, keepdims=True) / total, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (weights * dx * dy).sum(-1) / np.sqrt((weights * dx * dx).sum(-1) * (weights * dy * dy).sum(-1))
    return np.clip(r, -1.0, 1.0)


def _weighted_ranks(values, weights):
    """Average ranks (1-based) with multiplicity: a value's copies share the rank (weight of the
    strictly smaller values) + (weight of its tie group + 1) / 2; values drawn 0 times get a rank
    that their weight 0 ignores."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    new_group = np.concatenate([[True], ordered[1:] != ordered[:-1]])
    group_weight = np.add.reduceat(weights[:, order], np.flatnonzero(new_group), axis=-1)
    below = np.cumsum(group_weight, -1) - group_weight
    group_of = np.empty(len(values), int)
    group_of[order] = np.cumsum(new_group) - 1
    return (below + (group_weight + 1) / 2)[:, group_of]


def _weighted_kendall(x, y, weights):
    """tau-b over the pairs of copies: copies i, j of distinct pairs contribute w_i w_j times the
    pair's signs; two copies of one pair are tied on both sides (sign 0). So with S = the sign
    matrix, sum(sx*sy) = (w (Sx*Sy) w^T) / 2 and sum(sx^2) = (w |Sx| w^T) / 2 for every resample
    at once; the sign matrices are built in column blocks to bound memory."""
    count = len(x)
    products = np.zeros((3, len(weights)))
    step = max(1, _BLOCK_CELLS // max(count, 1))
    for start in range(0, count, step):
        block = slice(start, start + step)
        sx, sy = np.sign(x[:, None] - x[None, block]), np.sign(y[:, None] - y[None, block])
        for index, matrix in enumerate((sx * sy, np.abs(sx), np.abs(sy))):
            products[index] += ((weights @ matrix) * weights[:, block]).sum(-1)
    concordance, untied_x, untied_y = products / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = concordance / np.sqrt(untied_x * untied_y)
    return np.clip(tau, -1.0, 1.0)
