"""Values a plugin hands back are made plain where they enter (issue 36, item 4): numpy scalars
become Python numbers, and what cannot be a number or a text is refused in one line naming the
plugin and the field, before anything is written, and without losing the generations (the cache
keeps them)."""

import json
import math

import numpy as np
import pytest

import ctrlkit
from ctrlkit import Backbone, CtrlkitError, Dataset, Metric, MetricResult
from ctrlkit.types import Example

DOCS = ["Rain fell on the town. The river rose.", "The team won the final. Fans cheered.",
        "Markets fell sharply. Banks lost value."]


class Echo(Backbone):
    name = "values-echo"
    capabilities = frozenset({"text"})
    calls = 0

    def generate(self, inputs):
        Echo.calls += len(inputs)
        return [np.str_(model_input.source) for model_input in inputs]


class NumpyData(Dataset):
    """A plugin dataset whose controls and meta hold numpy scalars and 0-d arrays."""

    name = "values-numpy"
    controls = None

    def load(self, split=None):
        return [Example(id=f"e{i}", document=document, references=[document.split(".")[0]],
                        controls={"length": np.int64(10 + i), "topic": np.str_("weather")},
                        meta={"score": np.float32(0.5), "flag": np.bool_(True), "grid": np.array(3.25),
                              "list": [np.int32(1), np.float64(2.5)]})
                for i, document in enumerate(DOCS)]


class NumpyMetric(Metric):
    """Numpy scalars everywhere a metric returns numbers, and in its details."""

    name = "values-numpy-metric"

    def compute(self, predictions, examples):
        values = [np.float32(len(p) / 10) for p in predictions]
        return MetricResult(per_example={"chars": values, "n_words": [np.int64(len(p.split())) for p in predictions]},
                            corpus={"chars": np.float64(np.mean(values)), "n_words": np.int64(3),
                                    "ok": np.bool_(True), "zero_d": np.array(1.5)},
                            details=[{"raw": np.float32(1.25), "flags": [np.bool_(False)], "label": np.str_("x"),
                                      "array": np.array(2)} for _ in predictions])


BAD = {
    "string-corpus": lambda n: MetricResult(per_example={}, corpus={"score": "0.5"}),
    "text-corpus": lambda n: MetricResult(per_example={}, corpus={"score": "high"}),
    "complex-corpus": lambda n: MetricResult(per_example={}, corpus={"score": 1 + 2j}),
    "complex-per-example": lambda n: MetricResult(per_example={"score": [1j] * n}, corpus={}),
    "string-per-example": lambda n: MetricResult(per_example={"score": ["a"] * n}, corpus={}),
    "list-corpus": lambda n: MetricResult(per_example={}, corpus={"score": [1, 2]}),
    "none-result": lambda n: None,
    "dict-result": lambda n: {"score": 1.0},
    "per-example-not-list": lambda n: MetricResult(per_example={"score": 0.5}, corpus={}),
    "short-per-example": lambda n: MetricResult(per_example={"score": [0.5] * (n - 1)}, corpus={}),
    "short-details": lambda n: MetricResult(per_example={}, corpus={}, details=[{}] * (n + 2)),
    "object-detail": lambda n: MetricResult(per_example={}, corpus={}, details=[{"x": object()}] * n),
    "array-per-example": lambda n: MetricResult(per_example={"score": [np.zeros(2)] * n}, corpus={}),
    "raises": lambda n: 1 / 0,
    # integers no float holds: past 4,300 digits Python cannot even write them as text
    "huge-int-corpus": lambda n: MetricResult(per_example={}, corpus={"score": 10 ** 5000}),
    "huge-int-per-example": lambda n: MetricResult(per_example={"score": [1] * (n - 1) + [-10 ** 5000]}, corpus={}),
    "huge-int-detail": lambda n: MetricResult(per_example={}, corpus={}, details=[{"x": [10 ** 5000]}] * n),
    "beyond-float-int-corpus": lambda n: MetricResult(per_example={}, corpus={"score": 10 ** 400}),
    "numpy-object-huge-int": lambda n: MetricResult(per_example={}, corpus={"score": np.array(10 ** 5000)}),
    "raises-long": lambda n: (_ for _ in ()).throw(RuntimeError("first line\nsecond line " + "x" * 5000)),
}


def bad_metric(kind):
    class Bad(Metric):
        name = f"values-bad-{kind}"

        def compute(self, predictions, examples):
            return BAD[kind](len(predictions))

    return Bad


class Plugin:
    @ctrlkit.hookimpl
    def register_backbones(self, register):
        register("values-echo", Echo)

    @ctrlkit.hookimpl
    def register_datasets(self, register):
        register("values-numpy", NumpyData)

    @ctrlkit.hookimpl
    def register_metrics(self, register):
        register("values-numpy-metric", NumpyMetric)
        for kind in BAD:
            register(f"values-bad-{kind}", bad_metric(kind))


@pytest.fixture
def plugin(throwaway_plugins, private_cache):
    throwaway_plugins(Plugin(), "plugin-values-test")


def test_numpy_scalars_from_a_dataset_and_a_metric_are_written_as_plain_numbers(plugin, tmp_path):
    out = tmp_path / "out"
    result = ctrlkit.run(dataset="values-numpy", controller="none", backbone="values-echo",
                         metrics=["values-numpy-metric"], out=str(out), cache=False, bootstrap=0)
    saved = json.loads((out / "results.json").read_text())
    corpus = saved["metrics"]["values-numpy-metric"]
    assert corpus["n_words"] == 3 and type(corpus["n_words"]) is int
    assert corpus["ok"] == 1 and corpus["zero_d"] == 1.5
    assert math.isclose(corpus["chars"], result.results["metrics"]["values-numpy-metric"]["chars"])
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert samples[0]["details"]["values-numpy-metric"] == {"raw": 1.25, "flags": [False], "label": "x", "array": 2}
    assert samples[0]["controls"] == {"length": 10, "topic": "weather"}
    assert type(result.samples[0]["prediction"]) is str


