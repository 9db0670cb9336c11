"""The conformance kit: checks that a plugin's component keeps the contracts a run relies on.

Call these from a plugin's own tests::

    from ctrlkit.testing import check_controller, check_metric

    def test_length_code_conforms():
        check_controller(LengthCode(), examples=[Example("a", "Some text.", controls={"length": 40})])

A run cannot see these contracts break where they break: a controller that mutates its example
changes what the baseline or the next controller of a chain sees, and a metric that returns one
value too few shifts every later score onto the wrong example. So each check provokes the break
on a few examples and raises AssertionError naming the contract (``controller 'x' is not pure:
...``); on success it returns None. Without ``examples`` the checks use the first examples of
the bundled ``sample`` dataset (ctrlkit-datasets), which carry a ``topic`` control.

The checks raise AssertionError themselves rather than using ``assert``, so they still check
under ``python -O``. Judge metrics (``needs_judge``) must be given their judge
(``metric.use_judge``) first. Nothing here imports torch.
"""

from __future__ import annotations

import copy
import json
import math
import numbers
from typing import Sequence

from .api import get_backbone, get_controller, get_dataset, get_metric
from .components import Backbone, Controller, ControllerChain
from .controls import given
from .errors import ConfigurationError
from .types import Example, MetricResult, ModelInput

SAMPLE_SIZE = 4
"""Sample examples used when a check is given none: a batch of several, quick for any metric."""


def check_controller(controller, examples: Sequence[Example] | None = None, topic_space=None, backbone=None,
                     dataset=None, seed: int = 0) -> None:
    """Give ``controller`` (an instance or a registered name) the run's ``seed``, fit and prepare it
    as a run does, then check on each example that ``apply`` returns a ModelInput, is pure, and
    composes with ``+``.

    The examples must carry every control the controller ``reads``. ``topic_space`` defaults to
    one built from the sample's topic documents when the controller names a ``topic_vectorizer``;
    ``backbone`` (an instance or a spec) defaults to ``extractive`` when that has every
    capability the controller ``requires``. ``dataset``, the one the examples come from, is
    given to ``use_dataset`` (default: the sample when the examples are the sample's).
    """
    if isinstance(controller, str):
        controller = get_controller(controller)
    name = controller.name or type(controller).__name__
    dataset = _source(dataset, examples)
    examples = _sample_examples() if examples is None else list(examples)
    if dataset is not None:
        controller.use_dataset(dataset)
    _check_reads(f"controller '{name}'", controller.reads, examples)
    if controller.topic_vectorizer and topic_space is None:
        topic_space = _sample_topic_space(controller.topic_vectorizer)
    controller.use_seed(seed)
    controller.fit(list(examples) if controller.needs_train_examples else [], topic_space)
    controller.prepare(_backbone_for(controller, name, backbone))
    try:
        json.dumps(controller.state())
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"controller '{name}' state() is not JSON-serialisable ({exc}); a trained model "
                             "saves it beside its weights") from None

    chains = {f"none+{name}": ControllerChain([_Identity(), controller]),
              f"{name}+none": ControllerChain([controller, _Identity()])}
    for spec, chain in chains.items():
        missing = sorted(set(controller.reads) - set(chain.reads))
        _expect(not missing, f"chain '{spec}' does not read control(s) {', '.join(missing)} that '{name}' reads")
    for example in examples:
        given = ModelInput(source=example.document)
        example_before, given_before = copy.deepcopy(example), copy.deepcopy(given)
        first = controller.apply(example, given)
        _expect(isinstance(first, ModelInput),
                f"controller '{name}' returned {type(first).__name__} for example '{example.id}', not a ModelInput")
        _expect(isinstance(first.source, str),
                f"controller '{name}' returned a ModelInput whose source is {type(first.source).__name__}, "
                f"not str, for example '{example.id}'")
        _expect(example == example_before, f"controller '{name}' is not pure: applying it changed example "
                                           f"'{example.id}' ({_changed_fields(example_before, example)})")
        _expect(given == given_before, f"controller '{name}' is not pure: applying it changed the ModelInput "
                                       f"it was given for example '{example.id}'")
        first_before = copy.deepcopy(first)
        second = controller.apply(example, given)
        _expect(second == first and first == first_before, f"controller '{name}' is not pure: applying it twice "
                                                           f"to example '{example.id}' gave different inputs")
        for spec, chain in chains.items():
            _expect(chain.apply(example, given) == first, f"controller '{name}' does not compose: chain '{spec}' "
                                                          f"gave a different input for example '{example.id}' "
                                                          f"than '{name}' alone")


