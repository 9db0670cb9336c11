"""``ctrlkit meta-eval`` prints each correlation's p-value beside its r, as scipy computes them."""

import json
import random

from click.testing import CliRunner
from scipy import stats

from ctrlkit.cli import cli


def test_printed_r_and_p_values_are_scipys_on_the_same_data(tmp_path):
    rng = random.Random(7)
    human = [rng.uniform(1, 5) for _ in range(40)]
    scores = {"close": [h + rng.gauss(0, 0.3) for h in human],  # p far below 0.001
              "loose": [h + rng.gauss(0, 4) for h in human],
              "noise": [rng.random() for _ in human]}
    rows = [{"given": {"human": h}, "scores": {name: values[i] for name, values in scores.items()}}
            for i, h in enumerate(human)]
    rows.append({"given": {"human": None}, "scores": {"close": 1.0, "loose": 1.0, "noise": 1.0}})  # left out
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = CliRunner().invoke(cli, ["meta-eval", str(samples), "--human", "given.human"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["score", "n", "pearson", "p", "spearman", "p", "kendall", "p"]
    printed = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert list(printed) == ["scores.close", "scores.loose", "scores.noise"]
    for name, values in scores.items():
        expected = [str(len(human))]
        for function in (stats.pearsonr, stats.spearmanr, stats.kendalltau):
            statistic, p_value = function(human, values)
            expected += [f"{statistic:.4f}", f"{p_value:.3g}"]
        assert printed[f"scores.{name}"] == expected
    assert float(printed["scores.close"][2]) < 1e-10 and float(printed["scores.noise"][2]) > 0.01


def test_an_undefined_correlation_is_said_beside_the_p_value_columns(tmp_path):
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps({"h": h, "scores": {"m": 1.0}}) + "\n" for h in (1, 2, 3)))
    result = CliRunner().invoke(cli, ["meta-eval", str(samples), "--human", "h"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1].split(None, 2) == ["scores.m", "3",
                                                            "undefined: a constant series has no correlation"]
