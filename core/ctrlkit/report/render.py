"""The report as one self-contained HTML page (escaped, no scripts, a policy forbidding them) and
as a Markdown file."""

from __future__ import annotations

import html
import json

from ..markdown import escape_markdown as _md, markdown_table as _md_table
from ..statistics_text import describe_difference, describe_interval, show
from ..sweeps.compare import reference_phrase
from .drawn import Drawn, draw_figures
from .figures import inline_svg
from .load import Arm, Report, best_rows, change_amplitude, describe_control, examples_to_show, lower_is_better, \
    prediction_of, undefined_cells

INTERVAL_NOTE = ("[low, high]: the 95% bootstrap interval of a value, resampling the examples' groups (the examples "
                 "that share a document are drawn together)")
BASELINE_NOTE = "the difference to the baseline has its paired bootstrap interval and a paired permutation p-value."
BEST_NOTE = ("Best value per column among the controllers of each dataset and backbone in bold (none where a value "
             "has no better way, as a count); ↓ marks a value where lower is better.")


def escape(text) -> str:
    return html.escape(str(text), quote=True)


STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; color: #222; max-width: 1200px; margin: 24px auto; padding: 0 20px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 28px 0 10px; border-bottom: 1px solid #ddd; }
h3 { font-size: 15px; margin: 18px 0 6px; overflow-wrap: anywhere; }
.facts { color: #555; margin: 0 0 8px; } .note { color: #666; font-size: 12px; }
.wide { overflow-x: auto; } table { border-collapse: collapse; margin: 6px 0; } th, td { padding: 4px 10px; border-bottom: 1px solid #e3e3e3; }
th { text-align: left; background: #f4f6f9; } td.value { text-align: right; font-variant-numeric: tabular-nums; }
td.best { font-weight: 700; color: #1f5fa8; } .undefined { color: #999; }
.charts { display: flex; flex-wrap: wrap; gap: 10px 28px; } figure { margin: 0; }
figcaption { font-weight: 600; margin: 4px 0; overflow-wrap: anywhere; }
.controls { color: #444; margin: 0 0 6px; } .controls b { font-weight: 600; }
.outputs { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 10px; }
.output { border: 1px solid #dde2ea; border-radius: 4px; padding: 6px 10px; background: #fafbfc; }
.output h4 { margin: 0 0 4px; font-size: 13px; color: #1f5fa8; overflow-wrap: anywhere; }
.output p { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.output.reference { background: #f4f8f1; border-color: #cfdcc6; } .output.reference h4 { color: #3d6b2a; }
.output .scores { color: #555; font-size: 12px; margin-top: 4px; } .interval { display: block; color: #666; font-size: 11px; font-weight: 400; }
pre { background: #f6f6f6; padding: 8px; overflow-x: auto; font-size: 12px; }
"""


POLICY = "default-src 'none'; style-src 'unsafe-inline'"


def render_html(report: Report, examples: int, drawn: list[Drawn] | None = None) -> str:
    """The report page: facts, table, bar charts, distributions, interference, examples, config;
    ``drawn``: the figures of :func:`draw_figures`, when the caller has them already."""
    columns = report.columns
    drawn = list(draw_figures(report)) if drawn is None else drawn
    figures = {kind: [_figure(d.kind, d.caption, inline_svg(d.figure)) for d in drawn if d.kind == kind]
               for kind in ("bar", "distribution", "heatmap")}
    facts = " · ".join(f"{escape(k)}: {escape(v)}" for k, v in report.facts.items() if v is not None)
    parts = [f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
             f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
             f"<title>ctrlkit report: {escape(report.title)}</title><style>{STYLE}</style></head><body>"
             f"<h1>ctrlkit report: {escape(report.title)}</h1><p class=\"facts\">{facts}</p>"]
    if report.arms:
        parts += ["<h2>Scores</h2>", _html_table(report, columns), f'<p class="note">{BEST_NOTE}</p>']
        if _has_intervals(report):
            parts.append(f'<p class="note">{escape(interval_note(report))}</p>')
        parts += ['<h2>By controller</h2><p class="note">Error bars are 95% bootstrap intervals where the run '
                  'computed them; an axis that does not start at 0 says where it starts.</p><div class="charts">',
                  *figures["bar"], "</div>"]
    if figures["distribution"]:
        parts += ['<h2>Per-example scores</h2><p class="note">A box per controller: the box holds the middle half '
                  'of the examples, the line is the median, the triangle the mean, whiskers reach 1.5 box lengths '
                  'and points beyond them are drawn singly.</p><div class="charts">', *figures["distribution"],
                  "</div>"]
    if report.interference:
        parts.append(_html_interference(report.interference, figures["heatmap"]))
    shown = list(examples_to_show(report, examples))
    if shown:
        parts.append("<h2>Examples</h2>")
    for group, items, arms in shown:
        heading = "h4" if len(report.controls) > 1 else "h3"
        if heading == "h4":
            parts.append(f"<h3>{escape(group)}</h3>")
        for identifier, controls in items:
            described = "; ".join(f"<b>{escape(k)}</b>: {escape(describe_control(v))}" for k, v in controls.items())
            parts.append(f'<{heading}>{escape(identifier)}</{heading}><p class="controls">{described}</p>'
                         '<div class="outputs">')
            for k, reference in enumerate(_references(report, group, identifier)):
                parts.append(f'<div class="output reference"><h4>reference{f" {k + 1}" if k else ""}</h4>'
                             f'<p>{escape(reference)}</p></div>')
            for arm in arms:
                text, scores = prediction_of(arm, identifier), _example_scores(report, arm, identifier)
                parts.append(f'<div class="output"><h4>{escape(arm.label)}</h4><p>{escape(text)}</p>'
                             + (f'<p class="scores">{escape(scores)}</p>' if scores else "") + "</div>")
            parts.append("</div>")
    parts.append(_details("Configuration", report.config) + "</body></html>")
    return "\n".join(parts) + "\n"


def _references(report: Report, group: str, identifier: str) -> list[str]:
    return (report.references.get(group) or {}).get(identifier) or []


def _example_scores(report: Report, arm: Arm, identifier: str) -> str:
    """An output's own scores, as ``stas 0.9000 · length.mad 0.0000``."""
    return " · ".join(f"{path} {report.show(path, value)}" for path, value in arm.example_scores.get(identifier, {}).items())


def _has_intervals(report: Report) -> bool:
    return any(arm.intervals or arm.differences for arm in report.arms)


def interval_note(report: Report) -> str:
    """What the intervals and differences of the table are; in a sweep that compared its rows
    (table.json's ``comparisons``), which row each is compared with and that each p is given twice,
    as tested and as Holm's correction across the table adjusted it."""
    comparisons = report.comparisons
    if not comparisons:
        return f"{INTERVAL_NOTE}; {BASELINE_NOTE}"
    if not comparisons["tests"]:
        return f"{INTERVAL_NOTE}."
    return (f"{INTERVAL_NOTE}. Each row is compared with its reference row ({reference_phrase(comparisons)}): "
            "the line below it gives the difference (row − reference), its paired bootstrap interval, the paired "
            "permutation p and, in parentheses, that p adjusted by Holm's method across the table's "
            f"{comparisons['tests']} comparisons, as table.md gives it.")


def _html_table(report: Report, columns: list[str]) -> str:
    best = {path: best_rows(report, path) for path in columns}
    head = "".join(f"<th>{escape(c)}{' ↓' if lower_is_better(report, c) else ''}</th>" for c in columns)
    rows = []
    for i, arm in enumerate(report.arms):
        cells = []
        for path in columns:
            value = arm.metrics.get(path)
            kind = "value best" if i in best[path] else "value undefined" if value is None else "value"
            interval = describe_interval(arm.intervals.get(path))
            shown = report.show(path, value) + (f'<span class="interval">{interval}</span>' if interval else "")
            cells.append(f'<td class="{kind}">{shown}</td>')
        rows.append(f"<tr><th>{escape(arm.label)}</th>{''.join(cells)}</tr>")
        if arm.differences:
            cells = "".join(f'<td class="value">{describe_difference(arm.differences.get(path))}</td>' for path in columns)
            rows.append(f"<tr><th>{escape(arm.label)} − {escape(arm.against)}</th>{cells}</tr>")
    # a wide table (many metric values) scrolls in its own box instead of running off the page
    return f'<div class="wide"><table><tr><th>controller</th>{head}</tr>{"".join(rows)}</table></div>'


def _html_interference(data: dict, figures: list[str]) -> str:
    """The CA matrix as a table and a heatmap, the reasons of its undefined cells, its configuration."""
    attributes, values = data["attributes"], data["values"]
    head = "".join(f"<th>{escape(value)}</th>" for value in values)
    rows = "".join(f"<tr><th>{escape(attribute)}</th>" + "".join(
        f'<td class="value{" undefined" if change_amplitude(data, attribute, value) is None else ""}">'
        f"{show(change_amplitude(data, attribute, value))}</td>" for value in values) + "</tr>"
        for attribute in attributes)
    undefined = "".join(f"<li>{escape(attribute)} / {escape(value)}: {escape(why)}</li>"
                        for attribute, value, why in undefined_cells(data))
    return "".join([
        "<h2>Interference</h2>",
        f'<p class="note">{_CA_NOTE}; {escape(data.get("n_examples"))} examples.</p>',
        f'<div class="wide"><table><tr><th>attribute</th>{head}</tr>{rows}</table></div>',
        *figures,
        f'<p class="note">Undefined cells:</p><ul class="note">{undefined}</ul>' if undefined else "",
        _details("Interference configuration", data.get("config"))])


_CA_NOTE = ("CA, the change amplitude |new − base| / |base| of each metric value (columns) when one attribute "
            "(rows) is changed to another example's value")


def _figure(kind: str, caption: str, svg: str) -> str:
    return f'<figure class="chart {kind}"><figcaption>{escape(caption)}</figcaption>{svg}</figure>'


def _details(summary: str, data) -> str:
    if not data:
        return ""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    return f"<details><summary>{escape(summary)}</summary><pre>{escape(text)}</pre></details>"


def render_markdown(report: Report, examples: int) -> str:
    """The table, the interference matrix and the example outputs, as Markdown."""
    columns = report.columns
    lines = [f"# ctrlkit report: {_md(report.title)}", "",
             " · ".join(f"{_md(k)}: {_md(v)}" for k, v in report.facts.items() if v is not None)]
    if report.arms:
        best = {path: best_rows(report, path) for path in columns}
        rows = []
        for i, arm in enumerate(report.arms):
            rows.append([_md(arm.label)] + [" ".join(filter(None, [
                f"**{report.show(c, arm.metrics.get(c))}**" if i in best[c] else report.show(c, arm.metrics.get(c)),
                describe_interval(arm.intervals.get(c))])) for c in columns])
            if arm.differences:
                rows.append([f"{_md(arm.label)} − {_md(arm.against)}"]
                            + [describe_difference(arm.differences.get(c)) for c in columns])
        lines += ["", "## Scores", ""]
        lines += _md_table(["controller"] + [_md(c) + (" ↓" if lower_is_better(report, c) else "") for c in columns],
                           rows)
        lines += ["", BEST_NOTE] + (["", _md(interval_note(report))] if _has_intervals(report) else [])
    if report.interference:
        data = report.interference
        lines += ["", "## Interference", "", f"{_CA_NOTE} (the heatmap is in the HTML report).", "",
                  f"Examples: {_md(data.get('n_examples'))}", ""]
        lines += _md_table(["attribute"] + [_md(v) for v in data["values"]],
                           [[_md(a)] + [show(change_amplitude(data, a, v)) for v in data["values"]]
                            for a in data["attributes"]])
        undefined = undefined_cells(data)
        if undefined:
            lines += ["", "Undefined cells:", ""]
            lines += [f"- {_md(attribute)} / {_md(value)}: {_md(why)}" for attribute, value, why in undefined]
    shown = list(examples_to_show(report, examples))
    if shown:
        lines += ["", "## Examples"]
    for group, items, arms in shown:
        several = len(report.controls) > 1
        if several:
            lines += ["", f"### {_md(group)}"]
        for identifier, controls in items:
            lines += ["", f"{'####' if several else '###'} {_md(identifier)}", ""]
            if controls:
                lines += ["; ".join(f"{_md(k)}: {_md(describe_control(v))}" for k, v in controls.items()), ""]
            lines += [f"- reference{f' {k + 1}' if k else ''}: {_md(reference)}"
                      for k, reference in enumerate(_references(report, group, identifier))]
            for arm in arms:
                scores = _example_scores(report, arm, identifier)
                lines.append(f"- **{_md(arm.label)}**: {_md(prediction_of(arm, identifier))}"
                             + (f" ({_md(scores)})" if scores else ""))
    return "\n".join(lines) + "\n"
