"""Meta-evaluation: how well a metric agrees with human judgements, summary by summary.

Reads rows (a samples.jsonl, or any list of dicts) and correlates a human score with each
metric score, both addressed by dotted paths (``given.human``, ``scores.rouge.rougeL``):
Pearson, Spearman and Kendall, each with its p-value (scipy.stats). Rows where either value is
missing are left out and counted; a correlation that is undefined (fewer than three pairs, or
a constant series) is reported as None with the reason.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from .errors import CtrlkitError

CORRELATIONS = ("pearson", "spearman", "kendall")


def lookup(row: dict, path: str) -> Any:
    """``lookup({"a": {"b": 1}}, "a.b") == 1``; None when any step is absent."""
    value: Any = row
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def numeric_paths(row: dict, prefix: str = "scores") -> list[str]:
    """Every numeric leaf under ``prefix`` (the metric values of a sample)."""
    found = []

    def walk(value, path):
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{path}.{key}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found.append(path)

    walk(lookup(row, prefix), prefix)
    return found


def correlate(human: Sequence[float], metric: Sequence[float]) -> dict:
    """Pearson, Spearman and Kendall correlation (with p-values) of two equal-length series."""
    from scipy import stats

    if len(human) < 3:
        return {"n": len(human), "undefined": "fewer than 3 pairs"}
    if len(set(human)) < 2 or len(set(metric)) < 2:
        return {"n": len(human), "undefined": "a constant series has no correlation"}
    out: dict[str, Any] = {"n": len(human)}
    for name, function in zip(CORRELATIONS, (stats.pearsonr, stats.spearmanr, stats.kendalltau)):
        statistic, p_value = function(human, metric)
        out[name] = {"r": float(statistic), "p": float(p_value)}
    return out


def meta_evaluate(rows: Iterable[dict], human: str, scores: Sequence[str] | None = None) -> dict:
    """``{score path: correlation}`` of each score with the human score ``human``."""
    rows = list(rows)
    if not rows:
        raise CtrlkitError("meta-evaluation needs at least one row")
    # a score may be absent from some rows (a metric scores only the rows carrying its control)
    paths = list(scores) if scores else list(dict.fromkeys(path for row in rows for path in numeric_paths(row)))
    if not paths:
        raise CtrlkitError("no metric scores found under 'scores'; name them with --score PATH")
    report = {}
    for path in paths:
        pairs = [(lookup(row, human), lookup(row, path)) for row in rows]
        kept = [(h, m) for h, m in pairs if _is_number(h) and _is_number(m)]
        if not any(_is_number(h) for h, _ in pairs):
            raise CtrlkitError(f"no row has a number at '{human}'")
        result = correlate([h for h, _ in kept], [m for _, m in kept])
        result["left_out"] = len(pairs) - len(kept)
        report[path] = result
    return report


def format_report(report: dict) -> str:
    """The report as a text table: per score, n and each correlation's r and two-sided p-value
    (three significant digits: 0.0123, 4.56e-08)."""
    width = max(len("score"), *(len(path) for path in report))
    header = "  ".join(f"{name:>8}  {'p':>9}" for name in CORRELATIONS)
    lines = [f"{'score':<{width}}  {'n':>5}  {header}"]
    for path, result in report.items():
        if "undefined" in result:
            lines.append(f"{path:<{width}}  {result['n']:>5}  undefined: {result['undefined']}")
            continue
        cells = "  ".join(f"{result[name]['r']:>8.4f}  {result[name]['p']:>9.3g}" for name in CORRELATIONS)
        lines.append(f"{path:<{width}}  {result['n']:>5}  {cells}")
    return "\n".join(lines)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
