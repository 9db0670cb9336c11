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
    """Average ranks (1-based) among the valid positions; invalid positions get 0 (masked later)."""
    both = valid[..., :, None] & valid[..., None, :]
    below = ((values[..., None, :] < values[..., :, None]) & both).sum(-1)
    equal = ((values[..., None, :] == values[..., :, None]) & both).sum(-1)
    return np.where(valid, below + (equal + 1) / 2, 0.0)


def _kendall(x, y, valid):
    """tau-b = sum(sx*sy) / sqrt(sum(sx^2) * sum(sy^2)) over the valid pairs, where sx, sy are
    the signs of the pair's differences (a tie contributes 0 to both the numerator and its side)."""
    both = valid[..., :, None] & valid[..., None, :]
    sx = np.where(both, np.sign(x[..., :, None] - x[..., None, :]), 0.0)
    sy = np.where(both, np.sign(y[..., :, None] - y[..., None, :]), 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (sx * sy).sum((-1, -2)) / np.sqrt((sx * sx).sum((-1, -2)) * (sy * sy).sum((-1, -2)))
    tau = np.clip(tau, -1.0, 1.0)
    return np.where(_undefined(x, y, valid), np.nan, tau)
