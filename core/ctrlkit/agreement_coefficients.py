"""Krippendorff's alpha and Cohen's kappa under many weightings of the units at once, for resampling.

Each function takes the ratings once and ``weights``, a matrix of resamples x units: how many
times a bootstrap resample drew each unit (a row of ones is the data as observed). A unit of
weight w counts as w copies of itself. The result is one coefficient per row, NaN exactly where
the coefficient is undefined (its expected disagreement is zero, or nothing is paired); callers
count those NaNs.

Krippendorff's alpha (Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011):
``1 - D_o / D_e``. Only units holding two or more values (pairable units) count. A unit of m
values contributes each ordered pair of its values with weight 1/(m-1) to the observed
disagreement; the expected disagreement is over every pair of the pooled pairable values. With
n pooled values, ``alpha = 1 - (n - 1) * sum_within / sum_pooled`` where each sum adds the
pairs' squared distances. The distance is 0 or 1 (nominal), the difference of the values
(interval) or, ordinal, the difference of the categories' positions, a category's position
being the count of pooled values below it plus half of its own: the ordinal distance is the
interval distance of mid-ranks, so it changes with each resample's counts.

Cohen's kappa (Cohen 1960; weighted, Cohen 1968): ``1 - observed / expected`` disagreement of
two raters, the expected one taken as if their marginal distributions were independent. The
disagreement of categories ranked i and j among the values either rater gave (as
scikit-learn's ``cohen_kappa_score`` ranks them) is 1 when they differ (plain), ``|i - j|``
(linear) or ``(i - j) ** 2`` (quadratic).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

ALPHA_LEVELS = ("nominal", "ordinal", "interval")
KAPPA_WEIGHTINGS = ("plain", "linear", "quadratic")
_CHUNK_CELLS = 1 << 22
"""Resamples are computed this many (resample, unit) cells at a time (memory: 32 MB a matrix)."""


def pairable(units: np.ndarray) -> np.ndarray:
    """Which units (rows of ``units``, NaN where a rater gave nothing) hold two or more values."""
    return np.isfinite(units).sum(1) >= 2


def alpha(level: str, units: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Krippendorff's alpha at ``level`` of ``units`` (units x raters, NaN missing) under each row
    of ``weights`` (resamples x units)."""
    if level not in ALPHA_LEVELS:
        raise ValueError(f"level must be one of {', '.join(ALPHA_LEVELS)}, got '{level}'")
    from scipy import sparse

    kept = pairable(units)
    if not kept.any():
        return np.full(len(weights), np.nan)
    units, weights = units[kept], weights[:, kept]
    present = np.isfinite(units)
    categories, codes = np.unique(units[present], return_inverse=True)
    counts = sparse.csr_matrix((np.ones(codes.size), (np.nonzero(present)[0], codes.reshape(-1))),
                               shape=(len(units), len(categories)))  # repeated (unit, category) cells add up
    sizes = present.sum(1).astype(float)
    varied = np.diff(counts.indptr) > 1  # units whose values are not all one category
    out = np.empty(len(weights))
    for start, stop in _chunks(len(weights), len(units) + len(categories)):
        out[start:stop] = _alpha(level, counts, categories, sizes, varied, weights[start:stop])
    return out


def _alpha(level, counts, categories, sizes, varied, weights):
    marginals = np.asarray(counts.T @ weights.T).T  # resamples x categories: the pooled pairable values
    n = marginals.sum(1)
    per_unit = weights / np.maximum(sizes - 1, 1)
    if level == "nominal":
        disagreeing_pairs = sizes ** 2 - np.asarray(counts.multiply(counts).sum(1)).reshape(-1)
        within = per_unit @ disagreeing_pairs
        pooled = n ** 2 - (marginals ** 2).sum(1)
    else:
        if level == "interval":  # centred: the distances are the same, the sums of squares smaller
            centred = categories - np.average(categories, weights=np.asarray(counts.sum(0)).reshape(-1))
            positions = np.broadcast_to(centred, marginals.shape)
        else:
            positions = np.cumsum(marginals, 1) - marginals / 2
        first = np.asarray(counts @ positions.T)  # units x resamples: each unit's sum of positions
        second = np.asarray(counts @ (positions ** 2).T)
        # sum over a unit's ordered pairs of squared differences: 2 (m * sum x^2 - (sum x)^2)
        squares = np.where(varied[:, None], np.maximum(2 * (sizes[:, None] * second - first ** 2), 0), 0)
        within = (per_unit * squares.T).sum(1)
        pooled = 2 * (n * (marginals * positions ** 2).sum(1) - (marginals * positions).sum(1) ** 2)
    defined = ((marginals > 0).sum(1) >= 2) & (pooled > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(defined, 1 - (n - 1) * within / pooled, np.nan)


def kappa(weighting: str, first: np.ndarray, second: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Cohen's kappa (``weighting`` plain, linear or quadratic) of two raters' values for the same
    units (``first``, ``second``, both given for every unit) under each row of ``weights``."""
    if weighting not in KAPPA_WEIGHTINGS:
        raise ValueError(f"weighting must be one of {', '.join(KAPPA_WEIGHTINGS)}, got '{weighting}'")
    from scipy import sparse

    categories, codes = np.unique(np.concatenate([first, second]), return_inverse=True)
    codes = codes.reshape(-1)
    one, other = codes[:len(first)], codes[len(first):]
    shape = (len(first), len(categories))
    units = np.arange(len(first))
    ones = np.ones(len(first))
    one_hot = sparse.csr_matrix((ones, (units, one)), shape=shape)
    other_hot = sparse.csr_matrix((ones, (units, other)), shape=shape)
    gap = (one - other).astype(float)
    distance = {"plain": (gap != 0).astype(float), "linear": np.abs(gap), "quadratic": gap ** 2}[weighting]
    ranks = np.arange(len(categories), dtype=float)
    out = np.empty(len(weights))
    for start, stop in _chunks(len(weights), len(first) + len(categories)):
        chunk = weights[start:stop]
        n = chunk.sum(1)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.asarray(one_hot.T @ chunk.T).T / n[:, None]
            q = np.asarray(other_hot.T @ chunk.T).T / n[:, None]
            observed = chunk @ distance / n
            expected = _expected(weighting, p, q, ranks)
            out[start:stop] = np.where((n > 0) & (expected > 0), 1 - observed / expected, np.nan)
    return out


def _expected(weighting, p, q, ranks):
    """The disagreement of two independent raters with category distributions ``p`` and ``q``,
    written so that it is exactly zero when both put everything on one category."""
    if weighting == "plain":
        return 1 - (p * q).sum(1)
    if weighting == "linear":  # E|X - Y| = sum over cuts t of P(X <= t < Y) + P(Y <= t < X)
        below_p, below_q = np.cumsum(p, 1)[:, :-1], np.cumsum(q, 1)[:, :-1]
        return (below_p * (1 - below_q) + below_q * (1 - below_p)).sum(1)
    mean_p, mean_q = p @ ranks, q @ ranks  # E(X - Y)^2 = var X + var Y + (E X - E Y)^2
    return ((p * (ranks - mean_p[:, None]) ** 2).sum(1) + (q * (ranks - mean_q[:, None]) ** 2).sum(1)
            + (mean_p - mean_q) ** 2)


def _chunks(rows: int, row_cells: int) -> Iterator[tuple[int, int]]:
    step = max(1, _CHUNK_CELLS // max(1, row_cells))
    for start in range(0, rows, step):
        yield start, min(rows, start + step)
