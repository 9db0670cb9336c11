"""Inline SVG charts for ``ctrlkit report``, drawn here so a report needs no JavaScript, fonts or
network: it opens the same anywhere, and shared model outputs can never run code in it.

Every text that comes from data goes through :func:`escape`; labels too long for their column
are shortened and keep the full text in a ``<title>`` tooltip.
"""

from __future__ import annotations

import html
import statistics
from typing import Sequence

LABEL_WIDTH = 170
PLOT_WIDTH = 260
VALUE_WIDTH = 70
FONT = 'font-family="system-ui, sans-serif" font-size="12"'
SMALL = 'font-family="system-ui, sans-serif" font-size="11"'
BAR = "#7f9cc0"
BEST = "#1f5fa8"
MUTED = "#666"


def escape(text) -> str:
    return html.escape(str(text), quote=True)


def show(value) -> str:
    """A value as the tables show it: counts as integers, scores to 4 places, null as undefined."""
    if value is None:
        return "undefined"
    if isinstance(value, int):
        return str(value)
    return f"{value:.4f}"


def bar_chart(items: Sequence[tuple[str, float | None]], best: set[int]) -> str:
    """One horizontal bar per ``(label, value)``; bars in ``best`` are dark. Zero is drawn as a
    line so negative values (STAS with embeddings can be negative) read correctly."""
    row = 24
    height = row * len(items) + 8
    width = LABEL_WIDTH + PLOT_WIDTH + VALUE_WIDTH
    scale = _Scale([v for _, v in items], include_zero=True)
    parts = [_open(width, height)]
    zero = LABEL_WIDTH + scale.x(0.0)
    for i, (label, value) in enumerate(items):
        y = 4 + i * row
        parts.append(_label(label, LABEL_WIDTH - 8, y + 16))
        if value is not None:
            left, right = sorted((zero, LABEL_WIDTH + scale.x(value)))
            parts.append(f'<rect x="{left:.1f}" y="{y + 3}" width="{max(right - left, 1):.1f}" height="{row - 6}" '
                         f'fill="{BEST if i in best else BAR}"><title>{escape(label)}: {show(value)}</title></rect>')
        ink = "#222" if value is not None else MUTED
        parts.append(f'<text x="{LABEL_WIDTH + PLOT_WIDTH + 6}" y="{y + 16}" {FONT} fill="{ink}">{show(value)}</text>')
    parts.append(f'<line x1="{zero:.1f}" x2="{zero:.1f}" y1="2" y2="{height - 2}" stroke="#333"/>')
    return "".join(parts) + "</svg>"


def distribution_chart(series: Sequence[tuple[str, Sequence[float | None]]], bins: int = 20) -> str:
    """A histogram row per ``(label, per-example values)`` on one shared axis, with the median as
    a dark tick, so the controllers' score distributions can be compared at a glance."""
    row, axis, plot = 44, 22, 240
    height = row * len(series) + axis
    width = LABEL_WIDTH + plot + 120
    scale = _Scale([v for _, values in series for v in values], include_zero=False, width=plot)
    parts = [_open(width, height)]
    for i, (label, values) in enumerate(series):
        top = i * row
        defined = [v for v in values if v is not None]
        parts.append(_label(label, LABEL_WIDTH - 8, top + row / 2 + 4))
        parts.append(f'<rect x="{LABEL_WIDTH}" y="{top + 4}" width="{plot}" height="{row - 8}" fill="#f3f5f8"/>')
        counts = [0] * bins
        for v in defined:
            counts[min(int(scale.fraction(v) * bins), bins - 1)] += 1
        tallest = max(counts) or 1
        for b, count in enumerate(counts):
            if count:
                h = (row - 10) * count / tallest
                parts.append(f'<rect x="{LABEL_WIDTH + b * plot / bins + 0.5:.1f}" y="{top + row - 5 - h:.1f}" '
                             f'width="{plot / bins - 1:.1f}" height="{h:.1f}" fill="{BAR}">'
                             f'<title>{count} examples</title></rect>')
        missing = len(values) - len(defined)
        counted = f"n {len(defined)}" + (f", {missing} undefined" if missing else "")
        if defined:
            median = statistics.median(defined)
            x = LABEL_WIDTH + scale.x(median)
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top + 4}" y2="{top + row - 4}" stroke="#222" '
                         f'stroke-width="2"><title>median {show(median)}</title></line>')
            parts.append(f'<text x="{LABEL_WIDTH + plot + 6}" y="{top + row / 2 - 2}" {FONT}>'
                         f'mean {statistics.fmean(defined):.3f}</text>')
        parts.append(f'<text x="{LABEL_WIDTH + plot + 6}" y="{top + row / 2 + 13}" {SMALL} fill="{MUTED}">'
                     f'{counted}</text>')
    base = row * len(series) + 14
    for fraction, anchor in ((0.0, "start"), (0.5, "middle"), (1.0, "end")):
        parts.append(f'<text x="{LABEL_WIDTH + fraction * plot:.1f}" y="{base}" text-anchor="{anchor}" '
                     f'{FONT} fill="{MUTED}">{show(scale.value(fraction))}</text>')
    return "".join(parts) + "</svg>"


