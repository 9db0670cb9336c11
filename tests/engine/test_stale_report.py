"""A report written into a folder before a run, an evaluation or an interference analysis
rewrites its results there is removed, in one warning line, as it shows the old numbers."""

import json
import logging

import ctrlkit
from ctrlkit.evaluation import evaluate
from ctrlkit.analyses.interference import interference
from ctrlkit.report.write import write_report

from helpers import invoke_ctrlkit


def _stale_line(out) -> str:
    return (f"ctrlkit: removed report.html and report.md, written from the folder's earlier results; "
            f"ctrlkit report {out} writes a new one")


def test_a_run_into_a_reported_folder_removes_the_old_report(tmp_path, private_cache):
    out = tmp_path / "run"
    ctrlkit.run(limit=2, metrics=["rouge"], out=str(out))
    write_report(out)
    assert "rouge" in (out / "report.md").read_text()
    result = invoke_ctrlkit("run", "--limit", "3", "-m", "rouge", "-o", out)
    assert result.returncode == 0, result.stderr
    assert not (out / "report.html").exists() and not (out / "report.md").exists()
    assert [line for line in result.stderr.splitlines() if "removed report" in line] == [_stale_line(out)]
    assert json.loads((out / "results.json").read_text())["n_examples"] == 3


def test_evaluate_into_a_reported_folder_removes_the_old_report(tmp_path, private_cache, caplog):
    out = tmp_path / "run"
    ctrlkit.run(limit=2, metrics=["rouge"], out=str(out))
    write_report(out)
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps({"id": sample["id"], "prediction": "A summary."}) + "\n"
                                   for sample in map(json.loads, (out / "samples.jsonl").read_text().splitlines())))
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        evaluate(predictions=str(predictions), metrics=["rouge"], limit=2, out=str(out))
    assert not (out / "report.html").exists() and not (out / "report.md").exists()
    assert caplog.text.count("removed report.html and report.md") == 1 and _stale_line(out)[9:] in caplog.text


def test_a_folder_without_a_report_says_nothing_and_other_files_stay(tmp_path, private_cache, caplog):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    (out / "other.html").write_text("mine")
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        ctrlkit.run(limit=2, metrics=["rouge"], out=str(out))
    assert "removed" not in caplog.text
    assert (out / "notes.md").read_text() == "mine" and (out / "other.html").read_text() == "mine"


def test_an_interference_analysis_into_a_reported_folder_removes_the_old_report(tmp_path, private_cache, caplog):
    out = tmp_path / "run"
    arguments = dict(controller="length", attributes=["length"], metrics=["length"], out=str(out))
    data = tmp_path / "lengths.jsonl"
    data.write_text("".join(json.dumps({"id": name, "document": "One two three. Four five six. Seven eight nine.",
                                        "references": ["one"], "controls": {"length": length}}) + "\n"
                            for name, length in (("a", 3), ("b", 6))))
    ctrlkit.run(dataset="jsonl", data=str(data), controller="length", metrics=["length"], out=str(out))
    write_report(out)
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        interference(dataset="jsonl", data=str(data), **arguments)
    assert not (out / "report.html").exists() and not (out / "report.md").exists()
    assert caplog.text.count("removed report.html and report.md") == 1 and _stale_line(out)[9:] in caplog.text
    assert (out / "interference.json").is_file() and (out / "results.json").is_file()


def test_a_file_of_the_users_own_named_like_a_report_stays(tmp_path, private_cache, caplog):
    out = tmp_path / "project"
    out.mkdir()
    (out / "report.md").write_text("# my project report\n")
    (out / "report.html").write_text("<!doctype html><title>mine</title>")
    caplog.set_level(logging.WARNING, logger="ctrlkit")
    ctrlkit.run(limit=2, metrics=["rouge"], out=str(out))
    assert (out / "report.md").read_text() == "# my project report\n"
    assert (out / "report.html").read_text() == "<!doctype html><title>mine</title>"
    assert "removed report" not in caplog.text
