"""The report's figures, drawn with matplotlib: one drawing per figure, saved as a file a paper can
use (``ctrlkit report --figures pdf|png|svg``) or embedded in the HTML page as inline SVG.

matplotlib is imported inside the functions that draw (never at CLI start-up), without pyplot:
each drawing is a bare :class:`~matplotlib.figure.Figure`, so there is no global state or window
backend. Text from data is never read as mathtext (``text.parse_math`` off), and the same
settings make every file reproducible: a fixed SVG id salt and no dates in the metadata.

The SVG embedded in the page is rebuilt from matplotlib's from an allow-list of shapes and
attributes (:func:`inline_svg`): no stylesheet, metadata, clip paths or references (``<use>`` is
replaced by a copy of what it names), so the page holds no link and no ``url(``; every text is
escaped when the SVG is written out again.
"""

from __future__ import annotations

import io
import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from ..errors import CtrlkitError
from ..files import atomic_write_bytes
from ..statistics_text import show

FORMATS = ("pdf", "png", "svg")
BAR = "#9bb3d3"
BEST = "#1f5fa8"
MUTED = "#666666"
STYLE = {
    "svg.hashsalt": "ctrlkit",  # the ids matplotlib writes into an SVG, the same on every run
    "svg.fonttype": "none",  # text stays text (escaped) rather than glyph outlines
    "pdf.fonttype": 42,  # TrueType fonts embedded whole, as journals ask
    "text.parse_math": False,  # a label such as "$x$" from the data is shown as written
    "font.family": "sans-serif",
    "font.sans-serif": ["DejaVu Sans"],  # shipped with matplotlib: nothing to find or download
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
NO_DATES = {"svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}, "png": {}}


@dataclass
class Bar:
    """One bar: a controller's value of a metric, its interval (``low``, ``high``, or None), whether
    it is the best of its dataset, and a note written beside it (its difference to the baseline)."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    best: bool = False
    note: str = ""


def _matplotlib():
    """matplotlib's ``rc_context`` and ``Figure``, imported on first use."""
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        raise CtrlkitError("ctrlkit report draws its figures with matplotlib, which is not installed: "
                           "pip install matplotlib") from None
    return matplotlib, Figure




def value_axis(numbers: Sequence[float]) -> tuple[float, float, bool]:
    """``(start, end, from_zero)`` of a value axis holding ``numbers`` (values and interval ends).
    It starts at zero when zero lies within one data range of the data, or there is one value
    (bars then show ratios truly); otherwise it spans the data with a margin, so a difference of 0.004 between values
    near 0.34 can be seen, and ``from_zero`` is False so the axis can say where it starts."""
    numbers = [x for x in numbers if x is not None and math.isfinite(x)] or [0.0]
    low, high = min(numbers), max(numbers)
    span = high - low
    from_zero = low <= 0 <= high or span == 0 or min(abs(low), abs(high)) <= span
    if from_zero:
        low, high = min(low, 0.0), max(high, 0.0)
    if high == low:  # every value is 0
        high = 1.0
    margin = 0.06 * (high - low)
    start = low if from_zero and low == 0 else low - margin
    end = high if from_zero and high == 0 else high + margin
    return start, end, from_zero


def bar_chart(title: str, bars: Sequence[Bar], lower_is_better: bool = False):
    """One horizontal bar per controller with its interval as an error bar, the best of each
    dataset dark, the value (and any note) written beside it, on a value axis chosen by
    :func:`value_axis`; a bar starts at zero, or at the axis' start when the axis does not hold zero."""
    matplotlib, Figure = _matplotlib()
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(6.4, 0.9 + 0.34 * len(bars)))
        axes = figure.add_subplot()
        start, end, from_zero = value_axis([x for b in bars for x in (b.value, b.low, b.high)])
        base = 0.0 if from_zero else start if end > 0 else end
        rows = range(len(bars))[::-1]  # the first bar on top
        drawn = [(y, b) for y, b in zip(rows, bars) if b.value is not None]
        axes.barh([y for y, _ in drawn], [b.value - base for _, b in drawn], left=base, height=0.62,
                  color=[BEST if b.best else BAR for _, b in drawn])
        with_interval = [(y, b) for y, b in drawn if b.low is not None and b.high is not None]
        if with_interval:
            axes.errorbar([b.value for _, b in with_interval], [y for y, _ in with_interval],
                          xerr=[[b.value - b.low for _, b in with_interval], [b.high - b.value for _, b in with_interval]],
                          fmt="none", ecolor="#222222", elinewidth=1.1, capsize=3, gid="intervals")
        for y, b in zip(rows, bars):
            text = show(b.value) + (f"   {b.note}" if b.note else "")
            axes.text(1.02, y, text, transform=axes.get_yaxis_transform(), va="center",
                      color="#222222" if b.value is not None else MUTED)
        axes.set_yticks(list(rows), [b.label for b in bars])
        axes.set_ylim(-0.6, len(bars) - 0.4)
        axes.set_xlim(start, end)
        if from_zero and start < 0 < end:
            axes.axvline(0.0, color="#333333", linewidth=0.8)
        axes.grid(axis="x", color="#e3e3e3", linewidth=0.6)
        axes.set_axisbelow(True)
        axis = title + (" (lower is better)" if lower_is_better else "")
        if not from_zero:
            axis += f"; the axis starts at {start:.4g}, not at 0"
        axes.set_xlabel(axis)
        if with_interval:
            axes.set_title("error bars: 95% bootstrap intervals", loc="left", fontsize=8, color=MUTED)
    return figure


def distribution_chart(title: str, series: Sequence[tuple[str, Sequence[float | None]]]):
    """A box per controller of its per-example values on one shared axis (the line is the
    median, the triangle the mean, whiskers reach 1.5 interquartile ranges, points beyond them are
    drawn singly); each label counts the examples and those without a value."""
    matplotlib, Figure = _matplotlib()
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(6.4, 0.9 + 0.42 * len(series)))
        axes = figure.add_subplot()
        rows = list(range(len(series)))[::-1]
        labels = []
        for y, (name, values) in zip(rows, series):
            defined = [v for v in values if v is not None]
            missing = len(values) - len(defined)
            labels.append(f"{name} (n {len(defined)}" + (f", {missing} undefined)" if missing else ")"))
            if defined:
                axes.boxplot([defined], positions=[y], orientation="horizontal", widths=0.55, showmeans=True,
                             patch_artist=True, boxprops={"facecolor": BAR, "edgecolor": "#333333"},
                             medianprops={"color": "#111111", "linewidth": 1.6},
                             meanprops={"marker": "^", "markerfacecolor": BEST, "markeredgecolor": BEST,
                                        "markersize": 5},
                             flierprops={"marker": "o", "markersize": 3, "markeredgecolor": MUTED})
        axes.set_yticks(rows, labels)
        axes.set_ylim(-0.6, len(series) - 0.4)
        axes.grid(axis="x", color="#e3e3e3", linewidth=0.6)
        axes.set_axisbelow(True)
        axes.set_xlabel(f"{title}, per example")
    return figure


