"""The judge's own options and identity are recorded with every score it gave, and a sweep
reuses a judged cell only while its judge is the same."""

import json
from pathlib import Path

import pytest

import ctrlkit
from ctrlkit.evaluation import evaluate
from ctrlkit.analyses.interference import interference
from ctrlkit.secrets import MASK
from ctrlkit.sweeps.sweep import sweep

DOCUMENT = "A survey measured rainfall at forty stations. It found more rain in the north."


class FixedJudge(ctrlkit.Backbone):
    """A judge (``--judge fixed``) whose every answer is the focus label its option names."""

    capabilities = frozenset({"text", "messages"})
    options = (ctrlkit.Option("label", str, "empirical", "the focus label it always answers"),
               ctrlkit.Option("api_key", str, "", "a secret, to be masked where it is recorded"),
               ctrlkit.Option("note", str, "its default", "left unset: recorded as the judge took it"))

    def generate(self, inputs):
        return [json.dumps({"label": self.options["label"]}) for _ in inputs]


@pytest.fixture
def fixed_judge(throwaway_plugins):
    class Plugin:
        @ctrlkit.hookimpl
        def register_backbones(self, register):
            register("fixed", FixedJudge)

    throwaway_plugins(Plugin(), "fixed-judge")


@pytest.fixture
def rows(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"id": f"e{i}", "document": DOCUMENT, "references": ["More rain fell north."],
                                        "controls": {"focus": "empirical", "length": 8 + 4 * i}}) + "\n"
                            for i in range(4)), encoding="utf-8")
    return str(path)


JUDGE = {"fixed": {"label": "conceptual", "api_key": "sk-never-written"}}
RECORDED = {"label": "conceptual", "api_key": MASK, "note": "its default"}


def test_a_run_an_evaluation_and_an_interference_analysis_record_the_judge_options(fixed_judge, rows, tmp_path):
    run = ctrlkit.run(dataset="jsonl", data=rows, controller="none", metrics=["focus"], judge="fixed",
                      options=JUDGE, bootstrap=0, cache=False, out=str(tmp_path / "run"))
    assert run.results["config"]["judge_options"] == RECORDED
    assert run.results["config"]["judge_digest"].startswith("sha256:")
    assert run.results["metrics"]["focus"]["accuracy"] == 0.0  # the judge's option decided every label
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"id": f"e{i}", "prediction": DOCUMENT}) + "\n" for i in range(4)),
                           encoding="utf-8")
    scored = evaluate(predictions=str(predictions), dataset="jsonl", data=rows, metrics=["focus"], judge="fixed",
                      options=JUDGE, bootstrap=0, out=str(tmp_path / "evaluate"))
    assert scored.results["config"]["judge_options"] == RECORDED
    report = interference(dataset="jsonl", data=rows, controller="length", attributes=["length"],
                          metrics=["focus"], judge="fixed", options=JUDGE, cache=False, out=str(tmp_path / "ca"))
    assert report["config"]["judge_options"] == RECORDED
    for written in ("run/results.json", "evaluate/results.json", "ca/interference.json"):
        assert "sk-never-written" not in (tmp_path / written).read_text(encoding="utf-8")
    unjudged = ctrlkit.run(dataset="jsonl", data=rows, controller="none", metrics=["length"], judge="fixed",
                           bootstrap=0, cache=False)
    assert unjudged.results["config"]["judge_options"] is None  # no metric asked it
    assert unjudged.results["config"]["judge_digest"] is None


class FolderJudge(ctrlkit.Backbone):
    """A judge (``--judge folder:PATH``) whose every label is what PATH/verdict.txt says, as a
    model folder trained again answers otherwise; its identity holds that text, as an hf
    backbone's holds its folder's fingerprint."""

    capabilities = frozenset({"text", "messages"})
    options = (ctrlkit.Option("model", str, "", "folder holding verdict.txt"),)
    spec_option = "model"

    def identity(self):
        return {**super().identity(), "verdict": self._verdict()}

    def _verdict(self):
        return (Path(self.options["model"]) / "verdict.txt").read_text(encoding="utf-8")

    def generate(self, inputs):
        return [json.dumps({"label": self._verdict()}) for _ in inputs]


@pytest.fixture
def folder_judge(throwaway_plugins, tmp_path):
    class Plugin:
        @ctrlkit.hookimpl
        def register_backbones(self, register):
            register("folder", FolderJudge)

    throwaway_plugins(Plugin(), "folder-judge")
    folder = tmp_path / "judge"
    folder.mkdir()
    return folder


def _sweep(out, rows, folder):
    return sweep(out=str(out), controllers=["none"], metrics=["focus"], datasets=["jsonl"], data={"jsonl": rows},
                 judge=f"folder:{folder}", bootstrap=0, cache=False)


def _cell(out):
    (found,) = (out / "cells").rglob("results.json")
    return found, json.loads(found.read_text(encoding="utf-8"))


def test_a_sweep_runs_a_judged_cell_again_when_its_judge_changed(folder_judge, rows, tmp_path):
    out = tmp_path / "sweep"
    (folder_judge / "verdict.txt").write_text("empirical", encoding="utf-8")
    _sweep(out, rows, folder_judge)
    _, first = _cell(out)
    assert first["metrics"]["focus"]["accuracy"] == 1.0
    _sweep(out, rows, folder_judge)
    assert _cell(out)[1]["timings"] == first["timings"]  # the same judge: reused
    (folder_judge / "verdict.txt").write_text("conceptual", encoding="utf-8")
    _sweep(out, rows, folder_judge)
    assert _cell(out)[1]["metrics"]["focus"]["accuracy"] == 0.0  # the settings are the same; the judge is not


def test_a_judged_cell_recorded_before_the_judge_digest_runs_again(folder_judge, rows, tmp_path):
    out = tmp_path / "sweep"
    (folder_judge / "verdict.txt").write_text("empirical", encoding="utf-8")
    _sweep(out, rows, folder_judge)
    found, old = _cell(out)
    del old["config"]["judge_digest"]
    old["metrics"]["focus"]["accuracy"] = 0.5  # no run of these rows gives it: shows whether the cell was kept
    found.write_text(json.dumps(old), encoding="utf-8")
    _sweep(out, rows, folder_judge)
    assert _cell(out)[1]["metrics"]["focus"]["accuracy"] == 1.0
