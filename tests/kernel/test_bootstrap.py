"""Bootstrap intervals and paired tests (ctrlkit.bootstrap), checked against scipy.stats and against
a paired cluster bootstrap written here as a plain loop; and what a run records of them."""

import json
import logging

import numpy as np
import pytest
import scipy.stats

import ctrlkit
from helpers import NEWTS_CSV, ROOT, invoke_ctrlkit, shared_file
from ctrlkit import Example, Metric, MetricResult
from ctrlkit.bootstrap import groups_of, intervals, paired, resample_weights
from ctrlkit.errors import OptionError


class Mean(Metric):
    """The default aggregate: a corpus value that is the mean of its per-example values."""

    name = "mean"


class Ratio(Metric):
    """A corpus value that is no mean of per-example values: sum(hits) / sum(trials)."""

    name = "ratio"

    def aggregate(self, parts, weights):
        return {"ratio": (weights @ parts["hits"]) / (weights @ parts["trials"])}


def _mean(a, axis=-1):
    return np.mean(a, axis=axis)


def _loop_bootstrap(statistic, groups, resamples, seed, confidence=0.95):
    """A paired cluster bootstrap as a loop over resamples: the same group draws as the engine
    (``integers(0, G, (R, G))`` of ``default_rng(seed)``), each resample made as a list of example
    indices (every example of each drawn group, once per draw), ``statistic(indices)`` computed on it."""
    members = {}
    for i, group in enumerate(groups):
        members.setdefault(group, []).append(i)
    order = sorted(members)
    drawn = np.random.default_rng(seed).integers(0, len(order), (resamples, len(order)))
    values = []
    for row in drawn:
        indices = [i for g in row for i in members[order[g]]]
        values.append(statistic(indices))
    values = np.array(values)
    alpha = (1 - confidence) / 2
    return np.percentile(values, 100 * alpha), np.percentile(values, 100 * (1 - alpha)), np.std(values, ddof=1)


def test_intervals_equal_scipy_percentile_bootstrap_on_the_same_resamples():
    x = np.random.default_rng(1).normal(0.3, 1.0, 60)
    got = intervals(Mean(), {"mean": x}, np.arange(60), resamples=999, seed=11)["mean"]
    expected = scipy.stats.bootstrap((x,), _mean, n_resamples=999, method="percentile", vectorized=True,
                                     rng=np.random.default_rng(11))
    assert np.isclose(got["low"], expected.confidence_interval.low, rtol=1e-12)
    assert np.isclose(got["high"], expected.confidence_interval.high, rtol=1e-12)
    assert np.isclose(got["se"], expected.standard_error, rtol=1e-12)


def test_resample_weights_count_scipys_index_draws():
    weights = resample_weights(np.arange(25), 50, seed=4)
    drawn = np.random.default_rng(4).integers(0, 25, (50, 25))  # what scipy.stats.bootstrap draws
    assert np.array_equal(weights, np.array([np.bincount(row, minlength=25) for row in drawn]))


def test_a_corpus_only_statistic_gets_the_interval_of_its_recomputation_on_each_resample():
    rng = np.random.default_rng(2)
    trials = rng.integers(1, 20, 40).astype(float)
    hits = rng.binomial(trials.astype(int), 0.4).astype(float)
    got = intervals(Ratio(), {"hits": hits, "trials": trials}, np.arange(40), resamples=500, seed=5)["ratio"]
    expected = scipy.stats.bootstrap((hits, trials), lambda h, t, axis=-1: h.sum(axis) / t.sum(axis), paired=True,
                                     n_resamples=500, method="percentile", vectorized=True,
                                     rng=np.random.default_rng(5))
    assert np.isclose(got["low"], expected.confidence_interval.low, rtol=1e-12)
    assert np.isclose(got["high"], expected.confidence_interval.high, rtol=1e-12)
    assert np.isclose(got["se"], expected.standard_error, rtol=1e-12)


def test_cluster_resamples_draw_a_groups_examples_together():
    groups = np.repeat(np.arange(15), [1, 2, 3] * 5)
    weights = resample_weights(groups, 300, seed=8)
    assert weights.shape == (300, len(groups))
    for g in range(15):
        block = weights[:, groups == g]
        assert (block == block[:, :1]).all()  # every example of a group weighs what its group was drawn
    firsts = weights[:, np.unique(groups, return_index=True)[1]]
    assert (firsts.sum(axis=1) == 15).all()  # each resample draws as many groups as there are


