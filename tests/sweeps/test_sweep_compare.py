"""A sweep compares each cell with the reference row of its dataset and backbone: paired bootstrap
intervals and permutation p-values from the cells' samples, Holm-corrected across the table, in
table.json, table.csv, table.md and table.tex."""

import csv
import json
import logging
import re
import shutil
import subprocess

import numpy as np
import pytest

import ctrlkit
from ctrlkit.bootstrap import paired
from ctrlkit.report.load import load_sweep
from ctrlkit.report.write import write_report
from ctrlkit.sweeps.sweep import sweep
from ctrlkit.sweeps.table import write_table
from ctrlkit.sweeps.compare import holm
from ctrlkit.sweeps.tex import escape_latex

from helpers.p_values import expected_p

RESAMPLES = 200


@pytest.fixture
def compared(private_cache, tmp_path):
    out = tmp_path / "s"
    rows = sweep(out=str(out), controllers=["tag", "none", "prepend"], metrics=["stas", "rouge"], limit=12,
                 bootstrap=RESAMPLES, seed=3)
    return out, rows


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _holm(p_values):
    """Holm's adjusted p, from its definition: the largest of min(1, (m - j) * p) over the
    p-values ranked at or before this one (j from 0)."""
    ranked = sorted(p_values)
    m = len(ranked)
    return [max(min(1.0, (m - j) * ranked[j]) for j in range(ranked.index(p) + 1)) for p in p_values]


def test_each_cell_is_compared_with_the_none_row_as_bootstrap_paired_gives_from_their_samples(compared):
    out, rows = compared
    table = json.loads((out / "table.json").read_text())
    assert [row["reference"] for row in table["rows"]] == ["none"] * 3
    by_controller = {row["controller"]: row for row in table["rows"]}
    assert by_controller["none"]["paired"] is None
    reference = _lines(out / by_controller["none"]["run"] / "samples.jsonl")
    for controller in ("tag", "prepend"):
        row = by_controller[controller]
        samples = _lines(out / row["run"] / "samples.jsonl")
        assert [s["id"] for s in samples] == [s["id"] for s in reference]
        groups = np.array([s["group"] for s in samples])
        assert len(set(groups)) == 6  # the sample's examples share documents: the resamples draw documents
        for metric in ("stas", "rouge"):
            names = samples[0]["scores"][metric]
            expected = paired(ctrlkit.get_metric(metric), {n: [s["scores"][metric][n] for s in samples] for n in names},
                              {n: [s["scores"][metric][n] for s in reference] for n in names}, groups, RESAMPLES, 3)
            for value, test in row["paired"][metric].items():
                assert {key: test[key] for key in expected[value]} == pytest.approx(expected[value], rel=1e-12)
                assert test["difference"] == pytest.approx(
                    row["metrics"][metric][value] - by_controller["none"]["metrics"][metric][value])
    tests = [test for row in table["rows"] for values in (row["paired"] or {}).values() for test in values.values()]
    assert len(tests) == 2 * 6 == table["comparisons"]["tests"]
    assert [test["p_holm"] for test in tests] == pytest.approx(_holm([test["p"] for test in tests]))
    assert table["comparisons"]["correction"] == "holm" and table["comparisons"]["resamples"] == RESAMPLES
    # the report's bars show each cell's difference to its reference
    report = load_sweep(out)
    arm = next(arm for arm in report.arms if arm.label == "prepend")
    assert arm.against == "none" and arm.differences["stas"]["p"] == by_controller["prepend"]["paired"]["stas"]["stas"]["p"]


def test_the_report_shows_each_difference_with_the_holm_p_of_table_md_and_names_the_reference_row(compared):
    out, _ = compared
    table = json.loads((out / "table.json").read_text())
    html_path, markdown_path = write_report(out)
    markdown, page = markdown_path.read_text(encoding="utf-8"), html_path.read_text(encoding="utf-8")
    table_md = (out / "table.md").read_text()
    for row in table["rows"]:
        if row["paired"] is None:
            continue
        line = next(line for line in markdown.splitlines() if line.startswith(f"| {row['controller']} − none |"))
        for metric, values in row["paired"].items():
            for test in values.values():
                expected = (f"{test['difference']:+.4f} [{test['low']:+.4f}, {test['high']:+.4f}] "
                            f"p{'' if expected_p(test).startswith('<=') else '='}{expected_p(test)} "
                            f"(Holm {test['p_holm']:.3g})")
                assert expected in line and expected in table_md and expected in page
    note = ("Each row is compared with its reference row (controller none of each dataset and backbone): the line "
            "below it gives the difference (row − reference)")
    assert note in markdown and note in page
    assert "Holm's method across the table's 12 comparisons" in markdown
    assert "baseline" not in markdown.split("## Scores")[1].split("## Examples")[0]


def test_holm_matches_its_definition_and_a_worked_example():
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    p_values = list(np.random.default_rng(1).uniform(0, 0.2, 25))
    assert holm(p_values) == pytest.approx(_holm(p_values))
    assert holm([]) == []


