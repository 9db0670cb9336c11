"""Agreement between raters: Krippendorff's alpha and Cohen's kappa of score fields, with intervals.

Reads rows (a samples.jsonl, FD's JSON lines, any list of dicts). Each rater is a field, named
by a dotted path as ``ctrlkit meta-eval`` names scores (``given.human``, ``scores.judge.score``,
``given.human_list.1`` for the second item of a list); each row is a unit that the raters
scored. A value that is null, absent, NaN or infinite is missing; any other value that is no
number is a one-line error naming its row and field.

- Krippendorff's alpha (nominal, ordinal, interval) takes every field as a rater; missing values
  are allowed, and units with fewer than two values are left out (counted).
- Cohen's kappa (plain, linear, quadratic) takes each pair of fields, over the rows holding both.

The formulas are in :mod:`ctrlkit.agreement_coefficients`. Intervals are 95% percentile bootstrap
intervals: each resample draws the units (rows), or with ``group_key`` the groups of rows that
share that field's value (FD's paper, say), with replacement, and recomputes every coefficient
from the same draws (``numpy.random.default_rng(seed)``, as :func:`ctrlkit.bootstrap.resample_weights`
draws), taken a chunk of resamples at a time (:func:`ctrlkit.bootstrap.weight_chunks`), so that
memory does not grow with rows x resamples. A resample whose coefficient is undefined is left out
and counted. The values are scaled by one power of two first
(:func:`ctrlkit.analyses.meta_evaluation.scaled_exactly`): exact, so every coefficient is that of the
values as given, and interval alpha of scores near 1e-170 or 1e160 neither underflows nor overflows.
"""

from __future__ import annotations

import json
import math
from itertools import combinations
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ..agreement_coefficients import ALPHA_LEVELS, KAPPA_WEIGHTINGS, alpha, kappa, pairable
from ..bootstrap import percentile_interval, weight_chunks
from ..errors import CtrlkitError
from .meta_evaluation import lookup, scaled_exactly

DEFAULT_RESAMPLES = 1000
CONFIDENCE = 0.95
NOTHING_PAIRED = "no row holds two or more of the fields' values: there is nothing to compare"
ONE_VALUE = ("every compared value is the same: no disagreement is expected by chance, so the coefficient is "
             "0/0 (undefined)")
ONE_GROUP = ("every resample draws the same units (one unit or one group): a zero-width interval would claim a "
             "certainty nothing measured")


def agreement(rows: Iterable[dict], fields: Sequence[str], *, levels: Sequence[str] | None = None,
              resamples: int = DEFAULT_RESAMPLES, seed: int = 0, group_key: str | None = None) -> dict:
    """``{"settings": ..., "alpha": {level: ...}, "kappa": [...]}``: Krippendorff's alpha of all
    ``fields`` at each of ``levels`` (default nominal, ordinal and interval) and Cohen's kappa of
    each pair of fields (plain, linear, quadratic), each with a 95% interval from ``resamples``
    bootstrap resamples (0: none) of the rows, or of the groups of rows sharing ``group_key``."""
    from ..engine.settings import check_seed
    from ..uncertainty import check_resamples

    rows = list(rows)
    fields = list(fields)
    if not rows:
        raise CtrlkitError("agreement needs at least one row")
    if len(fields) < 2:
        raise CtrlkitError(f"agreement needs two or more fields (--field), got {len(fields)}")
    for field in fields:
        if fields.count(field) > 1:
            raise CtrlkitError(f"field '{field}' is given twice")
    levels = list(dict.fromkeys(levels)) if levels else list(ALPHA_LEVELS)
    for level in levels:
        if level not in ALPHA_LEVELS:
            raise CtrlkitError(f"level must be one of {', '.join(ALPHA_LEVELS)}, got '{level}'")
    check_resamples(resamples, "resamples")
    check_seed(seed)

    units, non_finite = _ratings(rows, fields)
    groups = _groups(rows, group_key)
    one_group = len(np.unique(groups)) == 1
    settings: dict[str, Any] = {
        "fields": fields, "levels": levels, "rows": len(rows), "group_key": group_key,
        "groups": int(len(np.unique(groups))), "resamples": resamples, "seed": seed, "confidence": CONFIDENCE,
        "interval": "percentile bootstrap"}
    if non_finite:
        settings["non_finite"] = non_finite
    resampled: list[tuple[dict, Callable[[np.ndarray], np.ndarray]]] = []
    report = {"settings": settings,
              "alpha": _alpha_report(units, levels, resampled),
              "kappa": [_kappa_report(units, fields, i, j, resampled) for i, j in combinations(range(len(fields)), 2)]}
    if not resamples or not resampled:
        return report
    drawn: list[list[np.ndarray]] = [[] for _ in resampled]
    for weights in weight_chunks(groups, resamples, seed):  # every coefficient sees the same draws
        for values, (_, coefficient) in zip(drawn, resampled):
            values.append(coefficient(weights))
    for values, (result, _) in zip(drawn, resampled):
        result.update(_interval(np.concatenate(values), one_group))
    return report


def _ratings(rows: list[dict], fields: list[str]) -> tuple[np.ndarray, dict[str, int]]:
    """Rows x fields of floats, NaN where missing, scaled by one power of two (exactly), and how
    many NaN or infinite values each field held."""
    units = np.full((len(rows), len(fields)), np.nan)
    non_finite: dict[str, int] = {}
    for number, row in enumerate(rows, 1):
        for column, field in enumerate(fields):
            value = lookup(row, field)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                shown = json.dumps(value)
                raise CtrlkitError(f"row {number}: '{field}' holds {shown[:40] + '...' if len(shown) > 40 else shown}, "
                                   f"not a number (a missing value is null or absent)")
            try:
                value = float(value)
            except OverflowError:
                raise CtrlkitError(f"row {number}: '{field}' is an integer beyond the largest float "
                                   f"(about 1.8e308)") from None
            if math.isfinite(value):
                units[number - 1, column] = value
            else:
                non_finite[field] = non_finite.get(field, 0) + 1
    for column, field in enumerate(fields):
        if not np.isfinite(units[:, column]).any():
            raise CtrlkitError(f"no row has a number at '{field}'")
    return scaled_exactly(units)[0], non_finite


