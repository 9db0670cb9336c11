"""One name per metric value in every table, and the best value marked the right way within each
(dataset, backbone) of a sweep table and its report."""

import csv
import json

import pytest

import ctrlkit
from ctrlkit.analyses.interference import interference
from ctrlkit.metric_values import best, better, value_directions
from ctrlkit.report.write import write_report
from ctrlkit.results import format_table
from ctrlkit.sweeps.sweep import sweep
from ctrlkit.sweeps.table import write_table


def test_run_sweep_report_and_interference_name_every_value_alike(private_cache, tmp_path):
    names = ["stas", "stas.above_threshold", "rouge.rouge1", "rouge.rouge2", "rouge.rougeL", "rouge.rougeLsum"]
    run = ctrlkit.run(controller="tag", metrics=["stas", "rouge"], limit=6, baseline=None)
    assert [line.split()[0] for line in format_table(run.results).splitlines()[2:]] == names
    sweep(out=str(tmp_path / "s"), controllers=["none", "tag"], metrics=["stas", "rouge"], limit=6)
    with open(tmp_path / "s" / "table.csv", newline="", encoding="utf-8") as handle:
        assert next(csv.reader(handle))[3:3 + len(names)] == names  # then their intervals and differences
    table = json.loads((tmp_path / "s" / "table.json").read_text())
    assert [column["name"] for column in table["columns"]] == names
    assert table["columns"][0] == {"name": "stas", "metric": "stas", "value": "stas", "better": "higher"}
    shown = " | ".join(name.replace("_", "\\_") for name in names)  # as Markdown escapes them
    assert (tmp_path / "s" / "table.md").read_text().splitlines()[0] == f"| dataset | backbone | controller | {shown} |"
    assert f"| controller | {shown} |" in write_report(tmp_path / "s")[1].read_text()
    analysis = interference(controller="prepend", attributes=["topic"], metrics=["stas"], limit=6)
    assert analysis["values"] == ["stas", "stas.above_threshold"]


# Which way each value is better, written out here rather than asked of ctrlkit.
WAYS = {("stas", "stas"): max, ("length", "mad"): min, ("length", "pcc_defined"): None, ("cer", "average"): min,
        ("cer", "n_length"): None, ("cc", "length"): None, ("cc", "length_gap"): min, ("sr", "left_out"): None,
        ("fm", "failed"): min}


def _rows():
    """Two datasets, the second under two backbones; the best stas of the whole table lies in the first."""
    rows = []
    for dataset, backbone, base in (("a", "extractive", 0.9), ("b", "extractive", 0.2), ("b", "other", 0.5)):
        for k, controller in enumerate(["none", "tag", "prepend"]):
            value = base + 0.01 * k
            rows.append({"dataset": dataset, "backbone": backbone, "controller": controller, "run": None,
                         "metrics": {"stas": {"stas": value, "above_threshold": 0.5},
                                     "length": {"mad": value, "pcc_defined": value},
                                     "cer": {"average": value, "n_length": 10.0 + k},  # counts as a run
                                     "cc": {"length": value, "length_gap": value},   # records them
                                     "sr": {"left_out": float(k)}, "fm": {"failed": 3.0 - k}}})
    return rows


def _expected_bold(rows, metric, value):
    """Row indices that hold the best of their (dataset, backbone), worked out from WAYS."""
    way, bold = WAYS[metric, value], set()
    if way is None:
        return bold
    groups = {}
    for i, row in enumerate(rows):
        groups.setdefault((row["dataset"], row["backbone"]), []).append(i)
    for members in groups.values():
        found = [rows[i]["metrics"][metric][value] for i in members]
        if len(set(found)) > 1:
            bold |= {i for i in members if rows[i]["metrics"][metric][value] == way(found)}
    return bold


def _bold_cells(lines, first_value_column):
    """{(row, column): bold?} of a Markdown table's value cells."""
    cells = [line.strip("|").split(" | ") for line in lines[2:]]
    return [[cell.strip().startswith("**") for cell in row[first_value_column:]] for row in cells]