def check_metric(metric, predictions: Sequence[str] | None = None, examples: Sequence[Example] | None = None,
                 topic_space=None, dataset=None) -> None:
    """Check that ``metric`` (an instance or a registered name) refuses what it lacks before any
    work, and that ``compute`` returns a MetricResult with one finite value (or None) per
    prediction for every per-example value, finite (or None) corpus values, and the examples
    unchanged; and that ``aggregate`` (what intervals are made of) gives, from the result's
    parts, every corpus value it returns as ``compute`` gave it: on all the examples (a row of
    ones), and on a subset (a 0/1 row) as ``compute`` gives it on that subset.

    The examples must carry every control the metric ``reads``. ``predictions`` default to each
    example's first reference (its document when it has none); ``topic_space`` defaults to the
    sample's, built with the metric's ``topic_vectorizer``. ``dataset``, the one the examples
    come from, is what ``check_metrics`` gives ``use_dataset`` (default: the sample when the
    examples are the sample's, else None). A judge metric is asked once per check it runs.
    """
    from .engine.checks import check_metrics

    if isinstance(metric, str):
        metric = get_metric(metric)
    name = metric.name or type(metric).__name__
    dataset = _source(dataset, examples)
    examples = _sample_examples() if examples is None else list(examples)
    if predictions is None:
        predictions = [(example.references or [example.document])[0] for example in examples]
    predictions = list(predictions)
    if len(predictions) != len(examples):
        raise ValueError(f"check_metric got {len(predictions)} predictions for {len(examples)} examples")
    _check_reads(f"metric '{name}'", metric.reads, examples)
    if metric.topic_vectorizer:
        metric.use_topic_space(topic_space or _sample_topic_space(metric.topic_vectorizer))
    _check_refusals(metric, name, predictions, examples, dataset)

    check_metrics([metric], examples, dataset, "the examples given")
    examples_before = copy.deepcopy(examples)
    result = metric.compute(predictions, examples)
    _expect(isinstance(result, MetricResult),
            f"metric '{name}' returned {type(result).__name__} from compute, not a MetricResult")
    for value_name, values in result.per_example.items():
        _expect(isinstance(values, (list, tuple)), f"metric '{name}' returned its '{value_name}' values as "
                                                   f"{type(values).__name__}, not a list")
        _expect(len(values) == len(predictions), f"metric '{name}' returned {len(values)} '{value_name}' values for "
                                                 f"{len(predictions)} predictions: a metric returns one value per "
                                                 "prediction")
        for example, value in zip(examples, values):
            _expect(_is_value(value), f"metric '{name}' value '{value_name}' of example '{example.id}' is "
                                      f"{value!r}: per-example values are finite numbers or None")
    for value_name, value in result.corpus.items():
        _expect(_is_value(value), f"metric '{name}' corpus value '{value_name}' is {value!r}: corpus values are "
                                  "finite numbers or None")
    if result.details is not None:
        _expect(len(result.details) == len(predictions),
                f"metric '{name}' returned {len(result.details)} details for {len(predictions)} predictions")
    _expect(examples == examples_before, f"metric '{name}' changed the examples it scored")
    _check_aggregate(metric, name, result, predictions, examples)
    if getattr(metric, "scores_each_example_alone", False):
        _check_alone(metric, name, result, predictions, examples)


