"""``ctrlkit agreement``: Krippendorff's alpha checked against the ``krippendorff`` package and
Cohen's kappa against scikit-learn's ``cohen_kappa_score``, on random, tie-heavy and missing-value
data and on FD's facet ratings; the bootstrap intervals against a loop over the same draws that
calls those packages; undefined cases say why; bad input is one line naming the field."""

import csv
import json
import re
import warnings

import krippendorff
import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from ctrlkit import bootstrap
from ctrlkit.agreement_coefficients import alpha, kappa
from ctrlkit.analyses.agreement import NOTHING_PAIRED, ONE_GROUP, ONE_VALUE, agreement, format_report
from ctrlkit.analyses.meta_evaluation import lookup
from ctrlkit.cli import cli
from ctrlkit.errors import CtrlkitError

from helpers import ROOT, shared_file
from helpers.memory import peak_bytes

LEVELS = ("nominal", "ordinal", "interval")
SKLEARN_WEIGHTS = {"plain": None, "linear": "linear", "quadratic": "quadratic"}
FD_SYSTEMS = ("gpt35", "llama2_70b", "bartlarge", "factsum")
FD_RATERS = ("human", "gpt4_fm", "gpt35_fm")
FACETS = ("background", "method", "result", "conclusion")
FACET_STEPS = (3, 4, 4, 3)
"""FD stores a facet rating divided by its scale's top (1-3 or 1-4); scikit-learn takes labels,
not fractions, so its side gets the rating counts back (rank order, hence kappa, is the same)."""


def _rows(units, names=None):
    """One row per unit, each rater's value under ``given`` (None where missing)."""
    names = names or [f"r{j}" for j in range(units.shape[1])]
    return [{"given": {name: (None if np.isnan(value) else float(value)) for name, value in zip(names, unit)}}
            for unit in units]


def _fields(count):
    return [f"given.r{j}" for j in range(count)]


def _random_units(seed, tie_heavy):
    """Units x raters on a 1-5 scale (tie-heavy: 85% of values are 3), with about a quarter missing."""
    rng = np.random.default_rng(seed)
    shape = (int(rng.integers(8, 60)), int(rng.integers(2, 5)))
    if tie_heavy:
        units = np.where(rng.random(shape) < 0.85, 3.0, rng.integers(1, 6, shape))
    else:
        units = rng.integers(1, 6, shape).astype(float)
    units[rng.random(shape) < 0.25] = np.nan
    return units