@pytest.mark.hand_made_records  # write_table given rows made by hand
def test_the_best_value_is_marked_the_right_way_within_each_dataset_and_backbone(tmp_path):
    rows = _rows()
    write_table(tmp_path, rows)
    table = json.loads((tmp_path / "table.json").read_text())
    columns = [(column["metric"], column["value"]) for column in table["columns"]]
    assert set(columns) == set(WAYS) | {("stas", "above_threshold")}  # equal everywhere: no best
    ways = {"higher": max, "lower": min, None: None}
    assert {(c["metric"], c["value"]): ways[c["better"]] for c in table["columns"] if c["value"] != "above_threshold"} \
        == WAYS
    assert [(group["dataset"], group["backbone"]) for group in table["best"]] == [
        ("a", "extractive"), ("b", "extractive"), ("b", "other")]
    assert table["best"][1]["values"]["stas"] == pytest.approx(0.22)  # the best of b, not the table's 0.92
    assert table["best"][1]["values"]["length.mad"] == pytest.approx(0.2)
    assert table["best"][0]["values"]["cer.n_length"] is None and table["best"][0]["values"]["fm.failed"] == 1

    lines = (tmp_path / "table.md").read_text().splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split("|")][3:]
    assert header[:3] == ["stas", "stas.above\\_threshold", "length.mad ↓"] and "cc.length\\_gap ↓" in header
    assert lines[2].endswith("| **0.9000** | 10 | 0.9000 | **0.9000** | 0 | 3 |")  # counts as whole numbers, as in a run
    bold = _bold_cells(lines, 3)
    for j, (metric, value) in enumerate(columns):
        expected = _expected_bold(rows, metric, value) if (metric, value) in WAYS else set()
        assert {i for i in range(len(rows)) if bold[i][j]} == expected, (metric, value)

    # the report of that sweep marks the same cells
    report = write_report(tmp_path)[1].read_text().splitlines()
    start = next(i for i, line in enumerate(report) if line.startswith("| controller |"))
    assert _bold_cells(report[start:start + 2 + len(rows)], 1) == bold
    assert report[start + 2].endswith("| **0.9000** | 10 | 0.9000 | **0.9000** | 0 | 3 |")


def test_a_metric_says_which_way_its_values_are_better():
    directions = value_directions({"cer": {"length": 0.1, "n_length": 3}, "cc": {"length": 2.0, "gold_length": 1.0,
                                                                                "extractiveness_gap": 0.3},
                                   "rouge": {"rouge1": 0.4}, "readability": {"fkgl": 8.0, "dfkgl": 1.0},
                                   "not-installed": {"score": 1.0, "mad": 2.0}})
    assert directions == {"cer.length": "lower", "cer.n_length": None, "cc.length": None, "cc.gold_length": None,
                          "cc.extractiveness_gap": "lower", "rouge.rouge1": "higher", "readability.fkgl": None,
                          "readability.dfkgl": "higher", "not-installed.score": "higher", "not-installed.mad": "lower"}
    assert better("failed") == "lower" and better("unscored") is None and better("x", None) is None
    assert best([0.5, None, 0.25], "lower") == 0.25 and best([0.5, 0.5], "higher") is None
    assert best([0.5, 0.7], None) is None and best([0.5], "higher") is None


def test_a_cell_of_one_bootstrap_group_says_its_interval_is_undefined_in_table_md(tmp_path):
    """One example is one bootstrap group: resampling cannot vary it, so table.md says the interval
    and the difference's interval are undefined rather than printing none beside a caption that
    promises one."""
    sweep(controllers=["none", "tag"], metrics=["stas"], limit=1, bootstrap=50, out=str(tmp_path), cache=False)
    rows = [line for line in (tmp_path / "table.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| sample")]
    assert len(rows) == 2
    assert all("[interval undefined: one group]" in row for row in rows)
    tag_row = next(row for row in rows if "| tag |" in row)
    assert "p=" in tag_row and tag_row.count("[interval undefined: one group]") == 4  # 2 values, each twice
