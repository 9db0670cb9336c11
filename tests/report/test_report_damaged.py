"""Damaged folders: ``ctrlkit report`` on valid JSON of the wrong shape, a file cut short, a bad
samples.jsonl line, a damaged table.json, sweep.json or interference.json says so in one line
naming the file (and line) and the field; never a traceback, never a page of wrong numbers. A
sweep whose cell results.json is damaged runs that cell again and keeps the others.
See docs/reliability.md, "Bad input gets a one-line error"."""

import json
import logging
from pathlib import Path

import pytest

from ctrlkit.errors import CtrlkitError
from ctrlkit.report.write import write_report
from ctrlkit.sweeps.sweep import sweep

from helpers import run_ctrlkit

METRICS = {"stas": {"stas": 0.75}, "length": {"mad": 0.5, "pcc": None}}


def _json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def _sample(i: int) -> dict:
    return {"id": f"ex-{i}", "controls": {"topic": "sports"}, "prediction": f"Summary {i}.",
            "scores": {"stas": {"stas": 0.5 + i / 10}}, "baseline": {"prediction": f"Base {i}.",
                                                                    "scores": {"stas": {"stas": 0.4}}}}


def _run(folder: Path) -> Path:
    """A valid run folder (a run with a baseline), which each case then damages."""
    _json(folder / "results.json", {"config": {"dataset": "sample", "controller": "tag", "options": {}},
                                    "n_examples": 3, "metrics": METRICS,
                                    "baseline": {"controller": "none", "metrics": METRICS}})
    (folder / "samples.jsonl").write_text("".join(json.dumps(_sample(i)) + "\n" for i in range(3)), encoding="utf-8")
    return folder


def _sweep(folder: Path) -> Path:
    """A valid sweep folder of two cells, each a run folder."""
    rows = []
    for controller in ("none", "tag"):
        run = f"cells/sample--extractive--{controller}"
        _run(folder / run)
        rows.append({"controller": controller, "backbone": "extractive", "dataset": "sample", "run": run,
                     "metrics": METRICS})
    _json(folder / "table.json", {"rows": rows, "best": {}})
    _json(folder / "sweep.json", {"settings": {"controllers": ["none", "tag"]}, "versions": {}})
    return folder


def _interference(folder: Path) -> Path:
    _run(folder)
    return _analysis(folder)


def _analysis(folder: Path) -> Path:
    """A folder holding only what ``ctrlkit analyze interference`` writes."""
    folder.mkdir(parents=True, exist_ok=True)
    _json(folder / "interference.json", {"attributes": ["length"], "values": ["stas.stas"],
                                         "matrix": {"length": {"stas.stas": 0.2}}, "n_examples": 3, "config": {}})
    return folder


def _edit_json(relative: str, change):
    def damage(folder: Path) -> None:
        path = folder / relative
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))
    return damage


def _replace(relative: str, text: str):
    def damage(folder: Path) -> None:
        (folder / relative).write_text(text)
    return damage


def _bytes(relative: str, data: bytes):
    def damage(folder: Path) -> None:
        (folder / relative).write_bytes(data)
    return damage