def _check_alone(metric, name, result, predictions, examples) -> None:
    """What a metric declaring ``scores_each_example_alone`` promises (``ctrlkit evaluate`` scores a
    large file in chunks on it): the two halves of the examples, each scored apart, get the
    per-example values and parts they got scored together, and every corpus value but a count is
    one that ``aggregate`` recomputes."""
    import numpy as np

    from .bootstrap import as_parts
    from .metric_values import is_count

    half = len(examples) // 2
    if not half:
        return
    halves = [metric.compute(predictions[:half], examples[:half]), metric.compute(predictions[half:], examples[half:])]
    for what, whole, apart in (("values", result.per_example, [h.per_example for h in halves]),
                               ("parts", result.aggregation_parts(), [h.aggregation_parts() for h in halves])):
        for value_name, values in whole.items():
            joined = as_parts({value_name: [*apart[0].get(value_name, ()), *apart[1].get(value_name, ())]})
            together = as_parts({value_name: values})
            _expect(joined[value_name].shape == together[value_name].shape and
                    bool(np.allclose(joined[value_name], together[value_name], rtol=1e-9, atol=1e-12, equal_nan=True)),
                    f"metric '{name}' declares scores_each_example_alone, but its '{value_name}' {what} differ when "
                    "each half of the examples is scored apart")
    recomputed = metric.aggregate(as_parts(result.aggregation_parts()), np.ones((1, len(examples))))
    for value_name, value in result.corpus.items():
        if is_count(value_name) and value_name not in recomputed and value is not None:
            parts = [half.corpus.get(value_name) for half in halves]
            _expect(None not in parts and bool(np.isclose(sum(parts), value)),
                    f"metric '{name}' declares scores_each_example_alone, but its count '{value_name}' is {value} "
                    f"on all the examples and {parts[0]} + {parts[1]} on the two halves: counts are summed over "
                    "chunks of examples, so each must add up")
        _expect(value_name in recomputed or is_count(value_name),
                f"metric '{name}' declares scores_each_example_alone, but its corpus value '{value_name}' is "
                "neither recomputed by its aggregate nor a count (n_..., failed, ...): it cannot be gathered "
                "over chunks of examples")


def _check_aggregate(metric, name, result, predictions, examples) -> None:
    """``aggregate`` on the parts of ``result``, with a row of ones and a 0/1 row keeping every other
    example, against ``compute`` on all the examples and on those kept. It is called as a run calls
    it (:func:`ctrlkit.bootstrap.aggregated`), so an aggregate that raises or returns another shape
    fails here with the one line a run warns with."""
    import numpy as np

    from .bootstrap import AggregateError, aggregated, as_parts

    parts = result.aggregation_parts()
    for part_name, values in parts.items():
        _expect(isinstance(values, (list, tuple)) and len(values) == len(predictions),
                f"metric '{name}' returned {len(values)} '{part_name}' parts for {len(predictions)} predictions: "
                "parts are one value per prediction")
        for example, value in zip(examples, values):
            _expect(_is_value(value), f"metric '{name}' part '{part_name}' of example '{example.id}' is {value!r}: "
                                      "parts are finite numbers or None")
    kept = list(range(0, len(examples), 2))
    weights = np.ones((2 if len(kept) < len(examples) else 1, len(examples)))
    if len(weights) == 2:
        weights[1] = 0.0
        weights[1, kept] = 1.0
    try:
        recomputed = aggregated(metric, as_parts(parts), weights)
    except AggregateError as exc:
        raise AssertionError(str(exc)) from exc
    wanted = [value_name for value_name in recomputed if value_name in result.corpus]
    _expect_same(name, wanted, recomputed, 0, result.corpus, "all the examples")
    if len(weights) == 2:
        subset = metric.compute([predictions[i] for i in kept], [examples[i] for i in kept])
        _expect_same(name, [value_name for value_name in wanted if value_name in subset.corpus], recomputed, 1,
                     subset.corpus, f"the subset of examples {kept}")


def _expect_same(name, value_names, aggregated, row, corpus, which) -> None:
    import numpy as np

    for value_name in value_names:
        got, expected = float(aggregated[value_name][row]), corpus[value_name]
        expected = np.nan if expected is None else float(expected)
        same = (np.isnan(got) and np.isnan(expected)) or bool(np.isclose(got, expected, rtol=1e-9, atol=1e-12))
        _expect(same, f"metric '{name}' aggregate gives '{value_name}' = {got!r} on {which}, but compute gave "
                      f"{expected!r}: aggregate must recompute each corpus value it returns from the parts "
                      "(override it for a value that is not the mean of its per-example values)")