def test_paired_interval_equals_a_paired_cluster_bootstrap_written_as_a_loop():
    rng = np.random.default_rng(3)
    groups = np.repeat(np.arange(20), 2)
    b = rng.normal(0.4, 0.1, 40) + np.repeat(rng.normal(0, 0.2, 20), 2)  # examples of a document correlate
    a = b + rng.normal(0.02, 0.05, 40)
    a[5] = np.nan  # an example without a value in one arm is left out of that arm's mean
    got = paired(Mean(), {"mean": a}, {"mean": b}, groups, resamples=400, seed=9)["mean"]
    low, high, se = _loop_bootstrap(lambda idx: np.nanmean(a[idx]) - np.nanmean(b[idx]), groups, 400, 9)
    assert np.isclose(got["difference"], np.nanmean(a) - np.nanmean(b), rtol=1e-12)
    assert np.allclose([got["low"], got["high"], got["se"]], [low, high, se], rtol=1e-10)


def test_paired_interval_without_groups_equals_scipys_paired_bootstrap():
    rng = np.random.default_rng(6)
    b = rng.normal(0.5, 0.1, 30)
    a = b + rng.normal(0.01, 0.03, 30)
    got = paired(Mean(), {"mean": a}, {"mean": b}, np.arange(30), resamples=600, seed=2)["mean"]
    expected = scipy.stats.bootstrap((a, b), lambda x, y, axis=-1: x.mean(axis) - y.mean(axis), paired=True,
                                     n_resamples=600, method="percentile", vectorized=True,
                                     rng=np.random.default_rng(2))
    assert np.isclose(got["low"], expected.confidence_interval.low, rtol=1e-12)
    assert np.isclose(got["high"], expected.confidence_interval.high, rtol=1e-12)


def test_paired_p_agrees_with_scipys_permutation_test_within_monte_carlo_error():
    rng = np.random.default_rng(12)
    b = rng.normal(0.5, 0.2, 40)
    a = b + rng.normal(0.02, 0.1, 40)  # a p-value far from both ends
    resamples = 20000
    got = paired(Mean(), {"mean": a}, {"mean": b}, np.arange(40), resamples=resamples, seed=1)["mean"]["p"]
    expected = scipy.stats.permutation_test(
        (a, b), lambda x, y, axis=-1: np.abs(x.mean(axis) - y.mean(axis)), permutation_type="samples",
        alternative="greater", n_resamples=resamples, vectorized=True, rng=np.random.default_rng(7)).pvalue
    assert 0.02 < expected < 0.5
    error = np.sqrt(2 * expected * (1 - expected) / resamples)  # two independent Monte Carlo estimates
    assert abs(got - expected) < 4 * error


def test_paired_p_equals_a_permutation_loop_on_the_same_swaps():
    rng = np.random.default_rng(4)
    groups = np.repeat(np.arange(12), 3)
    b = rng.normal(0.5, 0.2, 36)
    a = b + rng.normal(0.05, 0.1, 36)
    resamples, seed = 3000, 5
    got = paired(Mean(), {"mean": a}, {"mean": b}, groups, resamples=resamples, seed=seed)["mean"]
    swaps = np.random.default_rng(seed + 1).integers(0, 2, (resamples, 12))  # the engine's permutation stream
    observed = abs(a.mean() - b.mean())
    extreme = 0
    for row in swaps:
        swapped = row[groups].astype(bool)
        left, right = np.where(swapped, b, a), np.where(swapped, a, b)
        extreme += abs(left.mean() - right.mean()) >= observed * (1 - 1e-12)
    assert got["p"] == (1 + extreme) / (1 + resamples)


def test_identical_arms_have_no_difference_and_p_one():
    x = np.random.default_rng(0).random(20)
    got = paired(Mean(), {"mean": x}, {"mean": x.copy()}, np.arange(20), resamples=200, seed=0)["mean"]
    assert got["difference"] == 0 and got["low"] == got["high"] == 0 and got["p"] == 1.0


def test_a_value_undefined_on_every_resample_gets_no_interval():
    x = np.full(10, np.nan)
    assert intervals(Mean(), {"mean": x}, np.arange(10), resamples=50) == {}