def heatmap(rows: Sequence[str], columns: Sequence[str], cell: Callable[[str, str], float | None]):
    """A grid coloured by ``cell(row, column)`` (a number, or None: grey, "undefined") with the number
    in each cell and a colour bar; signed values get a diverging scale centred on zero, so "no
    effect" is always white."""
    matplotlib, Figure = _matplotlib()
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.patches import Rectangle

    values = [[cell(r, c) for c in columns] for r in rows]
    defined = [v for row in values for v in row if v is not None]
    limit = max((abs(v) for v in defined), default=0.0) or 1.0
    signed = any(v < 0 for v in defined)
    norm = Normalize(-limit if signed else 0.0, limit)
    colours = matplotlib.colormaps["RdBu" if signed else "Blues"]
    with matplotlib.rc_context(STYLE):
        figure = Figure(figsize=(1.6 + 1.05 * max(len(columns), 2), 1.4 + 0.42 * len(rows)))
        axes = figure.add_subplot()
        for i, row in enumerate(values):
            for j, value in enumerate(row):
                fill = "#e6e6e6" if value is None else colours(norm(value))
                axes.add_patch(Rectangle((j, i), 1, 1, facecolor=fill, edgecolor="white", linewidth=1.5))
                dark = value is not None and abs(value) / limit > 0.6
                axes.text(j + 0.5, i + 0.5, show(value), ha="center", va="center", fontsize=8,
                          color="white" if dark else "#222222")
        axes.set_xlim(0, len(columns))
        axes.set_ylim(len(rows), 0)
        axes.set_xticks([j + 0.5 for j in range(len(columns))], list(columns), rotation=40, ha="right",
                        rotation_mode="anchor")
        axes.set_yticks([i + 0.5 for i in range(len(rows))], list(rows))
        axes.tick_params(length=0)
        for side in axes.spines.values():
            side.set_visible(False)
        scale = figure.colorbar(ScalarMappable(norm=norm, cmap=colours), ax=axes, fraction=0.05, pad=0.03)
        scale.solids.set_rasterized(False)  # shapes, not an embedded image, in SVG and PDF
    return figure