def check_backbone(backbone, inputs: Sequence[ModelInput] | None = None) -> None:
    """Check that ``generate`` returns a list of str, one per input, for a batch of one and of
    several, and leaves its inputs unchanged. Different inputs need not give different outputs,
    and the order is not checked: that would assume the backbone is deterministic."""
    if isinstance(backbone, str):
        backbone = get_backbone(backbone)
    name = backbone.name or type(backbone).__name__
    if inputs is None:
        inputs = [ModelInput(source=example.document) for example in _sample_examples()]
    inputs = list(inputs)
    for batch in (inputs[:1], inputs if len(inputs) > 1 else inputs * 2):
        before = copy.deepcopy(batch)
        outputs = backbone.generate(batch)
        _expect(isinstance(outputs, list), f"backbone '{name}' returned {type(outputs).__name__}, not a list")
        _expect(len(outputs) == len(batch), f"backbone '{name}' returned {len(outputs)} summaries for {len(batch)} "
                                            "inputs: a backbone returns one string per input")
        for i, output in enumerate(outputs):
            _expect(isinstance(output, str),
                    f"backbone '{name}' returned {type(output).__name__} for input {i}, not str")
        _expect(batch == before, f"backbone '{name}' changed the inputs it was given")


def check_executor(executor: str, folder, **where) -> None:
    """Check that the executor registered as ``executor`` gives what the local one gives: a run
    (generation through its ``generation`` pool) and a sweep of two cells (through its
    ``run_cells``) on the bundled sample, written under ``folder`` (a fresh directory), record the
    same numbers and the same outputs as with ``executor="local"``. ``where`` is passed to both
    calls on the executor's side (``address=...``, and ``workers=...`` for the run); generations are
    not read from or written to the shared cache, so each side really runs."""
    from pathlib import Path

    from .engine.run import run
    from .sweeps.sweep import sweep

    folder = Path(folder)
    settings = dict(controller="tag", metrics=["stas", "rouge"], limit=6, bootstrap=0, cache=False)
    here = run(**settings, out=str(folder / "run-local"))
    there = run(**settings, executor=executor, out=str(folder / f"run-{executor}"), **where)
    _expect([s["prediction"] for s in there.samples] == [s["prediction"] for s in here.samples],
            f"executor '{executor}': a run's summaries differ from the local executor's")
    _expect(there.metrics == here.metrics, f"executor '{executor}': a run's metrics differ from the local executor's")
    grid = dict(controllers=["none", "tag"], metrics=["stas"], limit=6, bootstrap=0, cache=False)
    rows_here = sweep(out=str(folder / "sweep-local"), **grid)
    rows_there = sweep(out=str(folder / f"sweep-{executor}"), executor=executor,
                       **{key: value for key, value in where.items() if key != "workers"}, **grid)
    _expect(len(rows_there) == len(rows_here) == 2, f"executor '{executor}': a sweep of 2 cells gave "
                                                    f"{len(rows_there)} rows")
    for mine, local in zip(rows_there, rows_here):
        _expect(mine["metrics"] == local["metrics"], f"executor '{executor}': sweep cell '{mine['controller']}' "
                                                     "scored other numbers than the local executor's")
        _expect((folder / f"sweep-{executor}" / mine["run"] / "samples.jsonl").is_file(),
                f"executor '{executor}': sweep cell '{mine['controller']}' wrote no samples.jsonl in the sweep folder")


