"""MACSum's control metrics, ``cer`` and ``cc``, against a re-derivation written here from the
definitions (Zhang et al., TACL 2023, and the authors' scripts): on hand-made examples with known
answers, and on the released val files (../shared/data/macsum)."""

import json
import math
import string
import subprocess
import sys
from collections import defaultdict
from itertools import combinations

import pytest

import ctrlkit
from ctrlkit import Example
from ctrlkit.testing import check_metric

from helpers import shared_file

FILES = ["macsum/macdoc_val.json", "macsum/macdial_val.json"]


# ---- the definitions, re-derived ---------------------------------------------------------------

def words(text):
    """NLTK word_tokenize's Treebank step on each pysbd sentence (Punkt's model is a download)."""
    from nltk.tokenize import NLTKWordTokenizer

    from ctrlkit.text import sentences

    treebank = NLTKWordTokenizer()
    return [word for sentence in sentences(text) for word in treebank.tokenize(sentence)]


def length(text):
    return len(words(text))


def extractiveness(text, source):
    """Mean ROUGE-2/3 precision against the source; n-gram sets over words split at full stops and
    whitespace (replacing each full stop by a space splits the same way)."""
    def grams(t, n):
        w = t.replace(".", " ").split()
        return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}

    precisions = []
    for n in (2, 3):
        mine = grams(text, n)
        precisions.append(len(mine & grams(source, n)) / len(mine) if mine else 0.0)
    return sum(precisions) / 2


def topic_share(text, topic):
    alphabetic = [w.lower() for w in words(topic) if w.isalpha()]
    if not alphabetic:
        return 0.0
    return sum(w in text.lower() for w in alphabetic) / len(alphabetic)


def stop_words():
    from ctrlkit_metrics.macsum_control import NLTK_ENGLISH_STOP_WORDS  # data, not a helper

    return set(NLTK_ENGLISH_STOP_WORDS) | {"disfmarker", "vocalsound"} | set(string.punctuation)


_turns_seen = {}


def speaker_share(text, source, speaker):
    stop = stop_words()

    def content(t):
        return [w.lower() for w in words(t) if w.lower() not in stop]

    names = [n.strip().lower() for n in speaker.replace(";", ",").replace(":", ",").split(",") if n.strip()]
    key = (source, tuple(names))
    if key not in _turns_seen:
        pieces = source.split(":")
        turns = set()
        for k in range(len(pieces) - 1):
            if any(name in pieces[k].lower() for name in names):
                turns.update(content(pieces[k + 1]))
        _turns_seen[key] = turns
    summary = content(text)
    return sum(w in _turns_seen[key] for w in summary) / len(summary) if summary else 0.0


def expected_errors(prediction, example):
    """CER per attribute for one example, as the paper's relative error with the authors' floors."""
    reference, document, controls = example.references[0], example.document, example.controls
    gold = length(reference)
    out = {"length": abs(length(prediction) - gold) / gold}
    gold = extractiveness(reference, document)
    out["extractiveness"] = abs(extractiveness(prediction, document) - gold) / (gold + 0.1)
    out["topic"] = None
    if controls.get("topic"):
        gold = topic_share(reference, controls["topic"])
        out["topic"] = abs(topic_share(prediction, controls["topic"]) - gold) / (gold if gold else 0.1)
    out["speaker"] = None
    if controls.get("speaker"):
        gold = speaker_share(reference, document, controls["speaker"])
        out["speaker"] = abs(speaker_share(prediction, document, controls["speaker"]) - gold) / (gold + 0.1)
    return out


# ---- registration and contracts ----------------------------------------------------------------

def test_registered_with_their_directions():
    cer, cc = ctrlkit.get_metric("cer"), ctrlkit.get_metric("cc")
    assert type(cer).__name__ == "ControlErrorRate" and type(cc).__name__ == "ControlCorrelation"
    assert cer.higher_is_better is False
    assert cer.reads == () and cc.reads == ()
    assert cer.needs_references and not cc.needs_references


def test_importing_the_module_loads_no_heavy_library():
    script = ("import sys, ctrlkit_metrics.macsum_control\n"
              "print(','.join(m for m in ('nltk', 'rouge_score', 'scipy', 'sklearn', 'pysbd') if m in sys.modules) "
              "or 'none')")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "none"


