"""The ROUGE metric's fast path: rouge-score's numbers to the bit, in this process or in workers."""

import json
import multiprocessing
import os
import random
import sys
import threading

import pytest
from rouge_score import rouge_scorer

import ctrlkit
from ctrlkit import CtrlkitError, Example
from ctrlkit.text import sentences
from ctrlkit_metrics import rouge, rouge_pairs

from helpers import shared_file

TYPES = ["rouge1", "rouge2", "rougeL", "rougeLsum"]


def plain(predictions, examples, types=TYPES, use_stemmer=True, split=True):
    """rouge-score called directly, per example, on the same one-sentence-per-line text."""
    lines = (lambda text: "\n".join(sentences(text))) if split else (lambda text: text)
    scorer = rouge_scorer.RougeScorer(types, use_stemmer=use_stemmer)
    best = [scorer.score_multi([lines(r) for r in e.references], lines(p)) for p, e in zip(predictions, examples)]
    return {name: [b[name].fmeasure for b in best] for name in types}


def assert_identical(per_example, expected):
    """Equal values of the same type (rouge-score gives an int 0 for an empty text)."""
    assert {k: [(type(v), v) for v in values] for k, values in per_example.items()} == \
           {k: [(type(v), v) for v in values] for k, values in expected.items()}


def sample_pairs(count):
    examples = ctrlkit.get_dataset("sample").load("test")
    by_article = {}
    for e in examples:
        by_article.setdefault(e.meta["article"], []).append(e.references[0])
    pairs = [Example(e.id, e.document, by_article[e.meta["article"]], e.controls) for e in examples]
    rng = random.Random(0)
    predictions = []
    for e in pairs:
        cut = e.document.split(". ")
        start = rng.randrange(len(cut))
        predictions.append(". ".join(cut[start : start + rng.randint(1, 5)]))
    return (predictions * (count // len(predictions) + 1))[:count], (pairs * (count // len(pairs) + 1))[:count]


def test_lcs_table_and_backtrack_are_rouge_scores():
    rng = random.Random(7)
    for _ in range(3000):
        a = [rng.choice("abcd"[: rng.randint(1, 4)]) for _ in range(rng.randint(0, 14))]
        b = [rng.choice("abcde"[: rng.randint(1, 5)]) for _ in range(rng.randint(0, 14))]
        assert rouge_pairs.lcs_indices(a, b) == rouge_scorer.lcs_ind(a, b), (a, b)
        assert rouge_pairs._lcs_length(a, rouge_pairs._positions(b), len(b)) == rouge_scorer._lcs_table(a, b)[-1][-1]


@pytest.mark.parametrize("types,use_stemmer,split", [
    (TYPES, True, True), (["rouge3", "rougeL", "rougeLsum"], False, True), (["rougeLsum", "rouge9"], True, False)])
def test_in_process_scores_are_rouge_scores_own(types, use_stemmer, split):
    predictions, examples = sample_pairs(60)
    # texts rouge-score scores as zero, blank lines, short words (not stemmed), non-ASCII
    predictions[:5] = ["", "...", "A cat.\n\n\nIt ran!", "Ünïcödé — naïve café's meetings.", predictions[5] + "\n \n"]
    examples[3] = Example("e", "d", ["", "a cat ran. it is an ox."])
    metric = ctrlkit.get_metric("rouge", types=",".join(types), use_stemmer=use_stemmer, split_sentences=split, workers=1)
    result = metric.compute(predictions, examples)
    assert_identical(result.per_example, plain(predictions, examples, types, use_stemmer, split))
    assert type(result.per_example["rougeLsum"][0]) is int  # an empty prediction: rouge-score's int 0 (LCS types)


def test_long_arxiv_abstracts_score_as_with_rouge_score():
    """Abstracts of 150-300 words: LCS rows far wider than a machine word."""
    papers = [json.loads(line) for line in shared_file("fd/arxiv.json").read_text(encoding="utf-8").splitlines() if line.strip()]
    examples = [Example(str(i), "paper", [p["human"], p["bartlarge"]]) for i, p in enumerate(papers[:20])]
    predictions = [p["gpt35"] for p in papers[:20]]
    result = ctrlkit.get_metric("rouge", workers=1).compute(predictions, examples)
    assert_identical(result.per_example, plain(predictions, examples))


@pytest.fixture
def pool_calls(monkeypatch):
    """Start workers for as few as 2 pairs, and record each pool's start method."""
    monkeypatch.setattr(rouge, "PAIRS_PER_WORKER", {"fork": 1, "spawn": 1})
    calls = []
    original = rouge._in_workers

    def spy(config, predictions, references, workers, method):
        calls.append(method)
        return original(config, predictions, references, workers, method)

    monkeypatch.setattr(rouge, "_in_workers", spy)
    return calls


@pytest.mark.parametrize("method", ["fork", "spawn"])
@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")  # Python 3.12+, native threads
def test_workers_give_the_same_numbers_as_one_process_and_rouge_score(pool_calls, monkeypatch, method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    monkeypatch.setattr(rouge, "start_method", lambda: method)
    predictions, examples = sample_pairs(48)
    parallel = ctrlkit.get_metric("rouge", workers=2).compute(predictions, examples)
    assert pool_calls == [method]
    alone = ctrlkit.get_metric("rouge", workers=1).compute(predictions, examples)
    assert pool_calls == [method]
    assert_identical(parallel.per_example, alone.per_example)
    assert parallel.corpus == alone.corpus
    assert_identical(parallel.per_example, plain(predictions, examples))
    assert multiprocessing.active_children() == []


@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")  # Python 3.12+, native threads
def test_an_error_in_a_worker_is_one_clear_error_and_the_pool_is_gone(pool_calls, fork_on_linux):
    predictions, examples = sample_pairs(12)
    predictions[9] = _FailsInItsWorker(predictions[9])
    metric = ctrlkit.get_metric("rouge", workers=2, split_sentences=False)
    with pytest.raises(CtrlkitError, match=r"^rouge: scoring pairs \d+-\d+ failed in a worker process: AttributeError: "
                                           r"the text cannot be lowered$"):
        metric.compute(predictions, examples)
    assert pool_calls and multiprocessing.active_children() == []


@pytest.fixture
def fork_on_linux(monkeypatch):
    """The error tests are about errors, not start methods: fork (quick) on Linux even where
    start_method() would spawn (torch imported by other test modules), since these workers never use torch."""
    if sys.platform.startswith("linux"):
        monkeypatch.setattr(rouge, "start_method", lambda: "fork")


class _FailsInItsWorker(str):
    """A prediction (a string, as compute requires) whose tokenizing raises in the worker."""

    def lower(self):
        raise AttributeError("the text cannot be lowered")

    def __reduce__(self):
        return _FailsInItsWorker, (str(self),)


class _KillsItsWorker(str):
    def __reduce__(self):  # unpickled in the worker: the worker process ends at once
        return os._exit, (3,)


@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")
def test_a_worker_that_dies_is_one_clear_error(pool_calls, fork_on_linux):
    predictions, examples = sample_pairs(8)
    predictions[5] = _KillsItsWorker(predictions[5])
    with pytest.raises(CtrlkitError, match=r"^rouge: a worker process ended abruptly while splitting texts into sentences .*"
                                           r"rouge.workers=1 scores in this process$"):
        ctrlkit.get_metric("rouge", workers=2).compute(predictions, examples)
    assert multiprocessing.active_children() == []


def test_few_pairs_or_one_worker_stay_in_this_process(monkeypatch):
    calls = []
    monkeypatch.setattr(rouge, "_in_workers", lambda *args: calls.append(args))
    predictions, examples = sample_pairs(20)
    ctrlkit.get_metric("rouge", workers=4).compute(predictions, examples)
    monkeypatch.setattr(rouge, "PAIRS_PER_WORKER", {"fork": 1, "spawn": 1})
    ctrlkit.get_metric("rouge", workers=1).compute(predictions, examples)
    assert calls == []
    with pytest.raises(ctrlkit.OptionError, match="workers"):
        ctrlkit.get_metric("rouge", workers=-1)


def test_by_default_workers_are_only_forked(pool_calls, monkeypatch):
    """A spawned worker re-runs the caller's __main__ script; only an explicit rouge.workers spawns."""
    monkeypatch.setattr(rouge, "start_method", lambda: "spawn")
    predictions, examples = sample_pairs(8)
    ctrlkit.get_metric("rouge").compute(predictions, examples)
    assert pool_calls == []


def test_workers_are_forked_only_on_linux_with_one_thread_and_no_torch(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    alone = threading.active_count() == 1
    assert rouge.start_method() == ("fork" if sys.platform.startswith("linux") and alone else "spawn")
    monkeypatch.setitem(sys.modules, "torch", object())
    assert rouge.start_method() == "spawn"
    monkeypatch.delitem(sys.modules, "torch")
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert rouge.start_method() == "spawn"
    finally:
        stop.set()
        thread.join()
