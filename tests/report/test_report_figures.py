"""The report's figures (ctrlkit.report.figures): intervals drawn as error bars, the value axis, the
difference to the baseline, files in each format and the same bytes on every run, the page's SVG
inert with hostile labels, and the examples with their references and scores."""

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from matplotlib.container import BarContainer, ErrorbarContainer

from ctrlkit.errors import CtrlkitError
from ctrlkit.report.figures import BEST, value_axis
from ctrlkit.report.drawn import draw_figures
from ctrlkit.report.load import load
from ctrlkit.report.write import write_report

from helpers import invoke_ctrlkit

SCRIPT = "<script>alert(1)</script>"
HOSTILE = "<svg onload=alert(2)>$\\frac{a}{b}$ ]]> &amp; \"x\""
INTERVALS = {"stas": {"stas": {"low": 0.3401, "high": 0.3523, "se": 0.003}},
             "rouge": {"rouge1": {"low": 0.21, "high": 0.29, "se": 0.02}}}
BASELINE_INTERVALS = {"stas": {"stas": {"low": 0.3360, "high": 0.3481, "se": 0.003}},
                      "rouge": {"rouge1": {"low": 0.20, "high": 0.27, "se": 0.02}}}
PAIRED = {"stas": {"stas": {"difference": 0.004, "low": -0.0012, "high": 0.0093, "se": 0.0027, "p": 0.21}}}


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def _run(folder: Path, controller="tag", metric="stas", with_intervals=True) -> Path:
    """A run of ``controller`` against a none baseline, with intervals and a paired test unless
    ``with_intervals`` is False (a results.json written before they existed)."""
    results = {"config": {"dataset": "sample", "controller": controller, "backbone": "extractive"}, "n_examples": 2,
               "metrics": {metric: {"stas": 0.346}, "rouge": {"rouge1": 0.25}},
               "baseline": {"controller": "none", "metrics": {metric: {"stas": 0.342}, "rouge": {"rouge1": 0.23}}}}
    if with_intervals:
        rename = lambda data: {metric if key == "stas" else key: value for key, value in data.items()}  # noqa: E731
        results |= {"intervals": rename(INTERVALS), "paired": rename(PAIRED)}
        results["baseline"]["intervals"] = rename(BASELINE_INTERVALS)
    _write(folder / "results.json", results)
    rows = [{"id": f"ex-{i}", "controls": {"topic": "sports"}, "references": [f"Reference {i} {SCRIPT}"],
             "prediction": f"Prediction {i}", "scores": {metric: {"stas": 0.5 + i / 4}, "rouge": {"rouge1": 0.25}},
             "baseline": {"prediction": f"Baseline {i}", "scores": {metric: {"stas": 0.375}, "rouge": {"rouge1": 0.125}}}}
            for i in range(2)]
    (folder / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return folder


def _figure(folder: Path, name: str):
    return next(drawn for drawn in draw_figures(load(folder)) if drawn.name == name).figure


def test_error_bars_are_the_recorded_intervals_and_the_best_bar_is_marked(tmp_path):
    axes = _figure(_run(tmp_path / "run"), "bar-stas").axes[0]
    errors = [c for c in axes.containers if isinstance(c, ErrorbarContainer)]
    assert len(errors) == 1
    segments = errors[0].lines[2][0].get_segments()
    # top bar: the run (tag), then the baseline; each segment spans (low, y) to (high, y)
    drawn = sorted(((s[0][1], s[0][0], s[1][0]) for s in segments), reverse=True)
    expected = [(INTERVALS["stas"]["stas"]["low"], INTERVALS["stas"]["stas"]["high"]),
                (BASELINE_INTERVALS["stas"]["stas"]["low"], BASELINE_INTERVALS["stas"]["stas"]["high"])]
    assert [x for _, low, high in drawn for x in (low, high)] == pytest.approx([x for pair in expected for x in pair],
                                                                               abs=1e-12)
    bars = next(c for c in axes.containers if isinstance(c, BarContainer))
    tips = [patch.get_x() + patch.get_width() for patch in bars.patches]
    assert tips == pytest.approx([0.346, 0.342])
    colours = [patch.get_facecolor() for patch in bars.patches]
    from matplotlib.colors import to_rgba
    assert colours[0] == to_rgba(BEST) and colours[1] != to_rgba(BEST)  # higher stas is better: tag


def test_the_axis_leaves_out_zero_only_when_zero_would_hide_the_difference(tmp_path):
    axes = _figure(_run(tmp_path / "run"), "bar-stas").axes[0]
    start, end = axes.get_xlim()
    assert 0.3 < start < 0.3360 and 0.3523 < end < 0.36  # the data (interval ends included), with a margin
    assert f"the axis starts at {start:.4g}, not at 0" in axes.get_xlabel()
    bars = next(c for c in axes.containers if isinstance(c, BarContainer))
    assert [patch.get_x() for patch in bars.patches] == pytest.approx([start, start])  # bars start at the axis
    assert value_axis([0.2, 0.9])[:1] == (0.0,) and value_axis([0.2, 0.9])[2]
    assert value_axis([-0.5, 0.25])[2] and value_axis([0.9])[:1] == (0.0,)
    assert value_axis([-3.2, -3.1])[2] is False and value_axis([None])[0] == 0.0 < value_axis([None])[1]


def test_the_difference_to_the_baseline_is_shown_with_its_interval_and_p(tmp_path):
    folder = _run(tmp_path / "run")
    axes = _figure(folder, "bar-stas").axes[0]
    test = PAIRED["stas"]["stas"]
    expected = f"{test['difference']:+.4f} [{test['low']:+.4f}, {test['high']:+.4f}] p={test['p']}"
    assert expected == "+0.0040 [-0.0012, +0.0093] p=0.21"
    beside = [text.get_text() for text in axes.texts]
    assert beside == [f"0.3460   {expected} vs none", "0.3420"]
    html_path, markdown_path = write_report(folder)
    assert f"<th>tag − none</th><td class=\"value\">{expected}</td>" in html_path.read_text(encoding="utf-8")
    markdown = markdown_path.read_text(encoding="utf-8")
    assert "| tag | **0.3460** [0.3401, 0.3523] | **0.2500** [0.2100, 0.2900] |" in markdown
    assert f"| tag − none | {expected} |  |" in markdown
    # rouge1 has intervals but no paired test: its figure has error bars and no difference
    rouge = _figure(folder, "bar-rouge.rouge1").axes[0]
    assert [text.get_text() for text in rouge.texts] == ["0.2500", "0.2300"]


def test_an_older_results_json_has_bars_without_error_bars(tmp_path):
    folder = _run(tmp_path / "run", with_intervals=False)
    axes = _figure(folder, "bar-stas").axes[0]
    assert not [c for c in axes.containers if isinstance(c, ErrorbarContainer)]
    assert len(next(c for c in axes.containers if isinstance(c, BarContainer)).patches) == 2
    page = write_report(folder)[0].read_text(encoding="utf-8")
    assert "bootstrap interval of a value" not in page and "tag − none" not in page


def test_a_malformed_interval_is_one_error_naming_the_field(tmp_path):
    folder = _run(tmp_path / "run")
    results = json.loads((folder / "results.json").read_text())
    results["intervals"]["stas"]["stas"]["low"] = "low"
    _write(folder / "results.json", results)
    with pytest.raises(CtrlkitError, match=r"results.json: field 'intervals.stas.stas.low' must be a number"):
        write_report(folder)


def test_a_sweep_cell_whose_intervals_cannot_be_read_is_reported_without_them(tmp_path, caplog):
    folder = tmp_path / "sweep"
    metrics = {"stas": {"stas": 0.34}}
    _write(folder / "table.json", [{"controller": "none", "backbone": "b", "dataset": "d", "run": "cells/c0",
                                    "metrics": metrics}])
    _write(folder / "cells" / "c0" / "results.json", {"metrics": metrics, "intervals": {"stas": {"stas": []}}})
    page = write_report(folder)[0].read_text(encoding="utf-8")
    assert "0.3400" in page and "[" not in page.split("<h2>Scores</h2>")[1].split("</table>")[0]
    assert "field 'intervals.stas.stas' must be an object" in caplog.text and "left out" in caplog.text


def test_a_sweep_reads_each_cells_intervals(tmp_path):
    folder = tmp_path / "sweep"
    rows = []
    for k, controller in enumerate(["none", "tag"]):
        run = f"cells/c{k}"
        metrics = {"stas": {"stas": 0.34 + 0.01 * k}}
        intervals = {"stas": {"stas": {"low": 0.33 + 0.01 * k, "high": 0.35 + 0.01 * k, "se": 0.005}}}
        rows.append({"controller": controller, "backbone": "extractive", "dataset": "sample", "run": run,
                     "metrics": metrics})
        _write(folder / run / "results.json", {"config": {"controller": controller}, "metrics": metrics,
                                                "intervals": intervals, "baseline": None})
    _write(folder / "table.json", rows)
    axes = _figure(folder, "bar-stas").axes[0]
    segments = next(c for c in axes.containers if isinstance(c, ErrorbarContainer)).lines[2][0].get_segments()
    assert [x for s in sorted(segments, key=lambda s: s[0][0]) for x in (s[0][0], s[1][0])] == pytest.approx(
        [0.33, 0.35, 0.34, 0.36])


@pytest.mark.parametrize("kind, begins", [("pdf", b"%PDF-"), ("png", b"\x89PNG\r\n\x1a\n"), ("svg", b"<?xml")])
def test_figures_are_written_as_files_of_each_format(tmp_path, kind, begins):
    folder = _run(tmp_path / "run", metric=f"plugin{HOSTILE}")
    result = invoke_ctrlkit("report", folder, "--figures", kind)
    assert result.returncode == 0, result.stderr
    printed = [Path(line) for line in result.stdout.split("\n") if line]
    assert printed[:2] == [folder / "report.html", folder / "report.md"]
    names = [path.name for path in printed[2:]]
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", name) for name in names), names  # a plugin's name made safe
    assert {"bar-rouge.rouge1", "distribution-rouge.rouge1"} <= {name.rsplit(".", 1)[0] for name in names}
    assert len(names) == 4 and len(set(names)) == 4  # 2 bar charts, 2 distributions
    for path in printed[2:]:
        assert path.parent == folder / "figures" and path.suffix == f".{kind}"
        data = path.read_bytes()
        assert data.startswith(begins) and len(data) > 1000
    if kind == "svg":
        assert b"<svg" in (folder / "figures" / "bar-rouge.rouge1.svg").read_bytes()


@pytest.mark.parametrize("kind", ["svg", "pdf", "png"])
def test_figure_files_are_the_same_bytes_on_every_run(tmp_path, kind):
    folder = _run(tmp_path / "run")
    first = {path.name: path.read_bytes() for path in write_report(folder, figures=kind)[2:]}
    second = {path.name: path.read_bytes() for path in write_report(folder, figures=kind)[2:]}
    assert first == second and len(first) == 4


def test_an_unknown_figure_format_is_refused(tmp_path):
    with pytest.raises(CtrlkitError, match="--figures jpeg: choose one of pdf, png, svg"):
        write_report(_run(tmp_path / "run"), figures="jpeg")


class _Elements(HTMLParser):
    def __init__(self, page: str):
        super().__init__()
        self.tags, self.attributes = [], []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += attrs

    handle_startendtag = handle_starttag


def test_the_page_figures_are_inert_with_hostile_labels(tmp_path):
    folder = _run(tmp_path / "run", controller=SCRIPT + HOSTILE, metric=f"plugin{HOSTILE}")
    page = write_report(folder)[0].read_text(encoding="utf-8")
    parsed = _Elements(page)
    assert set(parsed.tags) <= {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "div",
                                "table", "tr", "th", "td", "span", "b", "figure", "figcaption", "svg", "g", "path",
                                "text", "details", "summary", "pre"}, set(parsed.tags)
    assert parsed.tags.count("style") == 1 and parsed.tags.count("svg") == 4  # 2 bar charts, 2 distributions
    assert not [(n, v) for n, v in parsed.attributes if n.startswith("on") or "href" in n or n in ("src", "id")]
    assert "url(" not in page and "<use" not in page and "javascript" not in page.lower()
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", page)
    escaped = HOSTILE.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert any(escaped in text for text in texts)  # the label, shown as written: no mathtext, no markup
    assert any(SCRIPT.replace("<", "&lt;").replace(">", "&gt;") in text for text in texts)


def test_the_examples_show_the_references_and_each_outputs_scores(tmp_path):
    html_path, markdown_path = write_report(_run(tmp_path / "run"))
    page = html_path.read_text(encoding="utf-8")
    example = page[page.index("<h3>ex-0</h3>"):page.index("<h3>ex-1</h3>")]
    escaped = SCRIPT.replace("<", "&lt;").replace(">", "&gt;")
    assert (f'<div class="output reference"><h4>reference</h4><p>Reference 0 {escaped}</p></div>'
            '<div class="output"><h4>tag</h4><p>Prediction 0</p><p class="scores">stas 0.5000 · rouge.rouge1 '
            '0.2500</p></div><div class="output"><h4>none (baseline)</h4><p>Baseline 0</p><p class="scores">'
            'stas 0.3750 · rouge.rouge1 0.1250</p></div>') in example.replace("\n", "")
    markdown = markdown_path.read_text(encoding="utf-8")
    assert "- reference: Reference 1 &lt;script>alert(1)&lt;/script>" in markdown
    assert "- **tag**: Prediction 1 (stas 0.7500 · rouge.rouge1 0.2500)" in markdown
