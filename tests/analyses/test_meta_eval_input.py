"""meta-eval checks its input as ``run`` does, and correlates any finite scores stably (issue 36,
item 7): a score beyond a float, a negative seed or 10^9 resamples is one line; scores near
1e308 (or 1e-308) give the correlations and intervals of the same scores at scale 1."""

import json
import math
import random

import numpy as np
import pytest
from click.testing import CliRunner

from ctrlkit import correlations
from ctrlkit.analyses.meta_evaluation import meta_evaluate
from ctrlkit.cli import cli
from ctrlkit.errors import CtrlkitError

from helpers import invoke_ctrlkit


def _rows(scale=1.0, human_scale=1.0, inputs=6, systems=4, seed=1):
    generator = random.Random(seed)
    rows = []
    for i in range(inputs):
        for s in range(systems):
            human = generator.random()
            rows.append({"given": {"paper": f"p{i}", "system": f"s{s}", "human": human * human_scale},
                         "scores": {"m": (human + 0.3 * generator.random()) * scale}})
    return rows


def _values(report):
    return {(level, name, key): found[name].get(key) if isinstance(found.get(name), dict) else None
            for level, found in report["correlations"]["scores.m"].items()
            for name in ("pearson", "spearman", "kendall") for key in ("r", "low", "high", "p")}


@pytest.mark.parametrize("scale, human_scale", [(0.5e308, 1.0), (1.3e308, 1e-300), (1e-310, 1.0), (-1e308, 1e307)])
def test_scores_near_the_ends_of_the_float_range_correlate_as_at_scale_one(scale, human_scale):
    expected = _values(meta_evaluate(_rows(math.copysign(1.0, scale)), "given.human", resamples=200))
    found = _values(meta_evaluate(_rows(scale, human_scale), "given.human", resamples=200))
    assert found.keys() == expected.keys()
    for key, value in expected.items():
        assert value is not None and found[key] is not None, key
        assert found[key] == pytest.approx(value, abs=1e-9), key
        if key[-1] == "r":
            assert -1.0 <= found[key] <= 1.0
    for level in ("global", "summary", "system"):
        for name in ("pearson", "spearman", "kendall"):
            assert found[(level, name, "low")] <= found[(level, name, "high")]


def test_the_global_pearson_r_lies_inside_its_interval_for_scores_near_1e308():
    rows = [{"given": {"human": i + 0.1 * (i % 3)}, "scores": {"m": (i + 0.5 * (i % 2)) * 1e307}} for i in range(40)]
    found = meta_evaluate(rows, "given.human", resamples=500)["correlations"]["scores.m"]["global"]["pearson"]
    assert -1 <= found["low"] <= found["r"] <= found["high"] <= 1


@pytest.mark.parametrize("scale", [1e308, 1e-308, 1.0])
def test_the_resampled_pearson_of_huge_or_tiny_values_is_that_of_the_same_values_at_scale_one(scale):
    generator = np.random.default_rng(0)
    x, y = generator.random((50, 30)), generator.random((50, 30))
    y = x + 0.5 * y
    valid = generator.random((50, 30)) > 0.1
    expected = correlations.correlate_arrays("pearson", x, y, valid)
    assert np.allclose(correlations.correlate_arrays("pearson", x * scale, y * scale, valid), expected, atol=1e-12)
    weights = generator.integers(0, 3, (20, 30)).astype(float)
    weighted = correlations.correlate_weighted("pearson", x[0], y[0], weights)
    assert np.allclose(correlations.correlate_weighted("pearson", x[0] * scale, y[0] * scale, weights), weighted,
                       atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("arguments, refusal", [
    (["--seed", "-1"], "Error: seed must be a whole number from 0 to 4294967295, got -1"),
    (["--seed", str(2**40)], "Error: seed must be a whole number from 0 to 4294967295, got 1099511627776"),
    (["--resamples", "1000000000"], "Error: resamples must be a whole number of resamples, at least 2 and at most "
                                    "100,000 (0 skips the intervals), got 1000000000"),
    (["--resamples", "1"], "Error: resamples must be a whole number of resamples, at least 2 and at most 100,000"),
])
def test_a_bad_seed_or_resample_count_is_one_line(tmp_path, arguments, refusal):
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in _rows()))
    result = CliRunner().invoke(cli, ["meta-eval", str(path), "--human", "given.human", *arguments])
    assert result.exit_code == 1 and result.exception is None or isinstance(result.exception, SystemExit)
    assert result.output.strip().startswith(refusal) and result.output.count("\n") == 1, result.output


@pytest.mark.parametrize("path, value", [("given.human", int("9" * 400)), ("scores.m", -(10 ** 309)),
                                         ("scores.m", 2 ** 5000)])