def save(figure, path, format: str) -> None:
    """Write ``figure`` as a ``format`` file (pdf, png or svg), the same bytes for the same figure."""
    if format not in FORMATS:
        raise CtrlkitError(f"--figures {format}: choose one of {', '.join(FORMATS)}")
    # through the one safe path: a temporary file of a random name, made exclusively (a planted
    # NAME.partial link is never written through), renamed into place (a reader never finds half a file)
    atomic_write_bytes(Path(path), _rendered(figure, format))


def _rendered(figure, format: str) -> bytes:
    matplotlib, _ = _matplotlib()
    buffer = io.BytesIO()
    with matplotlib.rc_context(STYLE):
        figure.savefig(buffer, format=format, metadata=NO_DATES[format], bbox_inches="tight", pad_inches=0.04,
                       dpi=200)
    return buffer.getvalue()


# What the page's SVG may hold, however matplotlib changes: shapes, groups and text, and their
# geometry and presentation; never a reference, script, link, stylesheet or foreign content.
_ELEMENTS = {"svg", "g", "path", "rect", "line", "polyline", "polygon", "text", "tspan"}
_ATTRIBUTES = {"d", "x", "y", "x1", "x2", "y1", "y2", "width", "height", "points", "transform", "style",
               "viewBox", "version", "text-anchor", "dominant-baseline", "fill", "stroke", "stroke-width"}
_XLINK = "{http://www.w3.org/1999/xlink}href"


def inline_svg(figure) -> str:
    """``figure`` as an SVG element to embed in an HTML page (see the module's docstring)."""
    root = ET.fromstring(_rendered(figure, "svg"))
    named = {element.get("id"): element for element in root.iter() if element.get("id")}
    clean = _clean(root, named)
    clean.set("xmlns", "http://www.w3.org/2000/svg")
    clean.set("role", "img")
    return ET.tostring(clean, encoding="unicode")


def _clean(element, named: dict, depth: int = 0):
    """A copy of ``element`` of allowed elements and attributes only; a ``<use>`` becomes a group
    holding a copy of the element it names, moved where the ``<use>`` put it."""
    tag = element.tag.rsplit("}", 1)[-1]
    if tag == "use":
        target = named.get((element.get(_XLINK) or element.get("href") or "").lstrip("#"))
        if target is None or depth > 8:
            return None
        copy = ET.Element("g", {"transform": f"translate({float(element.get('x', 0)):g} {float(element.get('y', 0)):g})"})
        if element.get("style"):
            copy.set("style", _style(element.get("style")))
        inner = _clean(target, named, depth + 1)
        if inner is not None:
            copy.append(inner)
        return copy
    if tag not in _ELEMENTS:
        return None
    copy = ET.Element(tag, {name: value if name != "style" else _style(value)
                            for name, value in element.attrib.items() if name in _ATTRIBUTES})
    copy.text = element.text if tag in ("text", "tspan") else None
    for child in element:
        cleaned = _clean(child, named, depth)
        if cleaned is not None:
            copy.append(cleaned)
        if cleaned is not None and tag in ("text", "tspan"):
            cleaned.tail = child.tail
    return copy


def _style(style: str) -> str:
    """A style attribute without any declaration that refers elsewhere (``url(...)``)."""
    return ";".join(part for part in style.split(";") if "url(" not in part.lower() and "\\" not in part)
