"""Pearson, Spearman and Kendall (tau-b) correlations of many series at once, for resampling.

Each function correlates ``x`` and ``y`` along their last axis, over the positions where
``valid`` is true, for every leading index at once (thousands of bootstrap resamples in one
array operation). The result is NaN exactly where the correlation is undefined: fewer than three
valid pairs, or a series that is constant over its valid pairs. Callers count those NaNs; they
never average them. Ties are handled as scipy.stats does: average ranks for Spearman, tau-b for
Kendall, so a duplicated point (a system drawn twice) is a tie, not an error.
"""

from __future__ import annotations

import numpy as np

CORRELATIONS = ("pearson", "spearman", "kendall")
MINIMUM_PAIRS = 3


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
    """Fewer than three valid pairs, or a constant series (compared exactly, not by its variance,
    which rounding leaves a hair above zero)."""
    def constant(values):
        return np.where(valid, values, -np.inf).max(-1) == np.where(valid, values, np.inf).min(-1)

    return (valid.sum(-1) < MINIMUM_PAIRS) | constant(x) | constant(y)


def _pearson(x, y, valid):
    weight = valid.astype(float)
    count = np.maximum(weight.sum(-1, keepdims=True), 1)
    x = np.where(valid, x, 0.0)
    y = np.where(valid, y, 0.0)
    dx = (x - (x * weight).sum(-1, keepdims=True) / count) * weight
    dy = (y - (y * weight).sum(-1, keepdims=True) / count) * weight
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (dx * dy).sum(-1) / np.sqrt((dx * dx).sum(-1) * (dy * dy).sum(-1))
    r = np.clip(r, -1.0, 1.0)
    return np.where(_undefined(x, y, valid), np.nan, r)


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
