"""The control metrics (sr, length, readability, entity) against independent computations."""

import json
import re
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import textstat
from nltk.stem import PorterStemmer
from scipy.stats import pearsonr

import ctrlkit
from ctrlkit import Example
from ctrlkit_metrics.length import length_bin

from helpers import shared_file


def _examples(key, values):
    return [Example(f"ex{i}", "(not read)", controls={key: value}) for i, value in enumerate(values)]


# -- keyword success rate ---------------------------------------------------------------------

def _stemmed(text, stemmer=PorterStemmer()):
    return " ".join(stemmer.stem(token) for token in re.findall(r"\w+", text.lower()))


def _success_rate(summary, keywords):
    """SR written out: a keyword counts when its stemmed words appear, in order and adjacent."""
    padded = f" {_stemmed(summary)} "
    return sum(f" {_stemmed(keyword)} " in padded for keyword in keywords) / len(keywords)


def test_sr_matches_stemmed_keywords_as_contiguous_phrases():
    summary = "The runners were running quickly through New York's parks; nobody ran home."
    keywords = ["run", "Parks", "new york", "York parks", "quick runners", "dogs", "home"]
    result = ctrlkit.get_metric("sr").compute([summary], _examples("keywords", [keywords]))
    # found: run (running), park (parks), new york, home; not found: 'York parks' ("York's" leaves
    # an 's' between them), 'quick runners' (neither adjacent nor in that order), dogs
    assert result.per_example["sr"] == [pytest.approx(_success_rate(summary, keywords))]
    assert result.per_example["sr"] == [pytest.approx(4 / 7)]


def test_sr_reads_a_comma_separated_string_like_a_list():
    summary = "Shares of the carmaker fell after the recall."
    as_list = ["shares", "recalls", "profit"]
    metric = ctrlkit.get_metric("sr")
    listed = metric.compute([summary], _examples("keywords", [as_list]))
    joined = metric.compute([summary], _examples("keywords", ["shares, recalls ,profit"]))
    assert listed.per_example["sr"] == joined.per_example["sr"] == [pytest.approx(2 / 3)]


def test_sr_on_ctrlsum_oracle_keywords_equals_the_written_out_definition():
    summaries = shared_file("ctrlsum/val.target").read_text(encoding="utf-8").splitlines()
    oracle = shared_file("ctrlsum/val.oracleword").read_text(encoding="utf-8").splitlines()
    assert len(summaries) == len(oracle) == 100
    keywords = [[group.strip() for group in line.split("|") if group.strip()] for line in oracle]
    # each summary with its own keywords, then with the next example's (mostly absent)
    pairs = list(zip(summaries, keywords)) + list(zip(summaries, keywords[1:] + keywords[:1]))
    result = ctrlkit.get_metric("sr").compute([s for s, _ in pairs], _examples("keywords", [k for _, k in pairs]))
    expected = [_success_rate(summary, groups) for summary, groups in pairs]
    assert result.per_example["sr"] == pytest.approx(expected, abs=1e-12)
    assert result.corpus["sr"] == pytest.approx(np.mean(expected))
    assert min(expected) == 0 and max(expected) == 1 and any(0 < v < 1 for v in expected)


def test_sr_leaves_out_keywords_without_a_word_and_counts_them():
    examples = _examples("keywords", [["goal", "$", "£"], " , ", ["x"], ["%", "-"]])
    result = ctrlkit.get_metric("sr").compute(["a goal", "b", "c", "d"], examples)
    assert result.per_example == {"sr": [1.0, None, 0.0, None], "left_out": [2, 0, 0, 2]}
    assert result.corpus == {"sr": 0.5, "left_out": 4, "unscored": 2}
    with pytest.raises(ctrlkit.ConfigurationError, match="no example requests a keyword with a word character"):
        ctrlkit.get_metric("sr").check(_examples("keywords", [["$"], ["£", "%"]]))


def test_sr_counts_each_distinct_keyword_once():
    metric = ctrlkit.get_metric("sr")
    result = metric.compute(["Apple"], _examples("keywords", [["apple", "apple", "banana"]]))
    assert result.per_example["sr"] == [0.5]  # two distinct keywords, one found
    # keywords that normalise and stem alike are one keyword
    result = metric.compute(["Apples fell."], _examples("keywords", [["Apple", "apples", "APPLE", "pear"]]))
    assert result.per_example["sr"] == [0.5]