def test_the_stop_words_are_nltks_english_list():
    from ctrlkit_metrics.macsum_control import NLTK_ENGLISH_STOP_WORDS

    assert len(NLTK_ENGLISH_STOP_WORDS) == 179
    assert {"ourselves", "wouldn't", "should've", "ain", "the"} <= NLTK_ENGLISH_STOP_WORDS
    assert not {"budget", "speaker", "n't"} & NLTK_ENGLISH_STOP_WORDS


@pytest.mark.parametrize("name", ["cer", "cc"])
def test_conforms_on_the_sample(name):
    check_metric(name)
    examples = ctrlkit.get_dataset("sample").load("test")[:4]
    check_metric(name, predictions=[example.document[:200] for example in examples], examples=examples)


@pytest.mark.parametrize("relative", FILES)
@pytest.mark.parametrize("name", ["cer", "cc"])
def test_conforms_on_macsum(name, relative):
    dataset = ctrlkit.get_dataset("macsum", path=str(shared_file(relative)))
    examples = dataset.load(dataset.default_split)[:14]
    check_metric(name, examples=examples, dataset=dataset)
    check_metric(name, predictions=[example.document[:300] for example in examples], examples=examples,
                 dataset=dataset)


# ---- cer on hand-made examples -----------------------------------------------------------------

def _cer(predictions, examples):
    return ctrlkit.get_metric("cer").compute(predictions, examples)


def test_length_error_counts_treebank_tokens_of_each_sentence():
    # "He left . She came ." is 6 tokens: the full stop inside the text is split off too
    example = Example("a", "Some source.", references=["He left. She came."])
    result = _cer(["He left."], [example])
    assert result.per_example["length"] == [pytest.approx(0.5)]
    assert result.corpus["length"] == pytest.approx(0.5) and result.corpus["n_length"] == 1


def test_extractiveness_error_is_relative_to_the_reference_plus_a_tenth():
    source = "the quick brown fox jumps over the lazy dog"
    # reference: every bigram and trigram is in the source (E = 1); prediction: 1 of 3 bigrams,
    # 0 of 2 trigrams (E = 1/6)
    example = Example("a", source, references=["the quick brown fox"])
    result = _cer(["the slow brown fox"], [example])
    assert result.per_example["extractiveness"] == [pytest.approx((1 - 1 / 6) / 1.1)]


def test_extractiveness_counts_distinct_ngrams_case_sensitively_across_full_stops():
    source = "Alpha beta. Gamma delta"
    # words: alpha beta gamma delta -> "beta Gamma" spans the full stop and is in the source;
    # lowercase "alpha" differs from "Alpha"; a repeated bigram counts once
    example = Example("a", source, references=["Alpha beta Gamma"])
    prediction = "beta Gamma beta Gamma. alpha beta"
    # bigrams {beta Gamma, Gamma beta, Gamma alpha, alpha beta}: 1 of 4 in the source
    # trigrams {beta Gamma beta, Gamma beta Gamma, beta Gamma alpha, Gamma alpha beta}: 0 of 4
    result = _cer([prediction], [example])
    assert result.per_example["extractiveness"] == [pytest.approx((1 - 1 / 8) / 1.1)]


def test_topic_error_finds_topic_words_as_substrings_and_floors_a_zero_reference():
    examples = [
        Example("a", "Source.", references=["Space travel is costly."], controls={"topic": "space travel"}),
        Example("b", "Source.", references=["Nothing here."], controls={"topic": "space travel"}),
        Example("c", "Source.", references=["Nothing here."], controls={"topic": "2024"}),
        Example("d", "Source.", references=["Nothing here."]),
    ]
    # a: reference 1, prediction 1/2 ("space" inside "spacecraft"); b: reference 0, prediction 1/2,
    # divided by 0.1; c: no alphabetic topic word, 0 against 0; d: no topic, undefined
    result = _cer(["A spacecraft launched."] * 4, examples)
    assert result.per_example["topic"] == [pytest.approx(0.5), pytest.approx(5.0), 0.0, None]
    assert result.corpus["n_topic"] == 3
    assert result.corpus["topic"] == pytest.approx(5.5 / 3)


MEETING = "Alice : we need a budget .\nBob : the remote is red .\nAlice : budget is fine ."