def test_groups_come_from_the_datasets_group_field_then_the_controls_then_the_pick():
    sample = ctrlkit.get_dataset("sample")
    examples = sample.load("test")[:6]
    assert list(groups_of(examples, sample)) == [0, 0, 1, 1, 2, 2]  # two topics of one article
    assert list(groups_of(examples, None)) == [0, 1, 2, 3, 4, 5]

    class ByTopic(ctrlkit.Dataset):
        group_field = "topic"

    by_control = [Example(str(i), "text", controls={"topic": topic}) for i, topic in enumerate("xyxzy")]
    by_control.append(Example("5", "text"))  # without the field: a group of its own
    assert list(groups_of(by_control, ByTopic())) == [0, 1, 0, 2, 1, 3]
    picks = [Example(f"d{d}#rank{r}", "text", meta={"topic_pick": {"rank": r}}) for d in (1, 2) for r in (1, 2)]
    assert list(groups_of(picks, None)) == [0, 0, 1, 1]


def test_resamples_in_several_chunks_are_the_same_cluster_bootstrap(monkeypatch):
    import ctrlkit.bootstrap as engine

    groups = np.repeat(np.arange(10), 2)
    x = np.random.default_rng(9).random(20)
    monkeypatch.setattr(engine, "CHUNK_CELLS", 7 * 20)  # 7 resamples a chunk
    chunked = intervals(Mean(), {"mean": x}, groups, resamples=100, seed=3)["mean"]
    weights = resample_weights(groups, 100, seed=3)
    assert len({tuple(row) for row in weights}) > 90
    means = (weights @ x) / weights.sum(axis=1)
    assert np.allclose([chunked["low"], chunked["high"], chunked["se"]],
                       [*np.percentile(means, [2.5, 97.5]), np.std(means, ddof=1)], rtol=1e-12)


# --- what a run records --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("boot") / "run"
    result = ctrlkit.run(controller="tag", metrics=["rouge", "stas"], limit=40, seed=3, bootstrap=300, out=str(out))
    return out, result


def test_a_run_records_its_bootstrap_and_an_interval_for_each_mean(sample_run):
    out, result = sample_run
    written = json.loads((out / "results.json").read_text())
    assert written["config"]["bootstrap"] == {"resamples": 300, "seed": 3, "confidence": 0.95, "groups": "article"}
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    articles = [sample["id"].split(":")[0] for sample in samples]  # the sample's ids are ARTICLE:TOPIC
    for arm, intervals_, scores in (("run", written["intervals"], [s["scores"] for s in samples]),
                                    ("baseline", written["baseline"]["intervals"],
                                     [s["baseline"]["scores"] for s in samples])):
        values = np.array([score["rouge"]["rouge1"] for score in scores])
        low, high, se = _loop_bootstrap(lambda idx: values[idx].mean(), articles, 300, 3)
        assert np.allclose([intervals_["rouge"]["rouge1"][k] for k in ("low", "high", "se")], [low, high, se],
                           rtol=1e-9), arm
    assert set(written["intervals"]["rouge"]) == {"rouge1", "rouge2", "rougeL", "rougeLsum"}


def test_a_run_with_a_baseline_records_the_paired_difference(sample_run):
    out, result = sample_run
    written = json.loads((out / "results.json").read_text())
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    articles = [sample["id"].split(":")[0] for sample in samples]
    a = np.array([s["scores"]["stas"]["stas"] for s in samples])
    b = np.array([s["baseline"]["scores"]["stas"]["stas"] for s in samples])
    found = written["paired"]["stas"]["stas"]
    low, high, se = _loop_bootstrap(lambda idx: a[idx].mean() - b[idx].mean(), articles, 300, 3)
    assert np.allclose([found["low"], found["high"], found["se"]], [low, high, se], rtol=1e-9)
    assert np.isclose(found["difference"], written["metrics"]["stas"]["stas"] - written["baseline"]["metrics"]["stas"]
                      ["stas"], rtol=1e-9)
    assert 1 / 301 <= found["p"] <= 1
    assert found["permutations"] == 300 and isinstance(found["permutations"], int)  # a count: 300, not 300.0
    from ctrlkit.statistics_text import p_text

    row = next(line for line in result.table().splitlines() if line.startswith("stas "))
    assert f" {p_text(found)}" in row and f"[{found['low']:+.4f}, {found['high']:+.4f}]" in row