def _groups(rows: list[dict], group_key: str | None) -> np.ndarray:
    """The bootstrap group of each row: its own, or the rows sharing the value at ``group_key``."""
    if group_key is None:
        return np.arange(len(rows))
    keys: dict[str, int] = {}
    codes = np.empty(len(rows), dtype=np.int64)
    for number, row in enumerate(rows, 1):
        value = lookup(row, group_key)
        if value is None:
            raise CtrlkitError(f"row {number} has no value at '{group_key}' (--group-key)")
        # as meta-eval names inputs and systems: 1 and "1" are one group
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        codes[number - 1] = keys.setdefault(text, len(keys))
    return codes


def _alpha_report(units: np.ndarray, levels: list[str], resampled: list) -> dict:
    """The observed alpha at each level; each defined one is added to ``resampled`` with the
    function that gives it under a chunk of weights."""
    kept = pairable(units)
    counted = {"units": int(kept.sum()), "left_out": int((~kept).sum()),
               "values": int(np.isfinite(units[kept]).sum())}
    report: dict[str, Any] = dict(counted)
    for level in levels:
        observed = alpha(level, units, np.ones((1, len(units))))[0]
        if not kept.any():
            report[level] = {"undefined": NOTHING_PAIRED}
        elif np.isnan(observed):
            report[level] = {"undefined": ONE_VALUE}
        else:
            report[level] = {"alpha": float(observed)}
            resampled.append((report[level], lambda weights, level=level: alpha(level, units, weights)))
    return report


def _kappa_report(units: np.ndarray, fields: list[str], i: int, j: int, resampled: list) -> dict:
    both = np.isfinite(units[:, i]) & np.isfinite(units[:, j])
    report: dict[str, Any] = {"fields": [fields[i], fields[j]], "n": int(both.sum()), "left_out": int((~both).sum())}
    first, second = units[both, i], units[both, j]
    for weighting in KAPPA_WEIGHTINGS:
        if not both.any():
            report[weighting] = {"undefined": f"no row holds both '{fields[i]}' and '{fields[j]}'"}
            continue
        observed = kappa(weighting, first, second, np.ones((1, len(first))))[0]
        if np.isnan(observed):
            report[weighting] = {"undefined": ONE_VALUE}
        else:
            report[weighting] = {"kappa": float(observed)}
            resampled.append((report[weighting], lambda weights, weighting=weighting:
                              kappa(weighting, first, second, weights[:, both])))
    return report


def _interval(values: np.ndarray, one_group: bool) -> dict:
    """low, high and se of the resampled values (None with fewer than two defined), and how many
    resamples were undefined."""
    defined = values[np.isfinite(values)]
    out: dict[str, Any] = {"undefined_resamples": int(len(values) - len(defined))}
    if one_group:
        return {"low": None, "high": None, "se": None, **out, "interval_undefined": ONE_GROUP}
    if len(defined) < 2:
        return {"low": None, "high": None, "se": None, **out}
    low, high, se = percentile_interval(defined, CONFIDENCE)
    return {"low": low, "high": high, "se": se, **out}


def format_report(report: dict) -> str:
    """The report as two tables: alpha per level, then kappa per pair of fields (each value with
    its 95% interval when resampled)."""
    settings, found = report["settings"], report["alpha"]
    resampled = settings["resamples"] > 0
    units = f"groups of rows sharing '{settings['group_key']}'" if settings["group_key"] else "rows"
    scheme = (f"; {int(CONFIDENCE * 100)}% CI: {settings['resamples']} resamples of the {units}, seed {settings['seed']}"
              if resampled else "")
    lines = [f"Krippendorff's alpha ({len(settings['fields'])} fields; {found['units']} units with two or more "
             f"values, {found['left_out']} left out{scheme})"]
    lines += [f"{level:<10}  {_cell(found[level], 'alpha', resampled)}" for level in settings["levels"]]
    lines += ["", f"Cohen's kappa (each pair of fields, over the rows holding both{scheme})"]
    width = max(len("fields"), *(len(" vs ".join(pair["fields"])) for pair in report["kappa"]))
    cell_width = 28 if resampled else 8
    lines.append(f"{'fields':<{width}}  {'n':>6}  " + "  ".join(f"{name:<{cell_width}}" for name in KAPPA_WEIGHTINGS))
    for pair in report["kappa"]:
        cells = [_cell(pair[name], "kappa", resampled) for name in KAPPA_WEIGHTINGS]
        shown = cells[:1] if len(set(cells)) == 1 else [f"{cell:<{cell_width}}" for cell in cells]
        lines.append(f"{' vs '.join(pair['fields']):<{width}}  {pair['n']:>6}  " + "  ".join(shown))
    return "\n".join(line.rstrip() for line in lines)


def _cell(result: dict, name: str, resampled: bool) -> str:
    if "undefined" in result:
        return f"undefined: {result['undefined']}"
    cell = f"{result[name]:>8.4f}"
    if resampled:
        low, high = result.get("low"), result.get("high")
        cell += f"  [{low:.4f},{high:.4f}]" if None not in (low, high) else "  no interval"
    return cell