def _cut(relative: str):
    """The file cut short in the middle, as a full disk or a copy stopped halfway leaves it."""
    def damage(folder: Path) -> None:
        path = folder / relative
        data = path.read_bytes()
        path.write_bytes(data[: len(data) * 3 // 5])
    return damage


def _sample_line(line: int, change):
    def damage(folder: Path) -> None:
        path = folder / "samples.jsonl"
        lines = path.read_text().splitlines()
        sample = json.loads(lines[line - 1])
        change(sample)
        lines[line - 1] = json.dumps(sample)
        path.write_text("\n".join(lines) + "\n")
    return damage


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def change(data):
        for key in keys[:-1]:
            data = data[key]
        data[keys[-1]] = value
    return change


CELL = "cells/sample--extractive--tag"
# (folder kind, damage, the file named, what else the line must say)
CASES = {
    "results.json is a list": ("run", _replace("results.json", "[1, 2]"), "results.json", "expected a JSON object"),
    "results.json is a string": ("run", _replace("results.json", '"done"'), "results.json", "expected a JSON object"),
    "results.json is null": ("run", _replace("results.json", "null"), "results.json", "expected a JSON object"),
    "results.json cut short": ("run", _cut("results.json"), "results.json", "cannot read as JSON"),
    "results.json empty": ("run", _replace("results.json", ""), "results.json", "cannot read as JSON"),
    "config is a list": ("run", _edit_json("results.json", _set("config", [1])), "results.json", "'config'"),
    "metrics is a list": ("run", _edit_json("results.json", _set("metrics", [0.5])), "results.json", "'metrics'"),
    "metrics is a string": ("run", _edit_json("results.json", _set("metrics", "0.5")), "results.json", "'metrics'"),
    "a metric is a list": ("run", _edit_json("results.json", _set("metrics", "stas", [0.5])), "results.json",
                           "'metrics.stas'"),
    "a value is an object": ("run", _edit_json("results.json", _set("metrics", "stas", "stas", {"mean": 0.5})),
                             "results.json", "'metrics.stas.stas' must be a number or null, got an object"),
    "a value is a string": ("run", _edit_json("results.json", _set("metrics", "length", "mad", "0.5")),
                            "results.json", "'metrics.length.mad' must be a number or null, got a string"),
    "a value is a boolean": ("run", _edit_json("results.json", _set("metrics", "length", "mad", True)),
                             "results.json", "'metrics.length.mad'"),
    "baseline is a string": ("run", _edit_json("results.json", _set("baseline", "none")), "results.json",
                             "'baseline'"),
    "baseline metrics is a list": ("run", _edit_json("results.json", _set("baseline", "metrics", [])),
                                   "results.json", "'baseline.metrics'"),
    "a sample line is not JSON": ("run", _replace("samples.jsonl", json.dumps(_sample(0)) + "\n{oops\n"),
                                  "samples.jsonl:2", "invalid JSON"),
    "a sample line is a list": ("run", _replace("samples.jsonl", "[1]\n"), "samples.jsonl:1", "expected a JSON object"),
    "samples.jsonl cut short": ("run", _cut("samples.jsonl"), "samples.jsonl:", "invalid JSON"),
    "samples.jsonl cut at a line's end": ("run", _replace("samples.jsonl", json.dumps(_sample(0)) + "\n"),
                                          "samples.jsonl", "1 samples, but results.json counts 3 examples"),
    "a sample line too many": ("run", _replace("samples.jsonl", "".join(json.dumps(_sample(i)) + "\n"
                                                                        for i in range(4))),
                               "samples.jsonl", "4 samples, but results.json counts 3 examples"),
    "samples.jsonl not UTF-8": ("run", _bytes("samples.jsonl", b'{"id": "caf\xe9"}\n'), "samples.jsonl:1",
                                "not valid UTF-8"),
    "sample scores is a list": ("run", _sample_line(2, _set("scores", [1])), "samples.jsonl:2", "'scores'"),
    "a sample score is an object": ("run", _sample_line(3, _set("scores", "stas", "stas", {"x": 1})),
                                    "samples.jsonl:3", "'scores.stas.stas'"),
    "sample controls is a list": ("run", _sample_line(1, _set("controls", ["sports"])), "samples.jsonl:1",
                                  "'controls'"),
    "a prediction is an object": ("run", _sample_line(2, _set("prediction", {"text": "x"})), "samples.jsonl:2",
                                  "'prediction' must be a string or null"),
    "a sample baseline is a list": ("run", _sample_line(2, _set("baseline", [])), "samples.jsonl:2", "'baseline'"),
    "a baseline score is a string": ("run", _sample_line(1, _set("baseline", "scores", "stas", "stas", "high")),
                                     "samples.jsonl:1", "'scores.stas.stas'"),
    "table.json is a string": ("sweep", _replace("table.json", '"rows"'), "table.json",
                               "expected a JSON list or object"),
    "table rows is an object": ("sweep", _edit_json("table.json", _set("rows", {"a": 1})), "table.json",
                                "expected a list of row objects"),
    "a table row is a number": ("sweep", _edit_json("table.json", _set("rows", [1, 2])), "table.json",
                                "expected a list of row objects"),
    "table.json cut short": ("sweep", _cut("table.json"), "table.json", "cannot read as JSON"),
    "a row's metrics is a list": ("sweep", _edit_json("table.json", lambda t: t["rows"][1].update(metrics=[0.1])),
                                  "table.json", "'rows[1].metrics'"),
    "a row's value is an object": ("sweep", _edit_json("table.json", lambda t: t["rows"][0]["metrics"]["stas"]
                                                       .update(stas={"v": 1})), "table.json",
                                   "'rows[0].metrics.stas.stas'"),
    "a row's run is a number": ("sweep", _edit_json("table.json", lambda t: t["rows"][0].update(run=7)),
                                "table.json", "'rows[0].run' must be a string"),
    "a row's run leaves the folder": ("sweep", _edit_json("table.json", lambda t: t["rows"][0].update(run="../..")),
                                      "table.json", "'rows[0].run' must name a folder inside"),
    "a row's run is absolute": ("sweep", _edit_json("table.json", lambda t: t["rows"][1].update(run="/etc")),
                                "table.json", "'rows[1].run' must name a folder inside"),
    "a row's run holds a NUL": ("sweep", _edit_json("table.json", lambda t: t["rows"][1].update(run="cells/\x00")),
                                "table.json", "'rows[1].run' must name a folder inside"),
    "a cell's samples.jsonl cut short": ("sweep", _cut(f"{CELL}/samples.jsonl"), f"{CELL}/samples.jsonl:",
                                         "invalid JSON"),
    "a cell's sample score is a list": ("sweep", _replace(f"{CELL}/samples.jsonl", json.dumps(
        {**_sample(0), "scores": {"stas": [1]}}) + "\n"), f"{CELL}/samples.jsonl:1", "'scores.stas'"),
    "comparisons is a list": ("sweep", _edit_json("table.json", _set("comparisons", [])), "table.json",
                              "'comparisons' must be an object"),
    "the reference is a number": ("sweep", _edit_json("table.json", _set("comparisons", {"reference": 1, "tests": 1})),
                                  "table.json", "'comparisons.reference' must be a string"),
    "the reference axis is unknown": ("sweep", _edit_json("table.json", _set("comparisons", {
        "reference": "none", "reference_axis": "dataset", "tests": 1})), "table.json", "'comparisons.reference_axis'"),
    "the test count is a string": ("sweep", _edit_json("table.json", _set("comparisons", {
        "reference": "none", "tests": "2"})), "table.json", "'comparisons.tests' must be a whole number"),
    "sweep.json is a list": ("sweep", _replace("sweep.json", "[]"), "sweep.json", "expected a JSON object"),
    "sweep.json cut short": ("sweep", _cut("sweep.json"), "sweep.json", "cannot read as JSON"),
    "interference.json is a list": ("interference", _replace("interference.json", "[]"), "interference.json",
                                    "expected a JSON object"),
    "interference.json cut short": ("interference", _cut("interference.json"), "interference.json",
                                    "cannot read as JSON"),
    "attributes is a string": ("interference", _edit_json("interference.json", _set("attributes", "length")),
                               "interference.json", "'attributes'"),
    "a value name is an object": ("interference", _edit_json("interference.json", _set("values", [{"a": 1}])),
                                  "interference.json", "'values'"),
    "matrix is a list": ("interference", _edit_json("interference.json", _set("matrix", [])), "interference.json",
                         "'matrix'"),
    "a matrix row is a list": ("interference", _edit_json("interference.json", _set("matrix", "length", [0.2])),
                               "interference.json", "'matrix.length'"),
    "a matrix cell is a string": ("interference", _edit_json("interference.json",
                                                             _set("matrix", "length", "stas.stas", "big")),
                                  "interference.json", "'matrix.length.stas.stas' must be a number or null"),
    "an undefined cell's reason is a number": ("analysis", _edit_json("interference.json",
                                                                      _set("undefined", {"length": {"stas": 0}})),
                                               "interference.json", "'undefined.length.stas' must be a string"),
    "undefined is a list": ("analysis", _edit_json("interference.json", _set("undefined", [])),
                            "interference.json", "'undefined' must be an object"),
    "an analysis's config is a list": ("analysis", _edit_json("interference.json", _set("config", [])),
                                       "interference.json", "'config' must be an object"),
    "an analysis's matrix is a list": ("analysis", _edit_json("interference.json", _set("matrix", [])),
                                       "interference.json", "'matrix'"),
}
BUILD = {"run": _run, "sweep": _sweep, "interference": _interference, "analysis": _analysis}


def _damaged(tmp_path: Path, case: str) -> tuple[Path, str, str]:
    kind, damage, named, said = CASES[case]
    folder = BUILD[kind](tmp_path / "folder")
    damage(folder)
    return folder, named, said


@pytest.mark.parametrize("case", list(CASES))
def test_a_damaged_folder_is_one_line_naming_the_file_and_field(tmp_path, case):
    folder, named, said = _damaged(tmp_path, case)
    with pytest.raises(CtrlkitError) as failure:
        write_report(folder)
    message = str(failure.value)
    assert "\n" not in message and str(folder / named) in message and said in message, message
    assert not (folder / "report.html").exists() and not (folder / "report.md").exists()


@pytest.mark.parametrize("kind", [kind for kind in BUILD if kind != "analysis"])
def test_the_undamaged_folders_report_fine(tmp_path, kind):
    html, markdown = write_report(BUILD[kind](tmp_path / kind))
    assert "Summary 2." in html.read_text() and "0.7500" in markdown.read_text()


def test_an_undamaged_analysis_folder_reports_its_matrix(tmp_path):
    html, markdown = write_report(_analysis(tmp_path / "analysis"))
    assert "| length | 0.2000 |" in markdown.read_text() and '<td class="value">0.2000</td>' in html.read_text()


@pytest.mark.parametrize("case", ["a value is an object", "a sample line is not JSON", "a matrix row is a list"])
def test_the_report_command_prints_the_one_line_and_no_traceback(tmp_path, case):
    folder, named, said = _damaged(tmp_path, case)
    result = run_ctrlkit("report", str(folder))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and str(folder / named) in result.stderr and said in result.stderr
    assert result.stdout == ""


def test_a_cell_whose_results_json_was_cut_short_still_reports(tmp_path):
    folder = _sweep(tmp_path / "sweep")
    _cut(f"{CELL}/results.json")(folder)  # the report reads table.json and the cells' samples, not this
    html, _ = write_report(folder)
    assert "Summary 2." in html.read_text()


@pytest.mark.parametrize("damage, said", [
    (_cut(f"{CELL}/results.json"), "cannot read as JSON"),
    (_replace(f"{CELL}/results.json", "[]"), "expected a JSON object"),
    (_edit_json(f"{CELL}/results.json", _set("config", "tag")), "not the results of a run"),
    (_edit_json(f"{CELL}/results.json", _set("config", "options", ["x"])), "not the results of a run"),
    (_edit_json(f"{CELL}/results.json", _set("config", "options", "tag", 5)), "not the results of a run"),
    (_edit_json(f"{CELL}/results.json", _set("metrics", None)), "not the results of a run"),
    (_edit_json(f"{CELL}/results.json", _set("metrics", "stas", "stas", "0.5")),
     "'metrics.stas.stas' must be a number"),
    (_edit_json(f"{CELL}/results.json", _set("metrics", "stas", [])), "'metrics.stas' must be an object"),
    (_edit_json(f"{CELL}/results.json", _set("cache", [])), "not the results of a run"),
])
def test_a_sweep_reruns_a_damaged_cell_and_reuses_the_others(tmp_path, monkeypatch, caplog, damage, said):
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    arguments = dict(out=str(tmp_path / "s"), controllers=["none", "tag"], metrics=["stas"], limit=4,
                     options={"tag": {"top_n": "20"}})  # a string, as --set gives it
    first = sweep(**arguments)
    damage(tmp_path / "s")
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        again = sweep(**arguments)
    assert [row["reused"] for row in again] == [True, False]
    assert [row["metrics"] for row in again] == [row["metrics"] for row in first]
    assert again[1]["cache"] == {"hits": 4, "misses": 0}  # rerun from the generation cache
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(tmp_path / "s" / CELL / "results.json") in warnings[0] and said in warnings[0]
    assert "running the cell again" in warnings[0]
    assert json.loads((tmp_path / "s" / CELL / "results.json").read_text())["metrics"] == first[1]["metrics"]