def test_bootstrap_zero_records_no_intervals_and_a_bad_count_is_refused():
    result = ctrlkit.run(controller="tag", metrics=["rouge"], limit=10, bootstrap=0)
    assert result.results["intervals"] is None and result.results["paired"] is None
    assert result.results["baseline"]["intervals"] is None
    assert result.results["config"]["bootstrap"]["resamples"] == 0 and "[" not in result.table()
    with pytest.raises(OptionError, match="bootstrap"):
        ctrlkit.run(limit=2, bootstrap=-1)


def test_evaluate_records_intervals_and_the_cli_takes_bootstrap_and_seed(tmp_path):
    predictions = tmp_path / "predictions.jsonl"
    examples = ctrlkit.get_dataset("sample").load("test")[:12]
    predictions.write_text("".join(json.dumps({"id": e.id, "prediction": e.document[:200]}) + "\n" for e in examples))
    library = ctrlkit.evaluate(predictions=str(predictions), metrics=["rouge"], limit=12, bootstrap=200, seed=4)
    assert library.results["config"]["bootstrap"] == {"resamples": 200, "seed": 4, "confidence": 0.95,
                                                      "groups": "article"}
    cli = invoke_ctrlkit("evaluate", "-p", str(predictions), "-m", "rouge", "--limit", "12", "--bootstrap", "200",
                         "--seed", "4", "-o", str(tmp_path / "cli"))
    assert cli.returncode == 0, cli.stderr
    assert json.loads((tmp_path / "cli" / "results.json").read_text())["intervals"] == library.results["intervals"]
    assert library.results["intervals"]["rouge"]["rouge1"]["low"] < library.metrics["rouge"]["rouge1"]


def test_a_newts_run_resamples_articles():
    data = str(shared_file(NEWTS_CSV.relative_to(ROOT.parent / "shared" / "data")))
    result = ctrlkit.run(dataset="newts", data=data, controller="prepend", metrics=["rouge"], limit=30,
                         bootstrap=200)
    assert result.results["config"]["bootstrap"]["groups"] == "doc_id"
    examples = ctrlkit.get_dataset("newts", path=data).load(result.results["config"]["split"])[:30]
    groups = groups_of(examples, ctrlkit.get_dataset("newts", path=data))
    assert len(set(groups)) <= 15 < len(examples)  # two topics (examples) per article
    values = np.array([s["scores"]["rouge"]["rouge1"] for s in result.samples])
    low, high, se = _loop_bootstrap(lambda idx: values[idx].mean(), list(groups), 200, 0)
    found = result.results["intervals"]["rouge"]["rouge1"]
    assert np.allclose([found["low"], found["high"], found["se"]], [low, high, se], rtol=1e-9)
    assert "p=" in result.table()


def test_samples_keep_parts_only_where_they_differ_from_the_per_example_values():
    class Counted(Metric):
        name = "counted"

        def compute(self, predictions, examples):
            words = [float(len(p.split())) for p in predictions]
            long = [float(w > 50) for w in words]
            return MetricResult({"long": long}, {"long": float(np.mean(long))}, parts={"words": words})

        def aggregate(self, parts, weights):
            return {"long": (weights @ (parts["words"] > 50)) / weights.sum(axis=1)}

    examples = ctrlkit.get_dataset("sample").load("test")[:4]
    from ctrlkit.engine.scoring import score

    scores = score([Counted(), ctrlkit.get_metric("rouge")], [e.document for e in examples], examples)
    assert [set(parts) for parts in scores.per_example_parts] == [{"counted"}] * 4
    assert scores.per_example_parts[0]["counted"]["words"] == len(examples[0].document.split())


# --- a metric whose aggregate is faulty --------------------------------------------------------------

class _Faulty(Metric):
    """Scores as a mean does; its aggregate is replaced by each test."""

    name = "faulty"

    def compute(self, predictions, examples):
        words = [float(len(p.split())) for p in predictions]
        return MetricResult({self.name: words}, {self.name: float(np.mean(words))})


class _Raising(_Faulty):
    name = "raising"

    def aggregate(self, parts, weights):
        raise ZeroDivisionError("oops")


class _Scalar(_Faulty):
    name = "scalar"

    def aggregate(self, parts, weights):
        return {"scalar": float(np.mean(parts["scalar"]))}  # one number, not one per row of weights


