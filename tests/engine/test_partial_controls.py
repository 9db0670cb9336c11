"""Partial controls: examples lacking a control a component reads are left uncontrolled by
controllers and unscored by metrics, counted; refused only when no example has the control, or
under ``strict_controls``."""

import json
import logging
from statistics import fmean

import pytest

import ctrlkit
from ctrlkit import SEP, Backbone, ConfigurationError, Metric, MetricResult
from helpers import invoke_ctrlkit, shared_file

DOCS = ["Rain fell on the town. The river rose.", "The team won the final. Fans cheered.",
        "Markets fell sharply. Banks lost value.", "A new phone was released. It sold out.",
        "The mayor spoke. Voters listened."]
TOPICS = ["weather", "sports", None, "technology", None]
LENGTHS = [None, 20, 30, None, None]


class Echo(Backbone):
    """Returns its input text, so a test sees exactly what the controller did."""

    name = "echo"
    capabilities = frozenset({"text", "length_budget"})
    calls = 0

    def generate(self, inputs):
        Echo.calls += 1
        return [model_input.source for model_input in inputs]


class TopicLength(Metric):
    """Reads the topic control: the number of characters of the requested topic."""

    name = "topic-length"
    reads = ("topic",)

    def compute(self, predictions, examples):
        values = [float(len(example.controls["topic"])) for example in examples]
        return MetricResult(per_example={"chars": values}, corpus={"chars": fmean(values)})


class Plugin:
    @ctrlkit.hookimpl
    def register_backbones(self, register):
        register("echo", Echo)

    @ctrlkit.hookimpl
    def register_metrics(self, register):
        register("topic-length", TopicLength)


@pytest.fixture
def partial(tmp_path, throwaway_plugins):
    throwaway_plugins(Plugin(), "partial-controls-test")
    path = tmp_path / "partial.jsonl"
    with open(path, "w") as file:
        for i, (document, topic, length) in enumerate(zip(DOCS, TOPICS, LENGTHS)):
            controls = {key: value for key, value in (("topic", topic), ("length", length)) if value is not None}
            file.write(json.dumps({"id": f"e{i}", "document": document, "references": [document.split(".")[0]],
                                   "controls": controls}) + "\n")
    return str(path)