@pytest.mark.parametrize("summary, keyword", [
    ("The \ufb01le was saved.", "file"),          # ligature fi, NFKC
    ("Prices on the Stra\u00dfe rose.", "STRASSE"),   # casefold: sharp s
    ("Model \uff38 won.", "x"),                    # full-width letter, NFKC
    ("Caf\u0065\u0301 owners met.", "caf\u00e9"),    # combining accent against precomposed
])
def test_sr_matches_after_nfkc_and_casefolding(summary, keyword):
    result = ctrlkit.get_metric("sr").compute([summary], _examples("keywords", [[keyword, "absent"]]))
    assert result.per_example["sr"] == [0.5]


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_sr_runs_on_ctrlsum_files_with_symbol_only_keywords(split):
    folder = shared_file("ctrlsum")
    words = [line.replace("|", " ").split() for line in (folder / f"{split}.oraclewordns").read_text().splitlines()]
    symbols = sum(not re.search(r"\w", word) for line in words for word in dict.fromkeys(line))
    assert symbols > 0  # the files do hold "$", "\u00a3" ...
    result = ctrlkit.run(dataset="ctrlsum", data=str(folder), split=split, metrics=["sr"], baseline=None, cache=False)
    assert result.metrics["sr"]["left_out"] == symbols
    assert 0 < result.metrics["sr"]["sr"] <= 1


def test_sr_is_refused_before_work_when_the_dataset_has_no_keywords():
    with pytest.raises(ctrlkit.ConfigurationError, match="'sr' reads control 'keywords'"):
        ctrlkit.run(metrics=["sr"])


# -- length: MAD and PCC on 50-word bins ------------------------------------------------------

def _text(words):
    return " ".join(["word"] * words)


def _bins(words):
    return np.maximum(0, np.ceil(np.asarray(words, dtype=float) / 50) - 1)


def test_length_bins_are_fifty_words_wide():
    assert [length_bin(n) for n in (0, 1, 50, 51, 100, 101, 150, 151)] == [0, 0, 0, 1, 1, 2, 2, 3]


def test_length_with_word_targets_against_numpy_and_scipy():
    generated = [12, 48, 55, 99, 130, 160, 210, 260, 75]
    requested = [50, 50, 100, 100, 150, 150, 200, 250, 300]
    result = ctrlkit.get_metric("length").compute([_text(n) for n in generated], _examples("length", requested))
    bin_errors = np.abs(_bins(generated) - _bins(requested))
    assert result.per_example["words"] == generated
    assert result.per_example["abs_bin_error"] == bin_errors.tolist()
    assert result.per_example["abs_word_error"] == np.abs(np.subtract(generated, requested)).tolist()
    assert result.corpus["mad"] == pytest.approx(bin_errors.mean())
    assert result.corpus["pcc"] == pytest.approx(pearsonr(_bins(generated), _bins(requested)).statistic)
    assert result.corpus["pcc_defined"] == 1.0
    assert result.corpus["word_mad"] == pytest.approx(np.abs(np.subtract(generated, requested)).mean())


def test_length_with_bin_targets_has_no_word_error():
    generated = [30, 70, 140, 90, 260]
    requested = [0, 1, 2, 3, 4]
    metric = ctrlkit.get_metric("length", unit="bin")
    result = metric.compute([_text(n) for n in generated], _examples("length", [str(b) for b in requested]))
    assert result.per_example["abs_bin_error"] == np.abs(_bins(generated) - requested).tolist() == [0, 0, 0, 2, 1]
    assert result.per_example["abs_word_error"] == [None] * 5
    assert result.corpus["pcc"] == pytest.approx(pearsonr(_bins(generated), requested).statistic)
    assert result.corpus["word_mad"] is None