def test_speaker_error_on_a_hand_made_meeting():
    # Alice's turns (the pieces after the colons that follow "alice"): "we need a budget . Bob" and
    # "budget is fine ." -> content words {need, budget, bob, fine}
    example = Example("a", MEETING, references=["Alice said the budget is fine."],
                      controls={"speaker": "Alice"}, meta={"dataset": "qmsum"})
    result = _cer(["The remote is red."], [example])
    # reference: alice, said, budget, fine -> 2/4; prediction: remote, red -> 0
    assert result.per_example["speaker"] == [pytest.approx(0.5 / 0.6)]
    assert result.corpus["n_speaker"] == 1
    assert speaker_share("The remote is red.", MEETING, "Bob") == pytest.approx(1.0)
    assert _cer(["The remote is red."], [Example("b", MEETING, references=["Red remote."],
                                                 controls={"speaker": "Bob"})]).per_example["speaker"] == [0.0]


def test_speaker_values_appear_only_for_dialogues():
    doc = Example("a", "A source text.", references=["A summary."], meta={"dataset": "cnndm"})
    assert "speaker" not in _cer(["A summary."], [doc]).corpus
    dial = Example("b", MEETING, references=["A summary."], meta={"dataset": "qmsum"})
    result = _cer(["A summary."], [dial])
    assert result.corpus["speaker"] is None and result.corpus["n_speaker"] == 0
    assert result.per_example["speaker"] == [None]


def test_average_is_the_mean_of_the_defined_attribute_errors():
    example = Example("a", "the quick brown fox jumps", references=["He left. She came."])
    result = _cer(["He left."], [example])
    assert result.corpus["topic"] is None
    assert result.corpus["average"] == pytest.approx((result.corpus["length"] + result.corpus["extractiveness"]) / 2)


def test_an_empty_prediction_is_scored_not_refused():
    example = Example("a", MEETING, references=["Alice said the budget is fine."],
                      controls={"speaker": "Alice", "topic": "budget"})
    result = _cer([""], [example])
    assert result.per_example["length"] == [1.0]
    assert result.per_example["speaker"] == [pytest.approx(0.5 / 0.6)]
    assert result.per_example["topic"] == [1.0]


def test_a_prediction_equal_to_its_reference_has_no_error():
    example = Example("a", MEETING, references=["Alice said the budget is fine."],
                      controls={"speaker": "Alice", "topic": "budget"})
    result = _cer(["Alice said the budget is fine."], [example])
    assert all(result.corpus[name] == 0.0 for name in ("length", "extractiveness", "topic", "speaker", "average"))


# ---- cc on hand-made examples ------------------------------------------------------------------

BASE = {"length": "short", "extractiveness": "normal", "specificity": "normal"}


def _cc_examples():
    def example(i, source, **changes):
        return Example(str(i), "a b c d e f g h", references=["r"], controls={**BASE, **changes},
                       meta={"source_index": source})

    return [
        example(0, 0),                              # 10 tokens, E = 0
        example(1, 0, length="long"),               # differs from 0 in length only
        example(2, 0, extractiveness="high"),       # differs from 0 in extractiveness only
        example(3, 0, specificity="high"),          # differs from 0 in specificity only: no pair
        example(4, 1, length="normal"),             # another source: never paired with 0-3
    ], [
        " ".join(f"w{i}" for i in range(10)),
        " ".join(f"w{i}" for i in range(30)),
        "a b c",                                    # every bigram and trigram in the source: E = 1
        "x",
        " ".join(f"w{i}" for i in range(50)),
    ]


def test_cc_pairs_references_of_one_source_that_differ_in_one_attribute():
    examples, predictions = _cc_examples()
    result = ctrlkit.get_metric("cc").compute(predictions, examples)
    # (0, 1): (10 - 30) / (0 - 2) = 10 tokens per level; (0, 2): (0 - 1) / (0 - 1) = 1
    # every reference is "r": the gold CC is 0, so the gaps are the CCs themselves
    assert result.corpus == {"length": pytest.approx(10.0), "n_length_pairs": 1, "gold_length": 0.0,
                             "length_gap": pytest.approx(10.0),
                             "extractiveness": pytest.approx(1.0), "n_extractiveness_pairs": 1,
                             "gold_extractiveness": 0.0, "extractiveness_gap": pytest.approx(1.0)}
    assert result.per_example["tokens"] == [10.0, 30.0, 3.0, 1.0, 50.0]
    assert result.per_example["extractive_precision"] == [0.0, 0.0, 1.0, 0.0, 0.0]