def test_the_tables_carry_intervals_differences_and_p_values(compared):
    out, _ = compared
    table = json.loads((out / "table.json").read_text())
    tag = next(row for row in table["rows"] if row["controller"] == "tag")
    with open(out / "table.csv", newline="", encoding="utf-8") as handle:
        lines = list(csv.DictReader(handle))
    line = next(line for line in lines if line["controller"] == "tag")
    interval, test = tag["intervals"]["stas"]["stas"], tag["paired"]["stas"]["stas"]
    assert float(line["stas low"]) == interval["low"] and float(line["stas high"]) == interval["high"]
    assert float(line["stas difference"]) == test["difference"] and float(line["stas p"]) == test["p"]
    assert float(line["stas p holm"]) == test["p_holm"] and line["reference"] == "none"
    # how many permutations counted, a whole number in both, so a p at its floor 1 / (1 + N) is known
    assert line["stas permutations"] == str(test["permutations"]) == str(RESAMPLES)
    assert all(isinstance(test["permutations"], int) for row in table["rows"] for values in (row["paired"] or {}).values()
               for test in values.values())
    header = next(csv.reader((out / "table.csv").read_text().splitlines()))
    assert header[header.index("stas p"):header.index("stas p") + 3] == ["stas p", "stas permutations", "stas p holm"]
    assert next(line for line in lines if line["controller"] == "none")["stas difference"] == ""
    markdown = (out / "table.md").read_text()
    assert f"[{interval['low']:.4f}, {interval['high']:.4f}]" in markdown
    assert f"{test['difference']:+.4f} [{test['low']:+.4f}, {test['high']:+.4f}] p={test['p']:.3g} " \
           f"(Holm {test['p_holm']:.3g})" in markdown
    assert "Holm's method across the table's 12 comparisons" in markdown
    # the footnote says what a resample draws: the sample's 12 examples are 6 documents' groups, drawn whole
    assert (f"({RESAMPLES} resamples, seed 3, each drawing groups of examples with replacement: a group is the "
            "examples that share a document") in markdown
    assert len({s["group"] for s in _lines(out / tag["run"] / "samples.jsonl")}) == 6


def _check_tex(text):
    """Balanced braces (escaped ones aside), booktabs rules in order, one tabular."""
    unescaped = re.sub(r"\\[{}]", "", text)
    depth = 0
    for character in unescaped:
        depth += {"{": 1, "}": -1}.get(character, 0)
        assert depth >= 0
    assert depth == 0
    assert text.index(r"\toprule") < text.index(r"\midrule") < text.index(r"\bottomrule") < text.index(r"\end{tabular}")
    assert text.startswith(r"\begin{tabular}")


@pytest.mark.hand_made_records  # write_table given rows made by hand
def test_table_tex_is_booktabs_with_the_best_in_bold_and_significant_differences_marked(tmp_path):
    special = "a_b%c&d#e$f{g}h~i^j\\k"
    rows = []
    for dataset, base in ((special, 0.5), ("plain", 0.2)):
        for k, controller in enumerate(["none", "tag"]):
            rows.append({"dataset": dataset, "backbone": "extractive", "controller": controller + ("" if k else "_0"),
                         "run": None, "metrics": {"stas": {"stas": base + 0.1 * k}, "length": {"mad": base - 0.1 * k}},
                         "reference": "none_0",
                         "paired": None if not k else {"stas": {"stas": {"difference": 0.1, "low": 0.05, "high": 0.15,
                                                                         "se": 0.02, "p": 0.01, "p_holm": 0.02 if
                                                                         dataset == special else 0.2}}}})
    write_table(tmp_path, rows, {"reference": "none_0", "resamples": 1000, "seed": 0, "confidence": 0.95,
                                 "tests": 2})
    text = (tmp_path / "table.tex").read_text()
    _check_tex(text)
    assert text.count(r"\midrule") == 2  # one above each block of a dataset and backbone
    assert escape_latex(special) == r"a\_b\%c\&d\#e\$f\{g\}h\textasciitilde{}i\textasciicircum{}j\textbackslash{}k"
    assert r"\emph{" + escape_latex(special) + "}" in text and "none\\_0 &" in text and "none_0" not in text
    lines = text.splitlines()
    special_tag = lines[lines.index(next(l for l in lines if escape_latex(special) in l)) + 2]
    assert special_tag == r"tag & \textbf{0.6000} (+0.1000$^\dagger$) & \textbf{0.4000} \\"  # mad: lower is better
    plain_tag = next(l for l in lines if l.startswith("tag") and "0.3000" in l)
    assert r"$^\dagger$" not in plain_tag  # p Holm 0.2: not significant
    assert "mad $\\downarrow$" in lines[2] and "Holm" in lines[-2] and "1000 permutations" in lines[-2]
    if shutil.which("pdflatex"):
        document = tmp_path / "doc.tex"
        document.write_text("\\documentclass{article}\\usepackage{booktabs}\\begin{document}\n"
                            + text + "\\end{document}\n")
        done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", document.name],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-2000:]