def test_length_levels_from_the_dataset_and_the_option():
    generated = [40, 95, 180, 120]
    levels = ["short", "normal", "long", "long"]
    dataset = SimpleNamespace(length_levels={"short": 50, "normal": 100, "long": 150})
    from_dataset = ctrlkit.get_metric("length")
    from_dataset.use_dataset(dataset)
    result = from_dataset.compute([_text(n) for n in generated], _examples("length", levels))
    targets = [50, 100, 150, 150]
    assert result.per_example["abs_word_error"] == np.abs(np.subtract(generated, targets)).tolist()
    assert result.corpus["mad"] == pytest.approx(np.abs(_bins(generated) - _bins(targets)).mean())
    assert result.corpus["pcc"] == pytest.approx(pearsonr(_bins(generated), _bins(targets)).statistic)

    overriding = ctrlkit.get_metric("length", levels="long=250")
    overriding.use_dataset(dataset)
    result = overriding.compute([_text(n) for n in generated], _examples("length", levels))
    assert result.per_example["abs_word_error"] == np.abs(np.subtract(generated, [50, 100, 250, 250])).tolist()


def test_length_mixes_levels_with_bins():
    metric = ctrlkit.get_metric("length", unit="bin", levels="short=50, long=200")
    result = metric.compute([_text(45), _text(120), _text(180)], _examples("length", ["short", 1, "long"]))
    assert result.per_example["abs_bin_error"] == [0, 1, 0]
    assert result.per_example["abs_word_error"] == [5, None, 20]
    assert result.corpus["word_mad"] == pytest.approx(12.5)
    assert result.corpus["pcc"] == pytest.approx(pearsonr([0, 2, 3], [0, 1, 3]).statistic)


@pytest.mark.parametrize("generated, requested", [
    ([30], [50]),                    # one example
    ([30, 40, 45], [50, 100, 150]),  # generated bins constant
    ([30, 80, 140], [60, 70, 90]),   # requested bins constant
])
def test_undefined_pcc_is_none_and_flagged(generated, requested):
    result = ctrlkit.get_metric("length").compute([_text(n) for n in generated], _examples("length", requested))
    assert result.corpus["pcc"] is None and result.corpus["pcc_defined"] == 0.0
    assert result.corpus["mad"] == pytest.approx(np.abs(_bins(generated) - _bins(requested)).mean())
    if len(generated) > 1:  # scipy agrees that it is undefined
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert np.isnan(pearsonr(_bins(generated), _bins(requested)).statistic)


def test_length_pcc_of_generated_words_against_requested_bins_as_ccsbench_defines_it():
    generated = [30, 70, 140, 90, 260, 420]
    requested = [0, 1, 2, 3, 4, 4]
    metric = ctrlkit.get_metric("length", unit="bin", pcc_generated="words")
    metric.use_dataset(SimpleNamespace(length_top_bin=4))
    result = metric.compute([_text(n) for n in generated], _examples("length", requested))
    assert result.corpus["pcc"] == pytest.approx(pearsonr(generated, requested).statistic)  # words uncapped
    assert result.corpus["pcc"] != pytest.approx(pearsonr(np.minimum(_bins(generated), 4), requested).statistic)
    assert result.corpus["pcc_defined"] == 1.0
    assert result.per_example["abs_bin_error"] == np.abs(np.minimum(_bins(generated), 4) - requested).tolist()


@pytest.mark.parametrize("generated, requested, defined", [
    ([30, 40, 45], [0, 1, 2], True),     # one generated bin, but the word counts differ
    ([40, 40, 40], [0, 1, 2], False),    # word counts constant
    ([30, 80, 140], [1, 1, 1], False),   # requested bins constant
    ([30], [0], False),                  # one example
])
def test_length_pcc_of_words_is_none_only_when_undefined(generated, requested, defined):
    metric = ctrlkit.get_metric("length", unit="bin", pcc_generated="words")
    result = metric.compute([_text(n) for n in generated], _examples("length", requested))
    assert result.corpus["pcc_defined"] == float(defined)
    if defined:
        assert result.corpus["pcc"] == pytest.approx(pearsonr(generated, requested).statistic)
    else:
        assert result.corpus["pcc"] is None


def test_length_refuses_an_unknown_pcc_side():
    with pytest.raises(ctrlkit.OptionError, match="pcc_generated"):
        ctrlkit.get_metric("length", pcc_generated="tokens")


class _Untouchable(str):
    def split(self, *args):
        raise AssertionError("a summary was scored before the controls were checked")


def test_length_refuses_an_unmapped_level_before_scoring_any_example():
    metric = ctrlkit.get_metric("length", levels="short=50")
    examples = _examples("length", ["short", 120, "medium"])
    with pytest.raises(ctrlkit.ConfigurationError, match=r"example 'ex2' requests length level 'medium', which "
                                                          r"is not mapped to words \(known: short\)"):
        metric.compute([_Untouchable("a")] * 3, examples)


