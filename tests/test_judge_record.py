"""The judge's own options are recorded with every score it gave."""

import json

import pytest

import ctrlkit
from ctrlkit.evaluation import evaluate
from ctrlkit.interference import interference
from ctrlkit.secrets import MASK

DOCUMENT = "A survey measured rainfall at forty stations. It found more rain in the north."


class FixedJudge(ctrlkit.Backbone):
    """A judge (``--judge fixed``) whose every answer is the focus label its option names."""

    capabilities = frozenset({"text", "messages"})
    options = (ctrlkit.Option("label", str, "empirical", "the focus label it always answers"),
               ctrlkit.Option("api_key", str, "", "a secret, to be masked where it is recorded"))

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
RECORDED = {"label": "conceptual", "api_key": MASK}


def test_a_run_an_evaluation_and_an_interference_analysis_record_the_judge_options(fixed_judge, rows, tmp_path):
    run = ctrlkit.run(dataset="jsonl", data=rows, controller="none", metrics=["focus"], judge="fixed",
                      options=JUDGE, bootstrap=0, cache=False, out=str(tmp_path / "run"))
    assert run.results["config"]["judge_options"] == RECORDED
    assert run.results["metrics"]["focus"]["accuracy"] == 0.0  # the judge's option decided every label
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"id": f"e{i}", "prediction": DOCUMENT}) + "\n" for i in range(4)))
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