def test_a_score_beyond_the_largest_float_is_one_line_naming_row_and_path(tmp_path, path, value):
    rows = _rows()
    where = rows[3]["given"] if path == "given.human" else rows[3]["scores"]
    where[path.rsplit(".", 1)[1]] = value
    with pytest.raises(CtrlkitError, match=rf"^row 4: '{path}' is an integer of about \d+ digits, beyond the "
                                           r"largest float"):
        meta_evaluate(rows, "given.human", resamples=10)
    file = tmp_path / "samples.jsonl"
    file.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = CliRunner().invoke(cli, ["meta-eval", str(file), "--human", "given.human"])
    assert result.exit_code == 1 and result.output.startswith("Error: row 4: ") and result.output.count("\n") == 1
    # an integer that is a float's (10^300) is a score like any other
    where[path.rsplit(".", 1)[1]] = 10 ** 300
    meta_evaluate(rows, "given.human", resamples=10)


def test_one_input_resampled_alone_has_an_undefined_interval_not_a_zero_width_one():
    rows = _rows(inputs=1, systems=6)
    found = meta_evaluate(rows, "given.human", levels=["summary"], resample="inputs", resamples=50)
    pearson = found["correlations"]["scores.m"]["summary"]["pearson"]
    assert pearson["low"] is None and pearson["high"] is None and "one bootstrap group" in pearson["interval_undefined"]
    # drawing the systems too gives a spread again
    both = meta_evaluate(rows, "given.human", levels=["summary"], resample="both", resamples=50)
    assert both["correlations"]["scores.m"]["summary"]["pearson"]["low"] is not None


def _with_non_finite(rows):
    rows = [json.loads(json.dumps(row)) for row in rows]
    rows[0]["given"]["human"] = float("nan")
    rows[1]["scores"]["m"] = float("inf")
    rows[2]["scores"]["m"] = float("-inf")
    rows[5]["scores"]["m"] = float("nan")
    return rows


def test_nan_and_infinite_scores_are_left_out_and_counted_per_field_in_one_warning(caplog):
    # after round 3 they were dropped without a word
    rows = _with_non_finite(_rows())
    with caplog.at_level("WARNING", logger="ctrlkit"):
        found = meta_evaluate(rows, "given.human", resamples=50)
    lines = [record.getMessage() for record in caplog.records if "NaN or infinite" in record.getMessage()]
    assert lines == ["ctrlkit: meta-eval: left out 4 NaN or infinite score(s), as missing "
                     "(in given.human: 1, scores.m: 3)"]
    assert found["settings"]["non_finite"] == {"given.human": 1, "scores.m": 3}
    # left out as a missing score is: the same correlations as with those scores absent
    absent = _with_non_finite(_rows())
    del absent[0]["given"]["human"]
    for number in (1, 2, 5):
        del absent[number]["scores"]["m"]
    expected = meta_evaluate(absent, "given.human", resamples=50)
    assert found["correlations"] == expected["correlations"]
    assert found["correlations"]["scores.m"]["global"]["left_out"] == 4


def test_finite_scores_give_no_warning_and_no_count(caplog):
    with caplog.at_level("WARNING", logger="ctrlkit"):
        found = meta_evaluate(_rows(), "given.human", resamples=0)
    assert "non_finite" not in found["settings"]
    assert not [record for record in caplog.records if "NaN" in record.getMessage()]


def test_the_command_says_how_many_non_finite_scores_each_field_held(tmp_path):
    path = tmp_path / "samples.jsonl"
    rows = _with_non_finite(_rows())
    rows[3]["scores"]["other"] = float("inf")
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))  # NaN and Infinity, as Python writes them
    result = invoke_ctrlkit("meta-eval", str(path), "--human", "given.human", "--resamples", "0",
                            "--score", "scores.m", "--score", "scores.other", "--out", str(tmp_path / "meta.json"))
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "NaN or infinite" in line]
    assert lines == ["ctrlkit: meta-eval: left out 5 NaN or infinite score(s), as missing "
                     "(in given.human: 1, scores.m: 3, scores.other: 1)"], result.stderr
    assert json.loads((tmp_path / "meta.json").read_text())["settings"]["non_finite"]["scores.other"] == 1


@pytest.mark.parametrize("value, said", [("0.5", 'str "0.5"'), (True, "bool true"), ([1, 2], "list [1, 2]"),
                                         ({"a": 1}, 'dict {"a": 1}'), ("x" * 100, 'str "' + "x" * 36 + "...")])
def test_a_score_that_is_not_a_number_is_one_line_naming_row_and_path(value, said):
    rows = [{"given": {"human": float(i), "paper": i // 2, "system": i % 2}, "scores": {"m": {"v": float(i % 3)}}}
            for i in range(8)]
    rows[5]["given"]["human"] = value  # before: left out without a word, n one smaller
    with pytest.raises(CtrlkitError) as caught:
        meta_evaluate(rows, "given.human", ["scores.m.v"], resamples=0)
    assert str(caught.value) == f"row 6: 'given.human' is {said}, not a number"