@pytest.mark.parametrize("tie_heavy", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_alpha_equals_the_krippendorff_package(seed, tie_heavy):
    units = _random_units(seed, tie_heavy)
    report = agreement(_rows(units), _fields(units.shape[1]), resamples=0)
    for level in LEVELS:
        expected = krippendorff.alpha(reliability_data=units.T, level_of_measurement=level)
        assert report["alpha"][level]["alpha"] == pytest.approx(expected, abs=1e-12), level


def test_alpha_on_continuous_scores_equals_the_krippendorff_package():
    """Every value its own category (scores from a metric): hundreds of categories."""
    rng = np.random.default_rng(7)
    truth = rng.normal(size=80)
    units = truth[:, None] + rng.normal(scale=0.5, size=(80, 3))
    units[rng.random(units.shape) < 0.1] = np.nan
    for level in LEVELS:
        expected = krippendorff.alpha(reliability_data=units.T, level_of_measurement=level)
        assert alpha(level, units, np.ones((1, 80)))[0] == pytest.approx(expected, abs=1e-10), level


@pytest.mark.parametrize("tie_heavy", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_kappa_equals_scikit_learn_over_the_rows_holding_both(seed, tie_heavy):
    units = _random_units(seed, tie_heavy)[:, :2]
    both = ~np.isnan(units).any(1)
    report = agreement(_rows(units), _fields(2), resamples=0)
    (pair,) = report["kappa"]
    assert pair["n"] == both.sum() and pair["left_out"] == (~both).sum()
    for weighting, weights in SKLEARN_WEIGHTS.items():
        expected = cohen_kappa_score(units[both, 0], units[both, 1], weights=weights)
        assert pair[weighting]["kappa"] == pytest.approx(expected, abs=1e-12), weighting


def test_kappa_of_three_fields_is_each_pair():
    units = _random_units(3, False)[:, :2]
    units = np.column_stack([units, np.where(np.isnan(units[:, 0]), 2.0, 6 - units[:, 0])])
    report = agreement(_rows(units), _fields(3), resamples=0)
    assert [pair["fields"] for pair in report["kappa"]] == [["given.r0", "given.r1"], ["given.r0", "given.r2"],
                                                            ["given.r1", "given.r2"]]
    for pair in report["kappa"]:
        i, j = (int(field[-1]) for field in pair["fields"])
        both = ~np.isnan(units[:, [i, j]]).any(1)
        assert pair["quadratic"]["kappa"] == pytest.approx(
            cohen_kappa_score(units[both, i], units[both, j], weights="quadratic"), abs=1e-12)


def test_perfect_agreement_is_exactly_one():
    """Three raters giving each unit one value (thirds, which float arithmetic does not hold exactly)."""
    values = np.array([1 / 3, 2 / 3, 1.0, 1 / 3, 0.1, 7.0])
    rows = [{"a": v, "b": v, "c": v} for v in values]
    report = agreement(rows, ["a", "b", "c"], resamples=50)
    assert [report["alpha"][level]["alpha"] for level in LEVELS] == [1.0, 1.0, 1.0]
    assert {pair[name]["kappa"] for pair in report["kappa"] for name in SKLEARN_WEIGHTS} == {1.0}


def test_a_unit_weighing_k_counts_as_k_copies():
    """The vectorised resamples: integer weights equal the coefficients of the data written out."""
    units = _random_units(11, True)
    rng = np.random.default_rng(0)
    weights = rng.integers(0, 4, (5, len(units))).astype(float)
    for row in weights:
        copies = np.repeat(units, row.astype(int), axis=0)
        for level in LEVELS:
            assert alpha(level, units, row[None])[0] == pytest.approx(
                krippendorff.alpha(reliability_data=copies.T, level_of_measurement=level), abs=1e-12)
        both = ~np.isnan(copies[:, :2]).any(1)
        kept = ~np.isnan(units[:, :2]).any(1)
        for weighting, name in SKLEARN_WEIGHTS.items():
            assert kappa(weighting, units[kept, 0], units[kept, 1], row[None, kept])[0] == pytest.approx(
                cohen_kappa_score(copies[both, 0], copies[both, 1], weights=name), abs=1e-12)


def test_intervals_are_percentiles_of_the_packages_over_the_same_group_draws():
    """Groups of three rows resampled together: a loop that draws as numpy's default_rng(seed)
    does (resamples x groups indices), writes each resample out and calls the packages."""
    units = _random_units(5, False)[:45]
    rows = _rows(units)
    for number, row in enumerate(rows):
        row["given"]["doc"] = f"d{number // 3}"
    groups = np.arange(len(rows)) // 3
    resamples, seed = 200, 4
    report = agreement(rows, _fields(units.shape[1]), resamples=resamples, seed=seed, group_key="given.doc")
    assert report["settings"]["groups"] == groups.max() + 1
    drawn = np.random.default_rng(seed).integers(0, groups.max() + 1, (resamples, groups.max() + 1))
    copies = [np.concatenate([units[groups == g] for g in draw]) for draw in drawn]
    for level in LEVELS:
        values = [krippendorff.alpha(reliability_data=c.T, level_of_measurement=level) for c in copies]
        found = report["alpha"][level]
        assert (found["low"], found["high"]) == pytest.approx(tuple(np.percentile(values, [2.5, 97.5])), abs=1e-10)
        assert found["se"] == pytest.approx(np.std(values, ddof=1), abs=1e-10)
    pair = report["kappa"][0]
    for weighting, name in SKLEARN_WEIGHTS.items():
        values = []
        for c in copies:
            both = ~np.isnan(c[:, :2]).any(1)
            values.append(cohen_kappa_score(c[both, 0], c[both, 1], weights=name))
        assert (pair[weighting]["low"], pair[weighting]["high"]) == pytest.approx(
            tuple(np.percentile(values, [2.5, 97.5])), abs=1e-10)


def test_the_same_seed_gives_the_same_intervals():
    rows = _rows(_random_units(2, False))
    first, second = (agreement(rows, _fields(2), resamples=100, seed=9) for _ in range(2))
    assert first == second
    assert agreement(rows, _fields(2), resamples=100, seed=10) != first


def _fd_facet_units(path, facet):
    """FD's 200 (paper, system) pairs: the human, GPT-4 FM and GPT-3.5 FM rating of one facet,
    and the paper of each pair."""
    papers = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    units = np.array([[paper[f"{system}_{rater}_list"][facet] for rater in FD_RATERS]
                      for paper in papers for system in FD_SYSTEMS])
    return units, np.repeat(np.arange(len(papers)), len(FD_SYSTEMS))


@pytest.mark.parametrize("facet", range(4), ids=FACETS)
def test_fd_facet_ratings_human_and_the_two_fm_judges(facet):
    """FD (arXiv, ../shared/data/fd/arxiv.json): the stored human rating and the GPT-4 and
    GPT-3.5 FM ratings of one facet as three raters of the 200 (paper, system) pairs, papers
    resampled: alpha equals the krippendorff package, each pair's kappa scikit-learn's."""
    units, papers = _fd_facet_units(shared_file("fd/arxiv.json"), facet)
    rows = [{"paper": int(paper), **dict(zip(FD_RATERS, map(float, unit)))} for unit, paper in zip(units, papers)]
    report = agreement(rows, FD_RATERS, resamples=200, seed=0, group_key="paper")
    assert report["alpha"]["units"] == 200 and report["settings"]["groups"] == 50
    for level in LEVELS:
        found = report["alpha"][level]
        assert found["alpha"] == pytest.approx(
            krippendorff.alpha(reliability_data=units.T, level_of_measurement=level), abs=1e-12)
        assert found["low"] < found["alpha"] < found["high"]
    labels = np.rint(units * FACET_STEPS[facet]).astype(int)
    for pair in report["kappa"]:
        i, j = (FD_RATERS.index(field) for field in pair["fields"])
        for weighting, name in SKLEARN_WEIGHTS.items():
            assert pair[weighting]["kappa"] == pytest.approx(
                cohen_kappa_score(labels[:, i], labels[:, j], weights=name), abs=1e-12)


def test_the_fd_table_of_the_docs_is_what_agreement_gives():
    """docs/evaluating.md's FD table (1000 resamples of the papers, seed 0), each cell as printed."""
    text = (ROOT / "docs" / "evaluating.md").read_text(encoding="utf-8")
    path = shared_file("fd/arxiv.json")
    for facet, name in enumerate(FACETS):
        (line,) = re.findall(rf"^\| {name} \|.*$", text, re.MULTILINE)
        units, papers = _fd_facet_units(path, facet)
        rows = [{"paper": int(paper), **dict(zip(FD_RATERS, map(float, unit)))}
                for unit, paper in zip(units, papers)]
        report = agreement(rows, FD_RATERS, levels=["ordinal"], resamples=1000, seed=0, group_key="paper")
        human_gpt4, _, gpt4_gpt35 = report["kappa"]
        cells = [(report["alpha"]["ordinal"], "alpha"), (human_gpt4["plain"], "kappa"),
                 (human_gpt4["quadratic"], "kappa"), (gpt4_gpt35["quadratic"], "kappa")]
        expected = " | ".join(f"{found[key]:.3f} [{found['low']:.3f}, {found['high']:.3f}]" for found, key in cells)
        assert line == f"| {name} | {expected} |"


def test_fd_cli_reads_the_release_with_list_paths(tmp_path):
    """``ctrlkit agreement`` straight on FD's JSON lines, a facet addressed as ``S_human_list.1``."""
    path = shared_file("fd/arxiv.json")
    out = tmp_path / "agreement.json"
    fields = ["gpt35_human_list.1", "gpt35_gpt4_fm_list.1"]
    result = CliRunner().invoke(cli, ["agreement", str(path), "--field", fields[0], "--field", fields[1],
                                      "--level", "ordinal", "--resamples", "50", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "Krippendorff's alpha (2 fields; 50 units" in result.output
    report = json.loads(out.read_text())
    papers = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    units = np.array([[lookup(paper, field) for field in fields] for paper in papers], dtype=float)
    assert report["alpha"]["ordinal"]["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=units.T, level_of_measurement="ordinal"), abs=1e-12)
    labels = np.rint(units * FACET_STEPS[1]).astype(int)
    assert report["kappa"][0]["linear"]["kappa"] == pytest.approx(
        cohen_kappa_score(labels[:, 0], labels[:, 1], weights="linear"), abs=1e-12)
    assert f"{report['alpha']['ordinal']['alpha']:.4f}" in result.output


def test_passali_sample_holds_no_ratings_to_reproduce_their_alpha():
    """Passali & Tsoumakas report alpha = 0.86 for their human study; the released sample
    (../shared/data/passali) is 30 tagged documents with a summary and a topic: no rater's
    score, so that alpha cannot be recomputed from it (docs/evaluating.md says so)."""
    with open(shared_file("passali/sample_with_tags.csv"), newline="", encoding="utf-8") as file:
        lines = list(csv.reader(file))
    assert len(lines) == 30 and {len(line) for line in lines} == {3}

    def number(text):
        try:
            float(text)
            return True
        except ValueError:
            return False

    assert not any(number(cell) for line in lines for cell in line)


def test_one_category_only_is_undefined_and_says_why():
    rows = [{"a": 2, "b": 2}, {"a": 2, "b": None}, {"a": 2, "b": 2}]
    report = agreement(rows, ["a", "b"], resamples=20)
    for level in LEVELS:
        assert report["alpha"][level] == {"undefined": ONE_VALUE}
    for weighting in SKLEARN_WEIGHTS:
        assert report["kappa"][0][weighting] == {"undefined": ONE_VALUE}
    assert "undefined: every compared value is the same" in format_report(report)


def test_no_unit_with_two_values_is_undefined_and_says_why():
    rows = [{"a": 1}, {"b": 2}, {"a": 3, "c": None}]
    report = agreement(rows, ["a", "b"], resamples=20)
    assert report["alpha"]["units"] == 0 and report["alpha"]["left_out"] == 3
    assert report["alpha"]["nominal"] == {"undefined": NOTHING_PAIRED}
    assert report["kappa"][0]["plain"] == {"undefined": "no row holds both 'a' and 'b'"}


def test_a_single_unit_has_a_coefficient_but_no_interval():
    report = agreement([{"a": 1, "b": 3}], ["a", "b"], resamples=20)
    expected = krippendorff.alpha(reliability_data=[[1], [3]], level_of_measurement="interval")
    found = report["alpha"]["interval"]
    assert found["alpha"] == pytest.approx(expected)
    assert found["low"] is None and found["interval_undefined"] == ONE_GROUP
    assert report["kappa"][0]["plain"]["kappa"] == pytest.approx(cohen_kappa_score([1], [3]))
    assert "no interval" in format_report(report)


def test_non_finite_values_are_missing_and_counted():
    rows = [{"a": 1, "b": 1}, {"a": float("nan"), "b": 2}, {"a": 2, "b": float("inf")}, {"a": 2, "b": 2}]
    report = agreement(rows, ["a", "b"], resamples=0)
    assert report["settings"]["non_finite"] == {"a": 1, "b": 1}
    assert report["alpha"]["units"] == 2


@pytest.mark.parametrize("rows, fields, options, message", [
    ([{"a": 1, "b": 2}], ["a"], {}, "agreement needs two or more fields (--field), got 1"),
    ([{"a": 1, "b": 2}], ["a", "a"], {}, "field 'a' is given twice"),
    ([{"a": 1, "b": 2}], ["a", "c"], {}, "no row has a number at 'c'"),
    ([{"a": 1, "b": 2}, {"a": "high", "b": 1}], ["a", "b"], {},
     "row 2: 'a' holds \"high\", not a number (a missing value is null or absent)"),
    ([{"a": 1, "b": True}], ["a", "b"], {}, "row 1: 'b' holds true, not a number (a missing value is null or absent)"),
    ([{"a": 1, "b": 10 ** 400}], ["a", "b"], {}, "row 1: 'b' is an integer beyond the largest float (about 1.8e308)"),
    ([{"a": 1, "b": 2, "g": 1}, {"a": 1, "b": 2}], ["a", "b"], {"group_key": "g"},
     "row 2 has no value at 'g' (--group-key)"),
    ([{"a": 1, "b": 2}], ["a", "b"], {"levels": ["ratio"]}, "level must be one of nominal, ordinal, interval, got 'ratio'"),
    ([], ["a", "b"], {}, "agreement needs at least one row"),
])
def test_bad_input_is_one_line_naming_it(rows, fields, options, message):
    with pytest.raises(CtrlkitError) as caught:
        agreement(rows, fields, **options)
    assert str(caught.value) == message


def test_resamples_and_seed_are_checked_as_elsewhere():
    with pytest.raises(CtrlkitError, match="resamples must be a whole number"):
        agreement([{"a": 1, "b": 2}], ["a", "b"], resamples=1)
    with pytest.raises(CtrlkitError, match="seed must be a whole number"):
        agreement([{"a": 1, "b": 2}], ["a", "b"], seed=-1)


def test_cli_error_is_one_line(tmp_path):
    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"given": {"a": 1, "b": 2}}\n')
    result = CliRunner().invoke(cli, ["agreement", str(samples), "--field", "given.a", "--field", "given.x"])
    assert result.exit_code == 1
    assert result.output == "Error: no row has a number at 'given.x'\n"


def test_lookup_steps_into_lists_by_index():
    row = {"given": {"facets": [0.5, 1.0]}, "d": {"0": "key"}}
    assert lookup(row, "given.facets.1") == 1.0
    assert lookup(row, "given.facets.2") is None and lookup(row, "given.facets.-1") is None
    assert lookup(row, "d.0") == "key"


def test_the_peak_memory_of_agreement_does_not_grow_with_rows_x_resamples(monkeypatch):
    monkeypatch.setattr(bootstrap, "CHUNK_CELLS", 4000)  # 10 resamples of the 400 rows a chunk
    rows = [{"a": i % 5, "b": (i * 7) % 5, "c": (i * 3) % 4} for i in range(400)]
    agreement(rows, ["a", "b", "c"], resamples=10)  # imports and first-use caches out of the measure
    peaks = [peak_bytes(lambda: agreement(rows, ["a", "b", "c"], resamples=count)) for count in (100, 800)]
    # before: the whole resamples x rows weight matrix was held (100,000 rows at 1,000 resamples
    # peaked at 1.8 GB); now one chunk, and the R values of each coefficient
    assert peaks[1] < 1.6 * peaks[0], peaks


@pytest.mark.parametrize("group_key", [None, "g"])
def test_resamples_drawn_in_chunks_give_the_intervals_of_one_whole_draw(monkeypatch, group_key):
    rng = np.random.default_rng(8)
    rows = [{"a": int(rng.integers(1, 6)), "b": int(rng.integers(1, 6)), "g": i % 9} for i in range(60)]
    whole = agreement(rows, ["a", "b"], resamples=200, seed=4, group_key=group_key)
    monkeypatch.setattr(bootstrap, "CHUNK_CELLS", 60 * 7)  # 7 resamples a chunk
    chunked = agreement(rows, ["a", "b"], resamples=200, seed=4, group_key=group_key)
    assert chunked == whole  # each resample's coefficient is computed alone: the chunks change nothing


@pytest.mark.parametrize("scale", [2.0 ** -560, 1e-170, 2.0 ** 530, 1e160, 1e300, 1e-315])
def test_every_coefficient_is_the_same_at_any_scale_of_the_scores(scale):
    # before: interval alpha of these ratings at 1e-170 or 1e160 was "undefined: every compared value
    # is the same" (its squares underflowed or overflowed), with numpy RuntimeWarnings
    base = [(1, 2), (2, 2), (3, 1), (4, 4), (5, 4), (2, None), (3, 3)]
    rows = [{"a": a * scale, "b": None if b is None else b * scale} for a, b in base]
    expected = agreement([{"a": a, "b": b} for a, b in base], ["a", "b"], resamples=200, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow, underflow or invalid value
        found = agreement(rows, ["a", "b"], resamples=200, seed=1)
    reliability = np.array([[np.nan if value is None else value for value in pair] for pair in base]).T
    assert expected["alpha"]["interval"]["alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=reliability, level_of_measurement="interval"), abs=1e-12)
    if np.frexp(scale)[0] == 0.5:  # a power of two: exactly the same numbers
        assert found == expected
    else:
        assert format_report(found) == format_report(expected)
        assert found["alpha"]["interval"]["alpha"] == pytest.approx(expected["alpha"]["interval"]["alpha"], rel=1e-9)


def test_a_list_index_of_thousands_of_digits_is_no_index_and_one_line(tmp_path):
    huge = "9" * 5000  # before: int() refused it with a ValueError traceback (more than 4,300 digits)
    assert lookup({"given": {"hl": [1, 2]}}, f"given.hl.{huge}") is None
    assert lookup({"given": {"hl": [1, 2]}}, "given.hl.01") == 2
    assert lookup({"given": {"hl": [1, 2]}}, "given.hl.10") is None
    samples = tmp_path / "samples.jsonl"
    samples.write_text('{"given": {"a": 1, "hl": [1, 2]}}\n')
    result = CliRunner().invoke(cli, ["agreement", str(samples), "--field", "given.a", "--field", f"given.hl.{huge}"])
    assert result.exit_code == 1 and result.output == f"Error: no row has a number at 'given.hl.{huge}'\n"


def test_a_group_given_as_a_number_and_as_text_is_one_group():
    rows = [{"a": i % 3, "b": (i + 1) % 3, "given": {"paper": 1 if i % 2 else "1"}} for i in range(8)]
    rows += [{"a": 1, "b": 1, "given": {"paper": "other"}}]
    report = agreement(rows, ("a", "b"), resamples=10, group_key="given.paper")
    assert report["settings"]["groups"] == 2  # before: 1 and "1" were two groups