def test_a_datasets_numpy_scalars_are_admitted_as_python_values():
    from ctrlkit.intake import admit_examples

    example, = admit_examples(NumpyData().load()[:1], "values-numpy")
    assert example.meta == {"score": 0.5, "flag": True, "grid": 3.25, "list": [1, 2.5]}
    assert [type(value) for value in example.meta.values()] == [float, bool, float, list]
    assert type(example.controls["length"]) is int and type(example.controls["topic"]) is str


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_metric_value_is_one_line_naming_the_metric_and_keeps_the_generations(plugin, tmp_path, kind):
    Echo.calls = 0
    with pytest.raises(CtrlkitError) as caught:
        ctrlkit.run(dataset="values-numpy", controller="none", backbone="values-echo",
                    metrics=[f"values-bad-{kind}"], out=str(tmp_path / "out"), bootstrap=0)
    message = str(caught.value)
    assert f"metric 'values-bad-{kind}'" in message and "\n" not in message, message
    assert Echo.calls == len(DOCS)
    # the generations were cached before scoring: a rerun with a good metric generates nothing again
    ctrlkit.run(dataset="values-numpy", controller="none", backbone="values-echo",
                metrics=["values-numpy-metric"], out=str(tmp_path / "again"), bootstrap=0)
    assert Echo.calls == len(DOCS)


def test_a_controllers_numpy_features_are_plain_and_an_odd_one_is_refused():
    from ctrlkit.engine.generation import _plain_input
    from ctrlkit.types import ModelInput

    class Named:
        name = "odd"

    example = Example(id="e0", document="A text.")
    made = _plain_input(ModelInput(source=np.str_("A text."), features={"target_words": np.int64(12)}), Named, example)
    assert type(made.source) is str and type(made.features["target_words"]) is int
    with pytest.raises(CtrlkitError, match=r"controller 'odd', example 'e0': features\.w is a ndarray"):
        _plain_input(ModelInput(source="A text.", features={"w": np.zeros(3)}), Named, example)
    with pytest.raises(CtrlkitError, match=r"controller 'odd', example 'e0': 'guidance' is int"):
        _plain_input(ModelInput(source="A text.", guidance=3), Named, example)
    deep = []
    for _ in range(500):
        deep = [deep]
    with pytest.raises(CtrlkitError, match=r"features\.d.* nested over 100 levels"):
        _plain_input(ModelInput(source="A text.", features={"d": deep}), Named, example)


def test_a_dataset_value_that_is_neither_number_nor_text_is_refused_naming_the_field():
    from ctrlkit.intake import admit_examples

    example = Example(id="e0", document="A text.", controls={"topic": object()})
    with pytest.raises(CtrlkitError, match=r"dataset 'odd': example 'e0': controls\.topic .*object"):
        admit_examples([example], "odd")
    example = Example(id="e1", document="A text.", meta={"vector": np.zeros(3)})
    with pytest.raises(CtrlkitError, match=r"dataset 'odd': example 'e1': meta\.vector .*ndarray"):
        admit_examples([example], "odd")
    example = Example(id="e2", document="A text.", meta={"c": 1j})
    with pytest.raises(CtrlkitError, match=r"meta\.c"):
        admit_examples([example], "odd")


HUGE = {"past the digit limit": 10 ** 5000, "negative": -10 ** 5000, "beyond the largest float": 10 ** 400,
        "2 ** 1024": 2 ** 1024}


@pytest.mark.parametrize("size", sorted(HUGE))
def test_an_integer_no_float_holds_is_refused_where_it_enters_naming_the_field(size):
    """An int over 4,300 digits passed the plain-value check and failed the write after all the
    work (Python will not turn it into text); one beyond the largest float fails any mean. Refused
    where it enters, in one line naming the plugin and the field: a dataset's controls and meta, a
    controller's features, a controller's saved state."""
    from ctrlkit.engine.generation import _plain_input
    from ctrlkit.intake import admit_examples, plain
    from ctrlkit.types import ModelInput

    huge = HUGE[size]
    for field, example in (("controls.length", Example(id="e0", document="A text.", controls={"length": huge})),
                           (r"meta.scores\[1\]", Example(id="e0", document="A text.", meta={"scores": [1, huge]}))):
        with pytest.raises(CtrlkitError) as caught:
            admit_examples([example], "odd")
        message = str(caught.value)
        assert "\n" not in message and len(message) < 300, message[:300]
        assert __import__("re").search(rf"dataset 'odd': example 'e0': {field} is an integer of about \d+ digits",
                                       message), message

    class Named:
        name = "odd"

    with pytest.raises(CtrlkitError, match=r"controller 'odd', example 'e0': features\.n is an integer"):
        _plain_input(ModelInput(source="A text.", features={"n": huge}), Named, Example(id="e0", document="A text."))
    with pytest.raises(CtrlkitError, match=r"^state\.k is an integer of about"):
        plain({"k": huge}, "state")


def test_the_largest_integer_a_float_holds_is_still_a_plain_value():
    from ctrlkit.intake import plain

    largest = int(float.fromhex("0x1.fffffffffffffp+1023"))
    assert plain({"a": [largest, -largest, 2 ** 63, 0]}, "x") == {"a": [largest, -largest, 2 ** 63, 0]}
    assert json.loads(json.dumps(largest)) == largest