class _Listing(_Faulty):
    name = "listing"

    def aggregate(self, parts, weights):
        return [np.mean(parts["listing"])]  # not {value name: array}


class _Faults:
    @ctrlkit.hookimpl
    def register_metrics(self, register):
        register("raising", _Raising)
        register("scalar", _Scalar)
        register("listing", _Listing)


@pytest.mark.parametrize("name, said", [("raising", "aggregate failed: ZeroDivisionError: oops"),
                                        ("scalar", "aggregate's 'scalar' has shape (), not (")])
def test_a_faulty_aggregate_costs_its_intervals_only(name, said, throwaway_plugins, tmp_path, caplog):
    throwaway_plugins(_Faults(), "faulty-aggregate-test")
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        result = ctrlkit.run(controller="tag", metrics=["rouge", name], limit=8, bootstrap=50, out=str(tmp_path))
    warnings = [r.getMessage() for r in caplog.records if f"metric '{name}'" in r.getMessage()]
    assert len(warnings) == 3 and all(said in w for w in warnings), warnings  # run, baseline, paired
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["metrics"][name][name] == result.metrics[name][name] is not None
    for found in (written["intervals"], written["baseline"]["intervals"], written["paired"]):
        assert name not in found and set(found["rouge"]) == {"rouge1", "rouge2", "rougeL", "rougeLsum"}


@pytest.mark.parametrize("name", ["raising", "scalar", "listing"])
def test_the_conformance_kit_fails_a_faulty_aggregate_with_the_line_a_run_warns_with(name, throwaway_plugins,
                                                                                      tmp_path, caplog):
    from ctrlkit.testing import check_metric

    throwaway_plugins(_Faults(), "faulty-aggregate-kit-test")
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        # two resamples: as many rows of weights as the kit gives aggregate (all the examples, a subset)
        ctrlkit.run(controller="tag", metrics=[name], limit=4, bootstrap=2, baseline=None, out=str(tmp_path))
    [warning] = [r.getMessage() for r in caplog.records if f"metric '{name}'" in r.getMessage()]
    with pytest.raises(AssertionError) as caught:
        check_metric(name)
    assert warning == f"ctrlkit: {caught.value}; its values get no interval or paired test"
    assert str(caught.value).startswith(f"metric '{name}': aggregate") and "\n" not in str(caught.value)


def test_a_plugin_error_spread_over_lines_is_reported_on_one():
    from ctrlkit.bootstrap import AggregateError

    class Raises(Mean):
        def aggregate(self, parts, weights):
            raise ValueError("first line\n  second line\n")

    with pytest.raises(AggregateError) as caught:
        intervals(Raises(), {"mean": np.arange(6.0)}, np.arange(6), resamples=10)
    assert str(caught.value) == "metric 'mean': aggregate failed: ValueError: first line second line"


def test_aggregate_rows_of_the_wrong_length_are_refused_not_summarized():
    from ctrlkit.bootstrap import AggregateError

    class Short(Mean):
        def aggregate(self, parts, weights):
            return {"mean": super().aggregate(parts, weights)["mean"][:-1]}

    with pytest.raises(AggregateError, match=r"metric 'mean': aggregate's 'mean' has shape \(9,\), not \(10,\)"):
        intervals(Short(), {"mean": np.arange(6.0)}, np.arange(6), resamples=10)


# --- resamples on which a value is undefined; p at its floor ------------------------------------------

def test_resamples_where_a_value_is_undefined_are_counted_and_one_defined_value_is_no_interval():
    trials = np.zeros(12)
    trials[[0, 1]] = 1.0  # the ratio is defined only on resamples that draw example 0 or 1
    parts = {"hits": np.ones(12), "trials": trials}
    with np.errstate(divide="ignore"):
        found = intervals(Ratio(), parts, np.arange(12), resamples=400, seed=5)["ratio"]
    weights = resample_weights(np.arange(12), 400, seed=5)
    drawn = weights[:, :2].sum(axis=1) > 0
    ratios = weights[drawn] @ parts["hits"] / (weights[drawn] @ trials)
    assert found["undefined_resamples"] == int((~drawn).sum()) > 0
    assert np.allclose([found["low"], found["high"], found["se"]],
                       [*np.percentile(ratios, [2.5, 97.5]), np.std(ratios, ddof=1)], rtol=1e-12)
    assert "undefined_resamples" not in intervals(Mean(), {"mean": np.arange(12.0)}, np.arange(12), 50)["mean"]

    class OneDefined(Mean):
        def aggregate(self, parts, weights):
            values = np.full(len(weights), np.nan)
            values[0] = 1.0
            return {"mean": values}

    assert intervals(OneDefined(), {"mean": np.arange(12.0)}, np.arange(12), resamples=50) == {}