@pytest.mark.parametrize("unit, value", [("words", -5), ("words", True), ("words", [50]), ("bin", 1.5)])
def test_length_refuses_values_that_are_not_a_length(unit, value):
    with pytest.raises(ctrlkit.ConfigurationError, match="example 'ex0'"):
        ctrlkit.get_metric("length", unit=unit).compute(["a b"], _examples("length", [value]))


@pytest.mark.parametrize("levels", ["short", "short=", "short=-1", "=50", "short=many"])
def test_length_refuses_malformed_levels(levels):
    with pytest.raises(ctrlkit.OptionError, match="option 'length.levels' expects LEVEL=WORDS"):
        ctrlkit.get_metric("length", levels=levels)


def test_length_in_a_run_reads_levels_from_the_option(tmp_path):
    sample = ctrlkit.get_dataset("sample").load("test")[:4]
    rows = [{"id": e.id, "document": e.document, "references": e.references,
             "controls": {"length": level}} for e, level in zip(sample, ["short", "long", "short", "long"])]
    data = tmp_path / "lengths.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = ctrlkit.run(dataset="jsonl", data=str(data), metrics=["length"], baseline=None,
                         options={"length": {"levels": "short=30,long=120"}})
    words = [len(sample["prediction"].split()) for sample in result.samples]
    targets = [30, 120, 30, 120]
    assert result.metrics["length"]["mad"] == pytest.approx(np.abs(_bins(words) - _bins(targets)).mean())
    assert result.metrics["length"]["word_mad"] == pytest.approx(np.abs(np.subtract(words, targets)).mean())


# -- readability: FKGL and dFKGL ----------------------------------------------------------------

SUMMARIES = [
    "The cat sat on the mat. It was warm.",
    "Notwithstanding considerable methodological heterogeneity, the investigators demonstrated "
    "statistically significant associations between socioeconomic deprivation and cardiovascular mortality.",
    "We found that poor people die of heart disease more often.",
    "Quantum chromodynamics characterises interactions between quarks and gluons via non-abelian gauge theory.",
    "Dogs like to run. Kids like to play.",
]


def test_fkgl_equals_textstat_and_dfkgl_is_normal_minus_high():
    levels = ["high", "normal", "high", "normal", "high"]
    result = ctrlkit.get_metric("readability").compute(SUMMARIES, _examples("readability", levels))
    grades = [textstat.flesch_kincaid_grade(summary) for summary in SUMMARIES]
    assert result.per_example["fkgl"] == pytest.approx(grades)
    normal = (grades[1] + grades[3]) / 2
    high = (grades[0] + grades[2] + grades[4]) / 3
    assert result.corpus == pytest.approx({"fkgl": sum(grades) / 5, "fkgl_normal": normal, "fkgl_high": high,
                                           "dfkgl": normal - high})
    assert result.corpus["dfkgl"] > 0  # the plain summaries read easier


def test_readability_without_the_control_and_with_one_level():
    metric = ctrlkit.get_metric("readability")
    plain = metric.compute(SUMMARIES[:2], [Example("a", "doc"), Example("b", "doc")])
    assert set(plain.corpus) == {"fkgl"}
    one_level = metric.compute(SUMMARIES[:2], _examples("readability", ["normal", "normal"]))
    assert one_level.corpus["fkgl_high"] is None and one_level.corpus["dfkgl"] is None
    assert one_level.corpus["fkgl_normal"] == pytest.approx(one_level.corpus["fkgl"])


def test_readability_refuses_an_unknown_level_naming_it():
    with pytest.raises(ctrlkit.ConfigurationError, match="example 'ex1' requests readability 'low'"):
        ctrlkit.get_metric("readability").compute(SUMMARIES[:2], _examples("readability", ["high", "low"]))


# -- entity success ---------------------------------------------------------------------------