def test_cc_works_on_any_subset():
    examples, predictions = _cc_examples()
    cc = ctrlkit.get_metric("cc")
    result = cc.compute(predictions[:2], examples[:2])
    assert result.corpus["length"] == pytest.approx(10.0) and result.corpus["n_length_pairs"] == 1
    assert result.corpus["extractiveness"] is None and result.corpus["n_extractiveness_pairs"] == 0
    assert cc.compute(predictions[2:], examples[2:]).corpus["n_length_pairs"] == 0


def test_cc_needs_a_source_index_and_known_levels():
    examples, predictions = _cc_examples()
    unindexed = [Example(e.id, e.document, e.references, e.controls) for e in examples]
    assert ctrlkit.get_metric("cc").compute(predictions, unindexed).corpus["n_length_pairs"] == 0
    numeric = [Example(e.id, e.document, e.references, {**e.controls, "length": 10 * i}, e.meta)
               for i, e in enumerate(examples)]
    assert ctrlkit.get_metric("cc").compute(predictions, numeric).corpus["n_length_pairs"] == 0


def test_a_topic_or_speaker_change_forms_no_pair():
    examples, predictions = _cc_examples()
    topical = [examples[0], Example("t", examples[0].document, ["r"], {**BASE, "topic": "budget"}, {"source_index": 0})]
    result = ctrlkit.get_metric("cc").compute(predictions[:2], topical)
    assert result.corpus["n_length_pairs"] == 0 and result.corpus["n_extractiveness_pairs"] == 0


# ---- the released val files --------------------------------------------------------------------

def _load(relative):
    path = shared_file(relative)
    dataset = ctrlkit.get_dataset("macsum", path=str(path))
    return json.loads(path.read_text(encoding="utf-8")), dataset.load(dataset.default_split)


@pytest.fixture(scope="module", params=FILES)
def released(request):
    return request.param, *_load(request.param)


def _present(attributes):
    return {name: value for name, value in attributes.items() if value not in (None, "")}


def test_references_scored_against_themselves_have_no_error_and_the_counts_match_the_file(released):
    relative, raw, examples = released
    references = [reference for source in raw for reference in source["references"]]
    assert len(examples) == len(references)
    result = _cer([example.references[0] for example in examples], examples)
    dialogue = "macdial" in relative
    attributes = ["length", "extractiveness", "topic"] + (["speaker"] if dialogue else [])
    assert [name for name in result.corpus if not name.startswith("n_") and name != "average"] == attributes
    for name in attributes:
        assert result.corpus[name] == 0.0
        assert all(value in (0.0, None) for value in result.per_example[name])
    assert result.corpus["n_length"] == result.corpus["n_extractiveness"] == len(references)
    assert result.corpus["n_topic"] == sum(bool(r["control_attribute"].get("topic")) for r in references)
    if dialogue:
        assert result.corpus["n_speaker"] == sum(bool(r["control_attribute"].get("speaker")) for r in references)
    # MACSum-Doc val: 94 sources, 554 references, 272 with a topic;
    # MACSum-Dial val: 41 sources, 292 references, every one with a topic, 227 with speakers
    expected = {"macsum/macdoc_val.json": (94, 554, 272, None), "macsum/macdial_val.json": (41, 292, 292, 227)}
    sources, n, topics, speakers = expected[relative]
    assert (len(raw), len(examples), result.corpus["n_topic"]) == (sources, n, topics)
    assert result.corpus.get("n_speaker") == speakers


def test_cer_matches_the_rederivation_on_real_references(released):
    """Each reference's prediction is the next reference of its source (a summary written for other
    controls), so that every attribute's error is usually non-zero; the first 12 sources."""
    relative, raw, examples = released
    chosen = [e for e in examples if e.meta["source_index"] < 12]
    by_source = defaultdict(list)
    for example in chosen:
        by_source[example.meta["source_index"]].append(example)
    predictions = []
    for example in chosen:
        group = by_source[example.meta["source_index"]]
        predictions.append(group[(group.index(example) + 1) % len(group)].references[0])
    result = _cer(predictions, chosen)
    nonzero = 0
    for i, (prediction, example) in enumerate(zip(predictions, chosen)):
        for name, value in expected_errors(prediction, example).items():
            if name in result.per_example:
                got = result.per_example[name][i]
                assert (got is None) == (value is None), (example.id, name)
                if value is not None:
                    assert got == pytest.approx(value, abs=1e-12), (example.id, name)
                    nonzero += value > 0
            else:
                assert value is None
    assert nonzero > len(chosen)