def test_a_controller_leaves_examples_without_its_control_as_they_are(partial, tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        result = ctrlkit.run(dataset="jsonl", data=partial, controller="prepend", backbone="echo",
                             metrics=["rouge", "topic-length"], out=str(tmp_path / "out"), cache=False)
    expected = [f"{topic} {SEP} {document}" if topic else document for document, topic in zip(DOCS, TOPICS)]
    assert [sample["prediction"] for sample in result.samples] == expected
    assert result.results["uncontrolled"] == {"prepend": 2}
    assert result.results["baseline"]["uncontrolled"] == {}
    assert [sample.get("uncontrolled") for sample in result.samples] == [None, None, ["prepend"], None, ["prepend"]]
    warnings = [r.getMessage() for r in caplog.records if "uncontrolled" in r.getMessage()]
    assert len(warnings) == 1 and "controller 'prepend' left 2 of 5 examples uncontrolled (no 'topic' control)" in warnings[0]
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["uncontrolled"] == {"prepend": 2} and saved["config"]["strict_controls"] is False


def test_a_metric_scores_only_the_examples_that_carry_its_control(partial):
    result = ctrlkit.run(dataset="jsonl", data=partial, controller="prepend", backbone="echo",
                         metrics=["rouge", "topic-length"], cache=False)
    present = [topic for topic in TOPICS if topic]
    assert result.results["scored"] == {"rouge": 5, "topic-length": 3}
    assert result.metrics["topic-length"]["chars"] == pytest.approx(fmean(len(t) for t in present))
    per_example = [sample["scores"]["topic-length"]["chars"] for sample in result.samples]
    assert per_example == [float(len(t)) if t else None for t in TOPICS]
    table = result.table()
    assert "topic-length.chars (n=3 of 5)" in table
    assert "rouge1 " in table.replace("rouge.rouge1", "rouge1 ") and "rouge.rouge1 (n=" not in table


def test_a_chain_decides_for_each_controller(partial):
    result = ctrlkit.run(dataset="jsonl", data=partial, controller="length+prepend", backbone="echo",
                         metrics=["rouge"], cache=False, baseline=None)
    assert result.results["uncontrolled"] == {"length": 3, "prepend": 2}
    lacking = [sample.get("uncontrolled") for sample in result.samples]
    assert lacking == [["length"], None, ["prepend"], ["length"], ["length", "prepend"]]


def test_prepend_requiring_any_attribute_writes_those_an_example_has_and_counts_the_rest(partial):
    """One dataset's topic, another's length: each example gets what it carries; one with neither
    is left as it is, and counted as uncontrolled."""
    options = {"prepend": {"attributes": "topic,length", "require": "any"}}
    result = ctrlkit.run(dataset="jsonl", data=partial, controller="prepend", backbone="echo", metrics=["rouge"],
                         options=options, cache=False, baseline=None)
    expected = []
    for document, topic, length in zip(DOCS, TOPICS, LENGTHS):
        values = [str(value) for value in (topic, length) if value is not None]
        expected.append(f"{' | '.join(values)} {SEP} {document}" if values else document)
    assert [sample["prediction"] for sample in result.samples] == expected
    assert result.results["uncontrolled"] == {"prepend": 1}  # e4 has neither
    required_all = ctrlkit.run(dataset="jsonl", data=partial, controller="prepend", backbone="echo",
                               metrics=["rouge"], options={"prepend": {"attributes": "topic,length"}}, cache=False,
                               baseline=None)
    assert required_all.results["uncontrolled"] == {"prepend": 4}  # only e1 has both
    with pytest.raises(ConfigurationError, match=r"controller 'prepend' reads one of the controls topic, length, "
                                                 r"but example 'e4' of dataset 'jsonl' has none \(strict controls\)"):
        ctrlkit.run(dataset="jsonl", data=partial, controller="prepend", backbone="echo", metrics=["rouge"],
                    options=options, strict_controls=True, cache=False)
    with pytest.raises(ConfigurationError, match=r"reads one of the controls keywords, entity, but no example of "
                                                 r"dataset 'jsonl' has any"):
        ctrlkit.run(dataset="jsonl", data=partial, controller="prepend", backbone="echo", metrics=["rouge"],
                    options={"prepend": {"attributes": "keywords,entity", "require": "any"}}, cache=False)


def test_strict_controls_refuses_before_any_generation(partial):
    Echo.calls = 0
    with pytest.raises(ConfigurationError, match=r"controller 'prepend' reads control 'topic', but example 'e2' "
                                                 r"\(and 1 more\) of dataset 'jsonl' has none \(strict controls\)"):
        ctrlkit.run(dataset="jsonl", data=partial, controller="prepend", backbone="echo", metrics=["rouge"],
                    strict_controls=True, cache=False)
    with pytest.raises(ConfigurationError, match=r"metric 'topic-length' reads control 'topic', but example 'e2'"):
        ctrlkit.run(dataset="jsonl", data=partial, backbone="echo", metrics=["topic-length"],
                    strict_controls=True, cache=False)
    assert Echo.calls == 0


def test_a_metric_whose_control_no_example_has_is_refused(partial, tmp_path):
    Echo.calls = 0
    with pytest.raises(ConfigurationError, match="metric 'sr' reads control 'keywords', but no example of dataset "
                                                 "'jsonl' has it"):
        ctrlkit.run(dataset="jsonl", data=partial, backbone="echo", metrics=["sr"], cache=False)
    assert Echo.calls == 0


def test_evaluate_scores_the_carrying_examples(partial, tmp_path):
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"id": f"e{i}", "prediction": "word " * (10 * i + 5)}) + "\n"
                                   for i in range(5)))
    result = ctrlkit.evaluate(predictions=str(predictions), dataset="jsonl", data=partial, metrics=["length"])
    assert result.results["scored"] == {"length": 2}
    # requested 20 and 30 words (bin 0); generated 15 and 25 words: word errors 5 and 5
    assert result.metrics["length"]["word_mad"] == 5.0
    with pytest.raises(ConfigurationError, match="strict controls"):
        ctrlkit.evaluate(predictions=str(predictions), dataset="jsonl", data=partial, metrics=["length"],
                         strict_controls=True)


def test_macsum_doc_runs_with_topics_on_some_references_only(tmp_path):
    """The real MACSum-Doc file: references without a topic are left uncontrolled by prepend. Its
    first 100 references (one example each, in file order) hold both kinds."""
    path = shared_file("macsum/macdoc_val.json")
    sources = json.loads(path.read_text())
    references = [reference for source in sources for reference in source["references"]][:100]
    without_topic = sum(not (reference["control_attribute"].get("topic") or "").strip() for reference in references)
    assert 0 < without_topic < len(references)
    out = tmp_path / "macsum"
    done = invoke_ctrlkit("run", "-d", "macsum", "--data", str(path), "-c", "prepend", "-m", "rouge", "--no-baseline",
                          "--no-cache", "--limit", str(len(references)), "-o", str(out))
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "uncontrolled" in line]
    assert len(warnings) == 1 and f"controller 'prepend' left {without_topic} of {len(references)} examples" in warnings[0]
    results = json.loads((out / "results.json").read_text())
    assert results["uncontrolled"] == {"prepend": without_topic} and results["n_examples"] == len(references)
    refused = invoke_ctrlkit("run", "-d", "macsum", "--data", str(path), "-c", "prepend", "-m", "rouge",
                             "--strict-controls", "--no-cache", "-o", str(tmp_path / "strict"))
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1].startswith("Error: controller 'prepend' reads control 'topic'")
