"""How an interval, a difference and a p-value are written in every table ctrlkit prints: the
run table, a sweep's table.md, the report and meta-eval."""

from __future__ import annotations

import math
from typing import Mapping


UNDEFINED_INTERVAL = "[interval undefined: one group]"
"""What a table shows for an interval that is undefined (``undefined`` in results.json): the
examples form one bootstrap group, so resampling cannot vary them."""


def describe_interval(interval) -> str:
    """``[low, high]`` to 4 places, or nothing for a value without an interval."""
    return f"[{interval[0]:.4f}, {interval[1]:.4f}]" if interval else ""


def recorded_interval(found: Mapping | None) -> str:
    """A value's interval as results.json records it (``low``, ``high``, perhaps ``undefined``),
    written for a table: :data:`UNDEFINED_INTERVAL`, ``[low, high]``, or nothing."""
    if found and found.get("undefined"):
        return UNDEFINED_INTERVAL
    if not found or found.get("low") is None or found.get("high") is None:
        return ""
    return describe_interval((found["low"], found["high"]))


def describe_difference(test: dict | None) -> str:
    """A difference to the baseline as the run table shows it: ``+0.0040 [-0.0012, +0.0093] p=0.21``,
    and where the test carries a Holm-adjusted p (``p_holm``: a sweep's comparisons with its
    reference rows, one family across the table) that p too, as table.md and the report show
    it: ``... p=0.21 (Holm 0.63)``."""
    if not test:
        return ""
    text = f"{test['difference']:+.4f}"
    if test.get("low") is not None and test.get("high") is not None:
        text += f" [{test['low']:+.4f}, {test['high']:+.4f}]"
    text += f" {p_text(test)}" if test.get("p") is not None else ""
    return text + (f" (Holm {test['p_holm']:.3g})" if test.get("p_holm") is not None else "")


def p_text(test: Mapping) -> str:
    """``p=0.21``, or ``p<=0.001`` where no permutation was as extreme as the observed difference
    (p is then its floor ``1 / (1 + permutations)``, an upper bound, not an estimate); the run
    table, a sweep's table.md, the report and meta-eval print p this way."""
    value = p_value_text(test)
    return "p" + (value if value.startswith("<=") else "=" + value)


def p_value_text(test: Mapping) -> str:
    """The p of :func:`p_text` without its ``p``, for a column headed p: ``<=0.001`` at its
    permutation floor (``test["permutations"]`` given and p = 1 / (1 + permutations)), else
    three significant digits (``0.214``, ``4.56e-08``; an analytic p has no ``permutations``)."""
    p, permutations = test["p"], test.get("permutations")
    if permutations is not None and p * (1 + permutations) < 1.5:
        return f"<={_rounded_up(p)}"
    return f"{p:.3g}"


def _rounded_up(p: float) -> str:
    """``p`` to two significant digits, rounded up, so that a bound stays a bound (1/1001: 0.001)."""
    scale = 10 ** (1 - math.floor(math.log10(p)))
    return f"{math.ceil(p * scale - 1e-9) / scale:.2g}"


def show(value) -> str:
    """A value as the tables show it: to 4 places, null as undefined."""
    return "undefined" if value is None else str(value) if isinstance(value, int) else f"{value:.4f}"