def test_entity_success_counts_the_name_or_its_last_word():
    predictions = [
        "Barack Obama spoke on Monday.",
        "Mr OBAMA spoke on Monday.",            # the last word, any case
        "Obamacare passed on Monday.",          # not a whole word
        "Barack\nObama spoke.",                 # a line break inside the name
        "Michelle spoke on Monday.",
        "The U.S. said no.",                     # an entity ending in punctuation
    ]
    entities = ["Barack Obama"] * 5 + ["U.S."]
    result = ctrlkit.get_metric("entity").compute(predictions, _examples("entity", entities))
    assert result.per_example["entity"] == [1.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    assert result.corpus["entity"] == pytest.approx(4 / 6)


def test_entity_metric_and_guidance_share_one_alias_rule():
    from ctrlkit.entities import aliases, mentions
    from ctrlkit_controllers import guidance

    assert guidance.aliases is aliases
    assert aliases("Anita Valdez") == ["Anita Valdez", "Valdez"] and not mentions("Valdezian", "Anita Valdez")


def test_entity_success_refuses_a_blank_entity():
    with pytest.raises(ctrlkit.ConfigurationError, match="example 'ex0' requests no entity"):
        ctrlkit.get_metric("entity").compute(["text"], _examples("entity", ["  "]))


def test_length_caps_bins_at_the_dataset_top_bin():
    generated = [30, 260, 420, 180, 700]
    requested = [25, 225, 225, 475, 125]  # CCSBench bin middles; 475 words is past the top bin
    capped = ctrlkit.get_metric("length")
    capped.use_dataset(SimpleNamespace(length_top_bin=4))
    result = capped.compute([_text(n) for n in generated], _examples("length", requested))
    gen, req = np.minimum(_bins(generated), 4), np.minimum(_bins(requested), 4)
    assert result.per_example["abs_bin_error"] == np.abs(gen - req).tolist() == [0, 0, 0, 1, 2]
    assert result.corpus["pcc"] == pytest.approx(pearsonr(gen, req).statistic)
    uncapped = ctrlkit.get_metric("length").compute([_text(n) for n in generated], _examples("length", requested))
    assert uncapped.per_example["abs_bin_error"] == np.abs(_bins(generated) - _bins(requested)).tolist()
    by_option = ctrlkit.get_metric("length", top_bin=2)
    by_option.use_dataset(SimpleNamespace(length_top_bin=4))
    result = by_option.compute([_text(n) for n in generated], _examples("length", requested))
    assert result.per_example["abs_bin_error"] == np.abs(np.minimum(_bins(generated), 2) -
                                                         np.minimum(_bins(requested), 2)).tolist()


def test_length_warns_once_when_levels_share_a_bin(caplog):
    path = shared_file("macsum/macdoc_val.json")
    dataset = ctrlkit.get_dataset("macsum", path=str(path))
    examples = dataset.load(dataset.default_split)
    metric = ctrlkit.get_metric("length")
    metric.use_dataset(dataset)
    with caplog.at_level("WARNING", logger="ctrlkit"):
        metric.check(examples)
        metric.check(examples)
    lines = [record.getMessage() for record in caplog.records]
    levels = dataset.length_levels
    distinct = len({length_bin(words) for words in levels.values()})
    assert distinct < len(levels)  # MACSum-Doc: short 24 and normal 30 words are both bin 0
    assert len(lines) == 1 and f"fall into {distinct} 50-word bins for {len(levels)} levels" in lines[0]
    assert f"short ({levels['short']:g} words) bin 0" in lines[0]
    caplog.clear()
    separated = ctrlkit.get_metric("length", levels="short=40,normal=90,long=140")
    separated.use_dataset(dataset)
    with caplog.at_level("WARNING", logger="ctrlkit"):
        separated.check(examples)
    assert not caplog.records


def test_length_pcc_takes_a_requested_length_past_int64():
    """Found by tests/reliability/test_fuzz.py: a length of 10**21 words made the bins an object array that
    scipy's pearsonr refused (AttributeError) after all the work."""
    examples = [{"id": str(i), "document": "d", "controls": {"length": length}}
                for i, length in enumerate([10, 60, 10 ** 21])]
    predictions = ["one two three", " ".join(["word"] * 70), " ".join(["word"] * 200)]
    result = ctrlkit.get_metric("length").compute(predictions, examples)
    wanted = [0, 1, 10 ** 21 // 50]  # the requested 50-word bins (no top bin)
    generated = [0, 1, 3]
    assert result.corpus["pcc"] == pytest.approx(np.corrcoef(generated, [float(w) for w in wanted])[0, 1])
