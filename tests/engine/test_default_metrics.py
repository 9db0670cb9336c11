"""The default metrics (no -m, ``metrics=None``): rouge, and stas only when some example has a
topic, so documented commands on datasets without topics work; a metric named explicitly is
still refused when no example has the control it reads."""

import json
import logging

import pytest

import ctrlkit
from ctrlkit import ConfigurationError
from ctrlkit.evaluation import evaluate
from ctrlkit.sweeps.sweep import sweep

from helpers import invoke_ctrlkit, shared_file

NO_TOPIC = "no example of dataset 'jsonl' has a topic, so the default metrics are rouge only (give -m to choose)"


@pytest.fixture
def untopical(tmp_path):
    """A JSONL dataset whose controls are length and keywords, never a topic."""
    path = tmp_path / "untopical.jsonl"
    rows = [{"id": f"e{i}", "document": f"Rain fell on town {i}. The river rose. Boats were moved uphill.",
             "references": [f"Rain fell on town {i}."], "controls": {"length": 10 + i, "keywords": ["rain"]}}
            for i in range(4)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


def test_evaluate_on_fd_without_metrics_scores_rouge(tmp_path):
    data = shared_file("fd/arxiv.json")
    result = invoke_ctrlkit("evaluate", "-d", "fd", "--data", data, "--limit", "8", "-o", tmp_path / "default")
    assert result.returncode == 0, result.stderr
    assert "no example of dataset 'fd' has a topic, so the default metrics are rouge only" in result.stderr
    recorded = json.loads((tmp_path / "default" / "results.json").read_text())
    assert recorded["config"]["metrics"] == ["rouge"]
    named = evaluate(dataset="fd", data=str(data), limit=8, metrics=["rouge"])  # the same numbers as -m rouge
    assert recorded["metrics"] == named.metrics and set(named.metrics["rouge"]) >= {"rouge1", "rougeL"}


def test_a_run_on_the_sample_without_metrics_still_scores_rouge_and_stas(private_cache, caplog):
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        result = ctrlkit.run(limit=4)
    assert result.results["config"]["metrics"] == ["rouge", "stas"]
    assert set(result.metrics) == {"rouge", "stas"} and result.results["scored"] == {"rouge": 4, "stas": 4}
    assert "default metrics" not in caplog.text
    assert result.metrics == ctrlkit.run(limit=4, metrics=["rouge", "stas"]).metrics


def test_a_dataset_without_topics_and_no_metric_says_so_in_one_line_and_scores_rouge(untopical, tmp_path,
                                                                                      private_cache):
    result = invoke_ctrlkit("run", "-d", "jsonl", "--data", untopical, "-o", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if "default metrics" in line] == [f"ctrlkit: {NO_TOPIC}"]
    recorded = json.loads((tmp_path / "run" / "results.json").read_text())
    assert recorded["config"]["metrics"] == ["rouge"] and list(recorded["metrics"]) == ["rouge"]
    named = ctrlkit.run(dataset="jsonl", data=untopical, metrics=["rouge"])
    assert recorded["metrics"] == named.metrics and recorded["baseline"] == named.results["baseline"]


def test_evaluate_in_python_without_metrics_drops_stas_too(untopical, tmp_path, caplog):
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps({"id": f"e{i}", "prediction": "Rain fell."}) + "\n" for i in range(4)))
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        result = evaluate(predictions=str(predictions), dataset="jsonl", data=untopical)
    assert result.results["config"]["metrics"] == ["rouge"]
    assert caplog.text.count("default metrics are rouge only") == 1
    with pytest.raises(ConfigurationError, match="at least one metric"):
        evaluate(predictions=str(predictions), dataset="jsonl", data=untopical, metrics=[])


def test_an_explicit_stas_is_still_refused_without_topics(untopical, tmp_path):
    result = invoke_ctrlkit("run", "-d", "jsonl", "--data", untopical, "-m", "stas", "-o", tmp_path / "run")
    assert result.returncode == 1
    assert result.stderr.strip() == ("Error: metric 'stas' reads control 'topic', but no example of dataset "
                                     "'jsonl' has it")
    assert not (tmp_path / "run").exists()
    with pytest.raises(ConfigurationError, match="metric 'stas' reads control 'topic'"):
        ctrlkit.run(dataset="jsonl", data=untopical, metrics=["rouge", "stas"])


def test_a_sweep_without_metrics_decides_per_dataset_and_resumes(untopical, tmp_path, private_cache, caplog):
    out = tmp_path / "s"
    settings = dict(out=str(out), controllers=["none"], datasets=["sample", "jsonl"], data={"jsonl": untopical},
                    limit=4)
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        rows = sweep(**settings)
    assert [sorted(row["metrics"]) for row in rows] == [["rouge", "stas"], ["rouge"]]
    assert caplog.text.count("default metrics are rouge only (give --metrics to choose)") == 1
    assert json.loads((out / "sweep.json").read_text())["settings"]["metrics"] == ["rouge", "stas"]
    assert [row["reused"] for row in sweep(**settings)] == [True, True]
    table_lines = [line for line in (out / "table.md").read_text().splitlines() if line.startswith("|")]
    assert table_lines[-1].endswith("| undefined | undefined |")
