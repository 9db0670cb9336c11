"""A seeded gradient-free search of a few real weights: the (1+1) evolution strategy with the
one-fifth success rule (Rechenberg; Beyer and Schwefel, "Evolution strategies: a comprehensive
introduction", 2002), in numpy: LoRAHub searches with nevergrad's ``NGOpt`` instead.

From a start point, each step draws one candidate, the current point plus Gaussian noise of the
current step size, clipped to the bounds; the candidate replaces the point when it scores lower,
and the step size grows by ``exp(0.8)`` after a success and shrinks by ``exp(-0.2)`` after a
failure (so it holds steady when one step in five succeeds). The same seed gives the same search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass
class SearchResult:
    """The best point found, its value, and every point evaluated with its value, in order."""

    best: list[float]
    value: float
    history: list[tuple[list[float], float]]


def minimise(objective: Callable[[list[float]], float], start: Sequence[float], budget: int, seed: int,
             bound: float, step: float = 0.5) -> SearchResult:
    """The lowest value of ``objective`` found in ``budget`` evaluations (the start included),
    each coordinate within ``[-bound, bound]``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    point = [min(bound, max(-bound, float(value))) for value in start]
    value = float(objective(point))
    history = [(point, value)]
    for _ in range(budget - 1):
        candidate = [min(bound, max(-bound, x + step * float(noise)))
                     for x, noise in zip(point, rng.standard_normal(len(point)))]
        tried = float(objective(candidate))
        history.append((candidate, tried))
        if tried < value:
            point, value, step = candidate, tried, step * math.exp(0.8)
        else:
            step *= math.exp(-0.2)
    return SearchResult(point, value, history)