def test_cc_of_the_references_matches_the_rederivation_from_the_raw_file(released):
    relative, raw, examples = released
    levels = {"length": {"short": 0, "normal": 1, "long": 2}, "extractiveness": {"normal": 0, "high": 1, "fully": 2}}
    document = {example.meta["source_index"]: example.document for example in examples}
    slopes = {"length": [], "extractiveness": []}
    for index, source in enumerate(raw):
        for first, second in combinations(source["references"], 2):
            a, b = _present(first["control_attribute"]), _present(second["control_attribute"])
            changed = [name for name in set(a) | set(b) if a.get(name) != b.get(name)]
            if len(changed) != 1 or changed[0] not in levels:
                continue
            name = changed[0]
            measure = length if name == "length" else (lambda text: extractiveness(text, document[index]))
            slopes[name].append((measure(first["summary"]) - measure(second["summary"]))
                                / (levels[name][a[name]] - levels[name][b[name]]))
    result = ctrlkit.get_metric("cc").compute([example.references[0] for example in examples], examples)
    for name, found in slopes.items():
        assert found, f"{relative} has no pair that differs only in {name}"
        assert result.corpus[f"n_{name}_pairs"] == len(found)
        assert result.corpus[name] == pytest.approx(sum(found) / len(found), rel=1e-12)
    # the references' own CC: longer and more extractive when asked
    assert result.corpus["length"] > 0 and result.corpus["extractiveness"] > 0
    # the references are their own gold: the gold CC is the same, the gap 0
    for name in slopes:
        assert result.corpus[f"gold_{name}"] == pytest.approx(result.corpus[name], rel=1e-12)
        assert result.corpus[f"{name}_gap"] == pytest.approx(0, abs=1e-12)
    # one summary for every request: CC 0, and the gap is the gold CC itself
    same = ctrlkit.get_metric("cc").compute([example.document[:300] for example in examples], examples)
    for name, found in slopes.items():
        assert same.corpus[name] == 0
        assert same.corpus[f"{name}_gap"] == pytest.approx(abs(sum(found) / len(found)), rel=1e-12)


@pytest.mark.parametrize("relative", FILES)
def test_a_run_with_the_none_controller_scores_every_reference(relative):
    raw, examples = _load(relative)
    result = ctrlkit.run(dataset="macsum", data=str(shared_file(relative)), metrics=["cer", "cc"], baseline=None)
    scores = result.results["metrics"]
    assert result.results["n_examples"] == len(examples)
    assert result.results["scored"] == {"cer": len(examples), "cc": len(examples)}
    for metric in ("cer", "cc"):
        for name, value in scores[metric].items():
            assert value is not None and math.isfinite(value), (metric, name)
    assert scores["cer"]["n_length"] == len(examples)
    assert scores["cer"]["length"] > 0 and scores["cer"]["extractiveness"] > 0
    # the none controller gives one summary per source, whatever its references request: no response
    assert scores["cc"]["length"] == 0.0 and scores["cc"]["extractiveness"] == 0.0
    assert scores["cc"]["n_length_pairs"] > 0


# ---- cc's intervals: a cluster bootstrap of the sources -----------------------------------------

def _cc_pairs_by_source(raw):
    """Per source of the raw file, per attribute, each pair's (slope, gold slope), re-derived from
    the file: the prediction of a reference is the next reference of its source (a summary written
    for other controls, so that the CC differs from the gold CC), the gold its own summary."""
    levels = {"length": {"short": 0, "normal": 1, "long": 2}, "extractiveness": {"normal": 0, "high": 1, "fully": 2}}
    found = []
    for source in raw:
        document = " ".join(sentence.strip() for sentence in source["source"] if sentence.strip())  # MACSum-Doc
        references = source["references"]
        predicted = [references[(k + 1) % len(references)]["summary"] for k in range(len(references))]
        pairs = {"length": [], "extractiveness": []}
        for (i, first), (j, second) in combinations(enumerate(references), 2):
            a, b = _present(first["control_attribute"]), _present(second["control_attribute"])
            changed = [name for name in set(a) | set(b) if a.get(name) != b.get(name)]
            if len(changed) != 1 or changed[0] not in levels:
                continue
            name = changed[0]
            measure = length if name == "length" else (lambda text: extractiveness(text, document))
            step = levels[name][a[name]] - levels[name][b[name]]
            pairs[name].append(((measure(predicted[i]) - measure(predicted[j])) / step,
                                (measure(first["summary"]) - measure(second["summary"])) / step))
        found.append(pairs)
    return found