def check_dataset(dataset, split: str | None = None) -> None:
    """Check that ``load`` (of ``split``; default the dataset's own) returns Examples with unique
    string ids, non-empty documents, references as lists of str, and, when the dataset declares
    ``controls`` as a tuple, every declared control on every example."""
    if isinstance(dataset, str):
        dataset = get_dataset(dataset)
    name = dataset.name or type(dataset).__name__
    examples = dataset.load(split if split is not None else dataset.default_split)
    _expect(isinstance(examples, list), f"dataset '{name}' load returned {type(examples).__name__}, not a list")
    _expect(len(examples) > 0, f"dataset '{name}' load returned no examples")
    declared = dataset.controls if isinstance(dataset.controls, tuple) else ()
    seen = set()
    for i, example in enumerate(examples):
        _expect(isinstance(example, Example), f"item {i} of dataset '{name}' is {type(example).__name__}, "
                                              "not an Example")
        _expect(isinstance(example.id, str), f"example {i} of dataset '{name}' has a {type(example.id).__name__} "
                                             "id, not str")
        where = f"example '{example.id}' of dataset '{name}'"
        _expect(example.id not in seen, f"dataset '{name}' has two examples with id '{example.id}'")
        seen.add(example.id)
        _expect(isinstance(example.document, str) and bool(example.document.strip()), f"{where} has an empty document")
        _expect(isinstance(example.references, list) and all(isinstance(r, str) for r in example.references),
                f"{where} has references that are not a list of str")
        _expect(isinstance(example.controls, dict), f"{where} has controls that are not a dict")
        for control in declared:
            _expect(given(example.controls.get(control)),
                    f"{where} lacks control '{control}', which the dataset declares in its controls")


class _Identity(Controller):
    """What the ``none`` controller does, so the composition check needs no plugin."""

    name = "none"

    def apply(self, example, model_input):
        return model_input


def _check_refusals(metric, name, predictions, examples, dataset) -> None:
    """Examples stripped of their references, or of one control at a time, must be refused by
    ``check_metrics`` when the metric declares it needs them, and be scored when it does not:
    a metric that accepts them and then fails in ``compute`` fails after generation is paid for."""
    from .engine.checks import check_metrics

    variants = [("references", metric.needs_references, [_without(e, references=[]) for e in examples])]
    for control in sorted({c for example in examples for c in example.controls}):
        variants.append((f"control '{control}'", control in metric.reads, [
            _without(e, controls={k: v for k, v in e.controls.items() if k != control}) for e in examples]))
    for what, required, lacking in variants:
        try:
            check_metrics([metric], lacking, dataset, "the examples given")
        except ConfigurationError:
            continue
        _expect(not required, f"metric '{name}' needs {what}, but check_metrics accepted examples without it")
        try:
            metric.compute(predictions, lacking)
        except Exception as exc:
            raise AssertionError(
                f"metric '{name}' accepted examples without {what} before work, then failed on them in compute "
                f"({type(exc).__name__}: {exc}): declare it (reads / needs_references) or refuse it in check()"
            ) from exc


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def _without(example: Example, **changes) -> Example:
    return Example(**{**vars(copy.deepcopy(example)), **changes})


def _check_reads(who: str, reads, examples) -> None:
    for attribute in reads:
        for example in examples:
            _expect(given(example.controls.get(attribute)),
                    f"{who} reads control '{attribute}', but example '{example.id}' lacks it: check it on examples "
                    "that carry every control it reads")




def _is_value(value) -> bool:
    if value is None:
        return True
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _changed_fields(before: Example, after: Example) -> str:
    return "changed: " + ", ".join(field for field in vars(before) if getattr(before, field) != getattr(after, field))


def _backbone_for(controller, name, backbone) -> Backbone:
    """The backbone to prepare on: the one given, else the extractive one when it suffices."""
    given = backbone is not None
    if not isinstance(backbone, Backbone):
        backbone = get_backbone(backbone or "extractive")
    if not controller.requires <= backbone.capabilities:
        missing = ", ".join(sorted(controller.requires - backbone.capabilities))
        hint = "" if given else ": pass check_controller(..., backbone=...)"
        raise ConfigurationError(f"controller '{name}' needs backbone capability {missing}, which backbone "
                                 f"'{backbone.name}' lacks{hint}")
    return backbone


def _sample():
    try:
        return get_dataset("sample")
    except KeyError:
        raise ConfigurationError("the checks' default examples come from the 'sample' dataset of ctrlkit-datasets, "
                                 "which is not installed: pass examples") from None


def _source(dataset, examples):
    """The dataset given, else the sample when the examples will be the sample's."""
    return _sample() if dataset is None and examples is None else dataset


def _sample_examples() -> list[Example]:
    return _sample().load("test")[:SAMPLE_SIZE]


def _sample_topic_space(vectorizer: str):
    from .topics import TopicSpace

    return TopicSpace.fit(_sample().topic_documents(), vectorizer)
