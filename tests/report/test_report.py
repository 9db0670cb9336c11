"""ctrlkit report: the HTML and Markdown reports of hand-written run and sweep folders, that no
text from the data becomes markup, and (with chromium) what a real browser makes of the page."""

import json
import re
import struct
from html.parser import HTMLParser
from pathlib import Path

import pytest

from ctrlkit.errors import CtrlkitError
from ctrlkit.report.write import write_report

from helpers.browser import CHROMIUM, chromium
from helpers import invoke_ctrlkit, shared_file

SCRIPT = "<script>alert(1)</script>"
IMAGE = "<img src=x onerror=alert(1)>"


def _write(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def _samples(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def _scores(stas, mad):
    return {"stas": {"stas": stas}, "length": {"mad": mad}}


@pytest.fixture
def run_dir(tmp_path):
    """A run of controller tag with a none baseline; one prediction carries markup."""
    folder = tmp_path / "run"
    _write(folder / "results.json", {
        "config": {"dataset": "sample", "controller": "tag", "backbone": "extractive", "note": SCRIPT},
        "versions": {}, "n_examples": 3,
        "metrics": {"stas": {"stas": 0.9, "above_threshold": 0.75}, "length": {"mad": 0.5, "pcc": None}},
        "baseline": {"controller": "none", "metrics": {"stas": {"stas": 0.8, "above_threshold": 0.5},
                                                       "length": {"mad": 0.25, "pcc": None}}},
        "timings": {},
    })
    predictions = [f"Rovers win. {SCRIPT} {IMAGE}", "Council votes.", "Markets fall."]
    _samples(folder / "samples.jsonl", [
        {"id": f"ex-{i}" if i else f"ex-0 {IMAGE}", "controls": {"topic": f"sports {SCRIPT}" if not i else "politics"},
         "prediction": prediction, "scores": _scores([1.0, 0.7, None][i], i),
         "baseline": {"prediction": f"baseline {i}", "scores": _scores(0.8, 0)}}
        for i, prediction in enumerate(predictions)
    ])
    return folder


@pytest.fixture
def sweep_dir(tmp_path):
    """A sweep of three controllers on one dataset, with an interference matrix."""
    folder = tmp_path / "sweep"
    _write(folder / "sweep.json", {"settings": {"controllers": ["none", "tag", SCRIPT]}})
    rows = []
    for k, controller in enumerate(["none", "tag", SCRIPT]):
        run = f"cells/sample--extractive--{k}"
        metrics = {"stas": {"stas": 0.7 + 0.1 * k}, "length": {"mad": 1.0 - 0.25 * k}}
        rows.append({"controller": controller, "backbone": "extractive", "dataset": "sample", "run": run,
                     "metrics": metrics})
        _write(folder / run / "results.json", {"config": {"controller": controller}, "metrics": metrics,
                                                "baseline": None})
        _samples(folder / run / "samples.jsonl", [
            {"id": f"ex-{i}", "controls": {"topic": "sports", "keywords": ["a", "b"]},
             "prediction": f"{controller} says {i} {IMAGE}", "scores": _scores(0.5 + 0.1 * i + 0.05 * k, i)}
            for i in range(4)])
    _write(folder / "table.json", rows)
    return folder


def _interference(folder: Path) -> None:
    _write(folder / "interference.json", {
        "attributes": ["topic", "length"], "values": ["stas", "length.mad"],
        "matrix": {"topic": {"stas": 0.25, "length.mad": None}, "length": {"stas": 0.05, "length.mad": 1.5}},
        "n_examples": 4, "config": {"controller": SCRIPT}})


class _Page(HTMLParser):
    """The elements, attributes and text a browser's parser would find in a page."""

    def __init__(self, page: str):
        super().__init__()
        self.tags, self.attributes, self.text = [], [], []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [name for name, _ in attrs]

    def handle_data(self, data):
        self.text.append(data)


def _assert_inert(page: str) -> _Page:
    """Markup from the data shows as text and never becomes an element or an attribute."""
    parsed = _Page(page)
    assert not {"script", "img", "link", "iframe", "object", "embed"} & set(parsed.tags)
    assert not [name for name in parsed.attributes if name.startswith("on") or name in ("src", "href")]
    assert "<script" not in page.lower() and "<img" not in page.lower()
    text = "".join(parsed.text)
    assert SCRIPT in text and IMAGE in text
    return parsed


def test_run_report_shows_the_table_charts_and_escaped_examples(run_dir):
    html_path, markdown_path = write_report(run_dir)
    assert (html_path, markdown_path) == (run_dir / "report.html", run_dir / "report.md")
    page = html_path.read_text(encoding="utf-8")
    _assert_inert(page)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "Content-Security-Policy" in page and "https://" not in page and "url(" not in page
    # One bar chart per corpus value, one distribution per per-example value.
    assert page.count('class="chart bar"') == 4
    assert page.count('class="chart distribution"') == 2
    assert "heatmap" not in page
    assert "<th>none (baseline)</th>" in page and "undefined" in page
    # Higher stas is better (tag), lower mad is better (the baseline); pcc is undefined for both.
    rows = page.split("<tr>")
    assert '<td class="value best">0.9000</td>' in rows[2] and '<td class="value best">0.2500</td>' in rows[3]
    assert "length.mad ↓" in page and "1 undefined" in page


def test_run_markdown_has_the_table_and_examples(run_dir):
    _, markdown_path = write_report(run_dir, examples=2)
    text = markdown_path.read_text(encoding="utf-8")
    assert "| controller | stas | stas.above\\_threshold | length.mad ↓ | length.pcc |" in text
    assert "| tag | **0.9000** | **0.7500** | 0.5000 | undefined |" in text
    assert "| none (baseline) | 0.8000 | 0.5000 | **0.2500** | undefined |" in text
    assert "&lt;script>alert(1)&lt;/script>" in text and "<script" not in text and "<img" not in text
    assert "### ex-1" in text and "ex-2" not in text


def test_sweep_report_has_every_controller_and_a_heatmap(sweep_dir):
    html_path, _ = write_report(sweep_dir)
    assert "heatmap" not in html_path.read_text(encoding="utf-8")
    _interference(sweep_dir)
    html_path, markdown_path = write_report(sweep_dir, out=sweep_dir / "out" / "r.html", examples=3)
    assert markdown_path == sweep_dir / "out" / "r.md"
    page = html_path.read_text(encoding="utf-8")
    _assert_inert(page)
    assert page.count('class="chart bar"') == 2 and page.count('class="chart distribution"') == 2
    assert page.count('class="chart heatmap"') == 1 and ">1.5000</text>" in page and ">undefined</text>" in page
    assert page.count('<div class="output">') == 3 * 3 and "ex-3" not in page
    assert "<b>keywords</b>: a, b" in page
    markdown = markdown_path.read_text(encoding="utf-8")
    assert "| attribute | stas | length.mad |" in markdown and "| topic | 0.2500 | undefined |" in markdown
    assert "| &lt;script>alert(1)&lt;/script> | **0.9000** | **0.5000** |" in markdown


def test_sweep_table_may_be_an_object_with_rows(sweep_dir):
    rows = json.loads((sweep_dir / "table.json").read_text())
    _write(sweep_dir / "table.json", {"rows": rows, "best": {}})
    page = write_report(sweep_dir)[0].read_text(encoding="utf-8")
    assert page.count('class="chart bar"') == 2


def test_a_sweep_report_marks_the_best_the_way_table_json_recorded_it(sweep_dir):
    """What the metric said when the sweep ran wins over what is installed now (or nothing, for a
    metric uninstalled since): here stas recorded as lower-best and length.mad with no direction."""
    rows = json.loads((sweep_dir / "table.json").read_text())
    for row in rows:
        row["metrics"]["gone"] = {"err": row["metrics"]["length"]["mad"]}  # a metric no longer installed
    columns = [{"name": "stas", "metric": "stas", "value": "stas", "better": "lower"},
               {"name": "length.mad", "metric": "length", "value": "mad", "better": None},
               {"name": "gone.err", "metric": "gone", "value": "err", "better": "lower"}]
    _write(sweep_dir / "table.json", {"rows": rows, "columns": columns, "best": {}})
    markdown = write_report(sweep_dir)[1].read_text(encoding="utf-8")
    assert "| none | **0.7000** | 1.0000 | 1.0000 |" in markdown
    assert "| &lt;script>alert(1)&lt;/script> | 0.9000 | 0.5000 | **0.5000** |" in markdown
    assert "stas ↓" in markdown and "gone.err ↓" in markdown and "length.mad ↓" not in markdown
    columns[0]["better"] = "upwards"
    _write(sweep_dir / "table.json", {"rows": rows, "columns": columns, "best": {}})
    with pytest.raises(CtrlkitError, match=r"table.json: columns\[0\] must be an object with a name"):
        write_report(sweep_dir)


def test_the_report_of_an_interference_folder_shows_its_ca_table_and_heatmap(tmp_path, monkeypatch):
    """A folder written by ``ctrlkit analyze interference`` alone (MACSum-Doc, docs/reports.md's command):
    each table cell is the CA of interference.json, and so is each heatmap cell."""
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    data = shared_file("macsum/macdoc_val.json")
    folder = tmp_path / "analysis"
    analysed = invoke_ctrlkit("analyze", "interference", "-d", "macsum", "--data", data, "-c", "length+prepend",
                              "--set", "prepend.attributes=topic", "--attributes", "length,topic", "-m", "length",
                              "-m", "rouge", "--limit", "20", "-o", folder)
    assert analysed.returncode == 0, analysed.stderr
    assert sorted(path.name for path in folder.iterdir()) == ["interference.json", "interference.svg"]
    result = invoke_ctrlkit("report", folder)
    assert result.returncode == 0, result.stderr
    written = json.loads((folder / "interference.json").read_text())

    def shown(attribute, value):  # the CA recomputed from the base and changed values, as a table shows it
        base, new = written["base"][value], written["changed"][attribute][value]
        return "undefined" if base in (None, 0) or new is None else f"{abs(new - base) / abs(base):.4f}"

    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Scores" not in markdown and "## Interference" in markdown
    assert f"Examples: {written['n_examples']}" in markdown
    table = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert table[0] == "| attribute | " + " | ".join(v.replace("_", "\\_") for v in written["values"]) + " |"
    assert table[1:] == ["| " + " | ".join([a] + [shown(a, v) for v in written["values"]]) + " |"
                         for a in ("length", "topic")]
    # length.mad is 0 at the base (every extract falls in the requested 50-word bin): undefined, with the reason
    assert "- length / length.mad: the base value is 0" in markdown

    page = (folder / "report.html").read_text(encoding="utf-8")
    _Page(page)
    assert page.count('class="chart heatmap"') == 1 and 'class="chart bar"' not in page
    cells = [f"<td class=\"value{' undefined' if shown(a, v) == 'undefined' else ''}\">{shown(a, v)}</td>"
             for a in ("length", "topic") for v in written["values"]]
    assert "".join(cells) in page.replace("</tr><tr><th>topic</th>", "")
    heatmap = page[page.index('class="chart heatmap"'):page.index("</figure>", page.index('class="chart heatmap"'))]
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", heatmap)
    cells = [shown(a, v) for a in ("length", "topic") for v in written["values"]]
    assert any(texts[k:k + len(cells)] == cells for k in range(len(texts))), (cells, texts)
    assert "Interference configuration" in page and "<h2>Examples</h2>" not in page


def test_a_folder_without_results_is_refused(tmp_path):
    with pytest.raises(CtrlkitError, match="no results.json"):
        write_report(tmp_path)
    (tmp_path / "results.json").write_text("{not json")
    with pytest.raises(CtrlkitError, match="cannot read as JSON"):
        write_report(tmp_path)


def test_report_command_prints_both_paths(run_dir, tmp_path):
    result = invoke_ctrlkit("report", run_dir, "--out", tmp_path / "shared.html", "--examples", "1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(tmp_path / "shared.html"), str(tmp_path / "shared.md")]
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke_ctrlkit("report", empty)
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "table.json" in result.stderr and "interference.json" in result.stderr


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_a_browser_renders_the_report_and_runs_nothing_from_the_data(sweep_dir, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"needs chromium at {CHROMIUM} (apt-get install chromium); .ci/run installs it")
    _interference(sweep_dir)
    page = write_report(sweep_dir)[0]
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><title>blank</title>")
    shots = {}
    for name, target in (("report", page), ("blank", blank)):
        shots[name] = tmp_path / f"{name}.png"
        chromium(tmp_path, f"--screenshot={shots[name]}", "--window-size=1200,2000", target.resolve().as_uri())
        assert _png_size(shots[name]) == (1200, 2000)
    size, blank_size = shots["report"].stat().st_size, shots["blank"].stat().st_size
    assert size > 20_000 and size > 5 * blank_size, (size, blank_size)

    dom = chromium(tmp_path, "--dump-dom", page.resolve().as_uri()).stdout
    parsed = _assert_inert(dom)
    assert parsed.tags.count("svg") >= 5 and "table" in parsed.tags

