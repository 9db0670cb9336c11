"""The `stats` metric: words, sentences and compression ratio, against independent counts."""

import math

import pytest

import ctrlkit
from ctrlkit import Example
from ctrlkit.testing import check_metric

DOCUMENT = " ".join(f"w{i}" for i in range(60))  # 60 words

SUMMARIES = [
    "The cat sat. It slept.",                         # 5 words, 2 sentences (hand-counted)
    "Prices rose sharply in March. Markets fell! Why?",  # 8 words, 3 sentences
    "one two three four five six",                    # 6 words, 1 sentence (no stop)
]
HAND_SENTENCES = [2, 3, 1]


def _examples(n, document=DOCUMENT):
    return [Example(f"e{i}", document, ["A reference."], {}) for i in range(n)]


def test_stats_counts_words_and_sentences_and_divides_document_by_summary_words():
    result = ctrlkit.get_metric("stats").compute(SUMMARIES, _examples(3))
    words = [len(summary.split()) for summary in SUMMARIES]
    assert words == [5, 8, 6]
    assert result.per_example["words"] == words
    assert result.per_example["sentences"] == HAND_SENTENCES
    assert result.per_example["compression"] == pytest.approx([60 / 5, 60 / 8, 60 / 6])
    assert result.corpus["words"] == pytest.approx(19 / 3)
    assert result.corpus["sentences"] == pytest.approx(2.0)
    assert result.corpus["compression"] == pytest.approx((12 + 7.5 + 10) / 3)
    assert result.corpus["empty"] == 0.0


@pytest.mark.parametrize("empty", ["", "   \n "])
def test_an_empty_summary_has_no_compression_and_is_counted(empty):
    result = ctrlkit.get_metric("stats").compute([empty, "Two words."], _examples(2))
    assert result.per_example["words"] == [0, 2]
    assert result.per_example["sentences"] == [0, 1]
    assert result.per_example["compression"] == [None, 30.0]
    assert result.corpus["words"] == pytest.approx(1.0)
    assert result.corpus["sentences"] == pytest.approx(0.5)
    assert result.corpus["compression"] == 30.0  # the mean where defined
    assert result.corpus["empty"] == 1.0


def test_only_empty_summaries_give_none_never_nan():
    result = ctrlkit.get_metric("stats").compute(["", ""], _examples(2))
    assert result.corpus["compression"] is None
    assert result.corpus["words"] == 0.0 and result.corpus["sentences"] == 0.0
    assert not any(isinstance(value, float) and math.isnan(value) for value in result.corpus.values())


def test_stats_needs_no_control_and_conforms():
    check_metric("stats")
    check_metric("stats", predictions=SUMMARIES + [""], examples=_examples(4))


def test_tables_mark_no_best_value_for_statistics():
    from ctrlkit.metric_values import better

    stats = ctrlkit.get_metric("stats")
    assert stats.higher_is_better is None
    assert {better(name, stats.higher_is_better) for name in ("words", "sentences", "compression")} == {None}
