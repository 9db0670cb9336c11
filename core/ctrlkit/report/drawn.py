"""The report's figures: a chart per corpus value and per per-example value, and the
interference heatmap, each with its caption and a file name safe to write."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..statistics_text import describe_difference
from .figures import Bar, bar_chart, distribution_chart, heatmap
from .load import Report, best_rows, change_amplitude, lower_is_better



@dataclass
class Drawn:
    """A figure of the report: its file name (without suffix), kind, caption and matplotlib Figure."""

    name: str
    kind: str
    caption: str
    figure: object


def draw_figures(report: Report):
    """Every figure of the report, in the page's order: a bar chart per corpus value (intervals as
    error bars, the best of each dataset dark, each difference to the baseline beside its bar), a
    distribution per per-example value, the interference heatmap."""
    names: set[str] = set()
    for path in report.columns:
        best = best_rows(report, path)
        bars = [Bar(arm.label, arm.metrics.get(path), *(arm.intervals.get(path) or (None, None)), i in best,
                    describe_difference(arm.differences.get(path)) + (f" vs {arm.against}"
                                                                      if arm.differences.get(path) else ""))
                for i, arm in enumerate(report.arms)]
        caption = path + (" ↓" if lower_is_better(report, path) else "")
        yield Drawn(_file_name("bar-" + path, names), "bar", caption,
                    bar_chart(path, bars, lower_is_better(report, path)))
    for path in dict.fromkeys(path for arm in report.arms for path in arm.scores):
        series = [(arm.label, arm.scores[path]) for arm in report.arms if path in arm.scores]
        yield Drawn(_file_name("distribution-" + path, names), "distribution", path, distribution_chart(path, series))
    if report.interference:
        data = report.interference
        yield Drawn(_file_name("interference", names), "heatmap", "CA matrix",
                    heatmap(data["attributes"], data["values"],
                            lambda attribute, value: change_amplitude(data, attribute, value)))


def _file_name(name: str, taken: set) -> str:
    """``name`` as a file name of letters, digits, '.', '_' and '-' (a metric's name comes from a
    plugin), numbered when two names become one."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:80] or "figure"
    unique, k = safe, 2
    while unique in taken:
        unique, k = f"{safe}-{k}", k + 1
    taken.add(unique)
    return unique