def test_a_sweep_without_the_reference_row_says_so_once_and_compares_nothing(private_cache, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        rows = sweep(out=str(tmp_path / "s"), controllers=["tag", "prepend"], metrics=["stas"], limit=6,
                     bootstrap=50)
    said = [r.getMessage() for r in caplog.records if "no reference row" in r.getMessage()]
    assert said == ["ctrlkit: no reference row (controller 'none') for dataset 'sample', backbone 'extractive': "
                    "no comparisons there"]
    assert all(row["reference"] is None and row["paired"] is None for row in rows)
    assert r"\dagger" not in (tmp_path / "s" / "table.tex").read_text()
    with pytest.raises(ctrlkit.ConfigurationError, match="reference 'nnoe' is not a controller of the sweep"):
        sweep(out=str(tmp_path / "t"), controllers=["tag", "none"], metrics=["stas"], limit=6, reference="nnoe")


def test_a_named_reference_row_and_a_changed_count_rescore_without_generating(private_cache, tmp_path):
    arguments = dict(out=str(tmp_path / "s"), controllers=["none", "tag"], metrics=["stas"], limit=6, bootstrap=50)
    first = sweep(**arguments)
    again = sweep(**{**arguments, "reference": "tag"})  # the table is compared again; the cells are reused
    assert all(row["reused"] for row in again)
    assert [row["reference"] for row in again] == ["tag", "tag"] and again[1]["paired"] is None
    assert again[0]["paired"]["stas"]["stas"]["difference"] == pytest.approx(
        -first[1]["paired"]["stas"]["stas"]["difference"])
    more = sweep(**{**arguments, "bootstrap": 80})  # another count: the cells are rescored from the cache
    assert not any(row["reused"] for row in more) and sum(row["cache"]["misses"] for row in more) == 0
    cell = json.loads((tmp_path / "s" / more[0]["run"] / "results.json").read_text())
    assert cell["config"]["bootstrap"]["resamples"] == 80
    assert json.loads((tmp_path / "s" / "sweep.json").read_text())["settings"]["bootstrap"] == 80
    none = sweep(**{**arguments, "bootstrap": 0})
    assert all(row["intervals"] is None and row["paired"] is None for row in none)
    assert json.loads((tmp_path / "s" / "table.json").read_text())["comparisons"] is None


def test_a_reference_backbone_compares_each_backbone_with_it_under_the_same_controller(private_cache, tmp_path):
    """The fine-tuned-against-untrained comparison: groups are (dataset, controller), and each
    other backbone's row is paired with the reference backbone's row, as bootstrap.paired gives."""
    out = tmp_path / "b"
    variants = {"lead": {"of": "extractive", "options": {"selection": "lead"}}}
    sweep(out=str(out), controllers=["none", "prepend"], backbones=["extractive", "lead"], metrics=["stas"],
          limit=12, bootstrap=RESAMPLES, seed=3, variants=variants, reference_backbone="extractive")
    table = json.loads((out / "table.json").read_text())
    assert table["comparisons"]["reference_axis"] == "backbone" and table["comparisons"]["reference"] == "extractive"
    rows = {(row["backbone"], row["controller"]): row for row in table["rows"]}
    for controller in ("none", "prepend"):
        base, row = rows["extractive", controller], rows["lead", controller]
        assert base["paired"] is None and base["reference"] == row["reference"] == "extractive"
        samples, reference = (_lines(out / r["run"] / "samples.jsonl") for r in (row, base))
        groups = np.array([s["group"] for s in samples])
        expected = paired(ctrlkit.get_metric("stas"), {"stas": [s["scores"]["stas"]["stas"] for s in samples]},
                          {"stas": [s["scores"]["stas"]["stas"] for s in reference]}, groups, RESAMPLES, 3)
        test = row["paired"]["stas"]["stas"]
        assert {key: test[key] for key in expected["stas"]} == pytest.approx(expected["stas"], rel=1e-12)
        assert test["difference"] == pytest.approx(row["metrics"]["stas"]["stas"] - base["metrics"]["stas"]["stas"])
    assert table["comparisons"]["tests"] == 2 * len(rows["lead", "none"]["paired"]["stas"]) >= 2
    assert "backbone extractive of each dataset and controller" in (out / "table.md").read_text()
    assert "backbone extractive of each dataset and controller" in (out / "table.tex").read_text()


def test_a_reference_backbone_must_be_a_backbone_of_the_sweep_and_not_beside_a_reference(private_cache, tmp_path):
    with pytest.raises(ctrlkit.ConfigurationError, match="reference_backbone 'hf' is not a backbone of the sweep"):
        sweep(out=str(tmp_path / "x"), controllers=["none"], metrics=["stas"], limit=2, reference_backbone="hf")
    with pytest.raises(ctrlkit.ConfigurationError, match="not both"):
        sweep(out=str(tmp_path / "y"), controllers=["none"], metrics=["stas"], limit=2, reference="none",
              reference_backbone="extractive")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