def _cc_of_drawn_sources(pairs_by_source, drawn):
    """CC, gold CC and gap of the sources ``drawn`` (indices, repeated as drawn): every pair of each
    copy, with a loop; None where no pair was drawn."""
    found = {}
    for name in ("length", "extractiveness"):
        pairs = [pair for s in drawn for pair in pairs_by_source[s][name]]
        cc = sum(p for p, _ in pairs) / len(pairs) if pairs else None
        gold = sum(g for _, g in pairs) / len(pairs) if pairs else None
        found.update({name: cc, f"gold_{name}": gold, f"{name}_gap": None if cc is None else abs(cc - gold)})
    return found


@pytest.fixture(scope="module")
def macdoc_cc():
    """The cc metric's parts on MACSum-Doc val (predictions: each reference's next of its source),
    its examples' bootstrap groups, and the pairs re-derived from the raw file."""
    from ctrlkit.bootstrap import groups_of

    path = shared_file("macsum/macdoc_val.json")
    raw = json.loads(path.read_text(encoding="utf-8"))
    dataset = ctrlkit.get_dataset("macsum", path=str(path))
    examples = dataset.load(dataset.default_split)
    by_source = defaultdict(list)
    for example in examples:
        by_source[example.meta["source_index"]].append(example)
    predictions = [by_source[e.meta["source_index"]][(by_source[e.meta["source_index"]].index(e) + 1)
                                                     % len(by_source[e.meta["source_index"]])].references[0]
                   for e in examples]
    metric = ctrlkit.get_metric("cc")
    result = metric.compute(predictions, examples)
    return metric, result, examples, groups_of(examples, dataset), _cc_pairs_by_source(raw)


def test_cc_resampled_weighs_a_pair_as_often_as_its_source_is_drawn(macdoc_cc):
    """Each resample of the sources (drawn here, with replacement) gives, from aggregate, the CC of
    the pairs of the drawn copies counted with a loop: a source drawn k times adds its pairs k times."""
    import numpy as np

    metric, result, examples, groups, pairs_by_source = macdoc_cc
    whole = _cc_of_drawn_sources(pairs_by_source, range(len(pairs_by_source)))
    assert all(whole[name] == pytest.approx(result.corpus[name], rel=1e-9) for name in whole)
    source = np.array([example.meta["source_index"] for example in examples])
    assert (groups == source).all()  # the macsum dataset's bootstrap groups are its sources
    drawn = np.random.default_rng(11).integers(0, len(pairs_by_source), (300, len(pairs_by_source)))
    weights = np.stack([np.bincount(row, minlength=len(pairs_by_source))[source] for row in drawn]).astype(float)
    parts = {name: np.array([np.nan if v is None else v for v in values], dtype=float)
             for name, values in result.aggregation_parts().items()}
    aggregated = metric.aggregate(parts, weights)
    repeated = 0
    for r, row in enumerate(drawn):
        expected = _cc_of_drawn_sources(pairs_by_source, row)
        for name, value in expected.items():
            got = aggregated[name][r]
            assert np.isnan(got) if value is None else got == pytest.approx(value, rel=1e-9, abs=1e-12), (r, name)
        repeated += np.bincount(row).max() > 1
    assert repeated == len(drawn)  # every resample drew some source more than once


def test_cc_intervals_are_as_wide_as_a_cluster_bootstrap_of_the_sources(macdoc_cc):
    """ctrlkit's intervals against a cluster bootstrap with a loop over other draws (2000 each): the
    widths agree to within sampling noise (weighing a pair by k squared made them 1.5-1.65 times wider)."""
    import numpy as np

    from ctrlkit.bootstrap import intervals

    metric, result, _, groups, pairs_by_source = macdoc_cc
    found = intervals(metric, result.aggregation_parts(), groups, 2000, seed=5)
    rng = np.random.default_rng(2026)
    looped = [_cc_of_drawn_sources(pairs_by_source, rng.integers(0, len(pairs_by_source), len(pairs_by_source)))
              for _ in range(2000)]
    for name in ("length", "extractiveness", "gold_length", "length_gap", "extractiveness_gap"):
        values = np.array([row[name] for row in looped if row[name] is not None])
        low, high = np.percentile(values, [2.5, 97.5])
        ratio = (found[name]["high"] - found[name]["low"]) / (high - low)
        assert 0.85 < ratio < 1.15, (name, ratio)  # 1.55 to 1.61 with the old k squared