def test_one_resample_is_refused():
    with pytest.raises(OptionError, match="at least 2"):
        ctrlkit.run(limit=2, bootstrap=1)


def test_a_p_value_at_its_floor_is_printed_as_a_bound():
    from ctrlkit.statistics_text import p_text
    from ctrlkit.results import format_table

    x = np.random.default_rng(2).random(30)
    test = paired(Mean(), {"mean": x + 5}, {"mean": x}, np.arange(30), resamples=999, seed=1)["mean"]
    assert test["permutations"] == 999 and test["p"] == 1 / 1000
    assert p_text(test) == "p<=0.001"
    assert p_text({"p": 2 / 1000, "permutations": 999}) == "p=0.002"
    assert p_text({"p": 1 / 1000}) == "p=0.001"  # written before permutations were recorded: no bound known
    # a bound is rounded up, never below the floor: 1/151 = 0.006623 is "<=0.0067", not "<=0.0066"
    assert p_text({"p": 1 / 151, "permutations": 150}) == "p<=0.0067"
    assert p_text({"p": 0.2137, "permutations": 999}) == "p=0.214"  # three significant digits
    results = {"config": {"controller": "c"}, "n_examples": 30, "metrics": {"mean": {"mean": 5.5}},
               "baseline": {"controller": "none", "metrics": {"mean": {"mean": 0.5}}},
               "paired": {"mean": {"mean": test}}}
    assert "+5.0000 [+5.0000, +5.0000] p<=0.001" in format_table(results)


@pytest.mark.parametrize("groups", [[0, 0, 0, 0, 0], [7], [3, 3]])
def test_one_bootstrap_group_gives_an_undefined_interval_not_a_zero_width_one(groups):
    from ctrlkit.bootstrap import ONE_GROUP

    n = len(groups)
    parts = {"mean": [0.1 * (i + 1) for i in range(n)]}
    found = intervals(Mean(), parts, np.array(groups), resamples=200, seed=0)["mean"]
    assert found["undefined"] == ONE_GROUP and all(np.isnan(found[key]) for key in ("low", "high", "se"))
    other = {"mean": [0.2 * (i + 1) for i in range(n)]}
    test = paired(Mean(), other, parts, np.array(groups), resamples=200, seed=0)["mean"]
    assert test["undefined"] == ONE_GROUP and np.isnan(test["low"]) and test["difference"] == pytest.approx(
        float(np.mean(other["mean"]) - np.mean(parts["mean"])))
    # two groups have a spread again
    two = intervals(Mean(), {"mean": [0.1, 0.9]}, np.array([0, 1]), resamples=200, seed=0)["mean"]
    assert "undefined" not in two and two["low"] < two["high"]


def test_a_run_of_one_document_says_its_interval_is_undefined_in_results_and_table(tmp_path):
    from helpers.record_schemas import validators

    from ctrlkit.results import format_table

    data = tmp_path / "one.jsonl"
    data.write_text(json.dumps({"id": "a", "document": "Rain fell on the town. The river rose. Boats left.",
                                "references": ["Rain fell."], "controls": {"topic": "weather"}}) + "\n")
    result = ctrlkit.run(dataset="jsonl", data=str(data), controller="prepend", backbone="extractive",
                         metrics=["rouge"], bootstrap=100, out=str(tmp_path / "out"), cache=False)
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    interval = saved["intervals"]["rouge"]["rougeL"]
    assert interval["low"] is None and interval["high"] is None and interval["se"] is None
    assert interval["undefined"].startswith("one bootstrap group")
    difference = saved["paired"]["rouge"]["rougeL"]
    assert difference["low"] is None and difference["undefined"].startswith("one bootstrap group")
    assert list(validators()["results.json"].iter_errors(saved)) == []
    table = format_table(result.results)
    assert "[interval undefined: one group]" in table and "[0.0000, 0.0000]" not in table