def heatmap(rows: Sequence[str], columns: Sequence[str], cell) -> str:
    """A grid coloured by ``cell(row, column)`` (a number or None) with the number written in each
    cell, and a colour scale beneath. Signed values get a diverging scale centred on zero, so
    "no effect" is always white."""
    cell_width, cell_height = 96, 32
    values = [cell(r, c) for r in rows for c in columns]
    defined = [v for v in values if v is not None]
    limit = max((abs(v) for v in defined), default=0.0) or 1.0
    signed = any(v < 0 for v in defined)
    # Column labels run up at 40 degrees, so long metric names need no shortening below 40 characters.
    slant = 6.5 * min(max((len(str(c)) for c in columns), default=0), 40)
    header = 20 + 0.65 * slant
    width = max(LABEL_WIDTH + cell_width * (len(columns) - 0.5) + 0.77 * slant, LABEL_WIDTH + 300) + 10
    grid_bottom = header + cell_height * len(rows)
    height = grid_bottom + 60
    parts = [_open(width, height)]
    for j, column in enumerate(columns):
        x, y = LABEL_WIDTH + cell_width * (j + 0.5), header - 8
        parts.append(f'<g transform="rotate(-40 {x:.1f} {y:.1f})">{_label(column, x, y, anchor="start", room=280)}</g>')
    for i, row_name in enumerate(rows):
        y = header + i * cell_height
        parts.append(_label(row_name, LABEL_WIDTH - 8, y + cell_height / 2 + 4))
        for j, column in enumerate(columns):
            value = cell(row_name, column)
            x = LABEL_WIDTH + j * cell_width
            fill = "#e6e6e6" if value is None else _colour(value / limit, signed)
            ink = "#fff" if value is not None and abs(value) / limit > 0.6 else "#222"
            parts.append(f'<rect x="{x}" y="{y}" width="{cell_width}" height="{cell_height}" fill="{fill}" '
                         f'stroke="#fff"><title>{escape(row_name)} / {escape(column)}: {show(value)}</title></rect>'
                         f'<text x="{x + cell_width / 2}" y="{y + cell_height / 2 + 4}" text-anchor="middle" '
                         f'{FONT} fill="{ink}">{show(value)}</text>')
    parts.append(_legend(LABEL_WIDTH, grid_bottom + 16, limit, signed))
    return "".join(parts) + "</svg>"


def _legend(x: float, y: float, limit: float, signed: bool) -> str:
    """The colour scale as ten steps with its ends (and zero) labelled."""
    steps, step_width = 10, 30
    low = -limit if signed else 0.0
    parts = []
    for k in range(steps):
        value = low + (limit - low) * (k + 0.5) / steps
        parts.append(f'<rect x="{x + k * step_width}" y="{y}" width="{step_width}" height="12" '
                     f'fill="{_colour(value / limit, signed)}"/>')
    parts.append(f'<rect x="{x}" y="{y}" width="{steps * step_width}" height="12" fill="none" stroke="#999"/>')
    marks = [(0.0, low, "start"), (1.0, limit, "end")] + ([(0.5, 0.0, "middle")] if signed else [])
    for fraction, value, anchor in marks:
        parts.append(f'<text x="{x + fraction * steps * step_width}" y="{y + 28}" text-anchor="{anchor}" {FONT} '
                     f'fill="{MUTED}">{show(value)}</text>')
    return "".join(parts)


def _colour(t: float, signed: bool) -> str:
    """White at 0, blue towards +1, red towards -1 (``t`` is the value over the largest magnitude)."""
    t = max(-1.0, min(1.0, t))
    end = (33, 102, 172) if t >= 0 else (178, 24, 43)
    if not signed:
        t = abs(t)
    mix = [round(255 + (channel - 255) * abs(t)) for channel in end]
    return "#{:02x}{:02x}{:02x}".format(*mix)


def _open(width: float, height: float) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img">')


def _label(text: str, x: float, y: float, anchor: str = "end", room: float = LABEL_WIDTH - 12) -> str:
    """A label that fits ``room`` pixels (about 7 per character), with the full text as a tooltip."""
    text = str(text)
    fits = max(int(room / 7), 4)
    shown = text if len(text) <= fits else text[: fits - 1] + "…"
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {FONT}><title>{escape(text)}</title>'
            f'{escape(shown)}</text>')


class _Scale:
    """Maps values onto ``width`` pixels; a range of one value is widened so nothing divides by zero."""

    def __init__(self, values, include_zero: bool, width: float = PLOT_WIDTH):
        self.width = width
        defined = [v for v in values if v is not None] or [0.0]
        self.low, self.high = min(defined), max(defined)
        if include_zero:
            self.low, self.high = min(self.low, 0.0), max(self.high, 0.0)
        if self.high == self.low:  # with include_zero, only when every value is 0
            self.low, self.high = (0.0, 1.0) if include_zero else (self.low - 0.5, self.low + 0.5)

    def fraction(self, value: float) -> float:
        return (value - self.low) / (self.high - self.low)

    def x(self, value: float) -> float:
        return self.fraction(value) * self.width

    def value(self, fraction: float) -> float:
        return self.low + fraction * (self.high - self.low)
