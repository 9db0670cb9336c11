"""``ctrlkit meta-eval``: correlations at global, summary and system level, each checked against
scipy.stats computed independently here; bootstrap intervals and permutation p-values against
loops over the same draws; the CLI prints them; bad keys are one-line errors."""

import json
import random

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from ctrlkit import correlations
from ctrlkit.cli import cli
from ctrlkit.errors import CtrlkitError
from ctrlkit.files import read_jsonl
from ctrlkit.analyses import meta_evaluation
from ctrlkit.analyses.meta_evaluation import draw, global_resamples, meta_evaluate

from helpers import invoke_ctrlkit, shared_file
from helpers.p_values import expected_p
from helpers.memory import peak_bytes

SCIPY = {"pearson": stats.pearsonr, "spearman": stats.spearmanr, "kendall": stats.kendalltau}
FD_SYSTEMS = ("gpt35", "llama2_70b", "bartlarge", "factsum")


def _grid_rows(human, metric):
    """Rows as ``ctrlkit evaluate`` writes them: input i, system s, human and metric scores."""
    return [{"id": f"{i}:{s}", "given": {"paper": i, "system": f"s{s}", "human": human[i][s]},
             "scores": {"m": metric[i][s]}}
            for i in range(len(human)) for s in range(len(human[i]))]


def _summary(human, metric, name):
    """Per input, scipy across its systems; the mean of the defined ones (and how many were not)."""
    values = [SCIPY[name](h, m)[0] for h, m in zip(human, metric) if len(set(h)) > 1 and len(set(m)) > 1]
    return (float(np.mean(values)) if values else float("nan")), len(human) - len(values)


def _system(human, metric, name):
    human, metric = np.asarray(human, float), np.asarray(metric, float)
    if len(set(human.mean(0))) < 2 or len(set(metric.mean(0))) < 2:
        return float("nan")
    return SCIPY[name](human.mean(0), metric.mean(0))[0]


def _tiny():
    """6 inputs x 4 systems with ties; input 2's human scores are constant (undefined there)."""
    rng = random.Random(3)
    human = [[rng.choice([1, 2, 3, 4]) for _ in range(4)] for _ in range(6)]
    human[2] = [3, 3, 3, 3]
    metric = [[h + rng.choice([0, 0.5, 1, 2]) for h in row] for row in human]
    return human, metric


# ---------------------------------------------------------------------------------------------
# the observed correlations
# ---------------------------------------------------------------------------------------------

def _fd():
    rows, human, metric = [], [], []
    for line, paper in read_jsonl(shared_file("fd/arxiv.json")):
        human.append([paper[f"{s}_human"] for s in FD_SYSTEMS])
        metric.append([paper[f"{s}_gpt4_fm"] for s in FD_SYSTEMS])
        rows += [{"id": f"{line}:{s}", "given": {"paper": line, "system": s, "human": paper[f"{s}_human"],
                                                  "gpt4_fm": paper[f"{s}_gpt4_fm"]}} for s in FD_SYSTEMS]
    return rows, human, metric


def test_on_fd_each_level_equals_scipy_computed_independently():
    rows, human, metric = _fd()
    report = meta_evaluate(rows, "given.human", ["given.gpt4_fm"], resamples=0)
    assert report["settings"]["inputs"] == 50 and report["settings"]["systems"] == 4
    levels = report["correlations"]["given.gpt4_fm"]
    pooled_h, pooled_m = sum(human, []), sum(metric, [])
    for name in SCIPY:
        r, p = SCIPY[name](pooled_h, pooled_m)
        assert levels["global"][name] == {"r": pytest.approx(r, abs=1e-12), "p": pytest.approx(p, rel=1e-9)}
        expected, undefined = _summary(human, metric, name)
        assert levels["summary"][name]["r"] == pytest.approx(expected, abs=1e-12)
        assert levels["summary"]["undefined_inputs"] == undefined and levels["summary"]["inputs"] == 50 - undefined
        assert levels["system"][name]["r"] == pytest.approx(_system(human, metric, name), abs=1e-12)
    assert levels["global"]["n"] == 200 and levels["system"]["systems"] == 4


def test_an_input_with_constant_scores_is_counted_not_averaged():
    human, metric = _tiny()
    summary = meta_evaluate(_grid_rows(human, metric), "given.human", levels=["summary"],
                            resamples=0)["correlations"]["scores.m"]["summary"]
    assert summary["undefined_inputs"] == 1 and summary["inputs"] == 5
    for name in SCIPY:
        assert summary[name]["r"] == pytest.approx(_summary(human, metric, name)[0], abs=1e-12)


# ---------------------------------------------------------------------------------------------
# correlations of pairs given as counts (how the global level's resamples are computed)
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("block_cells", [1_000_000, 7])
@pytest.mark.parametrize("name", list(SCIPY))
def test_each_weighted_correlation_equals_scipy_on_the_data_written_out_with_its_copies(
        name, block_cells, monkeypatch):
    monkeypatch.setattr(correlations, "_BLOCK_CELLS", block_cells)  # 7: Kendall's sign matrices in many blocks
    rng = np.random.default_rng(8)
    x = rng.integers(0, 5, 15).astype(float)  # ties within x, within y, and of whole pairs
    y = x + rng.choice([0.0, 0.5, 1.0, 3.0], 15)
    y[3] = y[4] = y[9]
    weights = rng.integers(0, 4, (60, 15))
    weights[0] = 0
    weights[0, [2, 5]] = 1  # two pairs: undefined
    weights[1] = 0
    weights[1, [1, 1 + np.flatnonzero(x[1:] == x[1])[0]]] = 3  # x constant over the drawn pairs
    weights[2] = 0
    weights[2, 6] = 5  # one pair drawn five times: constant
    weights[3] = 0
    weights[3, [0, 1, 2]] = 1  # three pairs once each: defined when not constant
    weighted = correlations.correlate_weighted(name, x, y, weights)
    defined = 0
    for row, value in zip(weights, weighted):
        copies_x, copies_y = np.repeat(x, row), np.repeat(y, row)
        if len(copies_x) < 3 or len(set(copies_x)) < 2 or len(set(copies_y)) < 2:
            assert np.isnan(value)
        else:
            defined += 1
            assert value == pytest.approx(SCIPY[name](copies_x, copies_y)[0], abs=1e-12)
    assert np.isnan(weighted[:3]).all() and defined >= 55


def test_weighted_pearson_equals_scipy_on_the_copies_and_needs_only_two_distinct_pairs():
    """The length metric's PCC (``correlations.weighted_pearson``): no three-pair minimum."""
    rng = np.random.default_rng(11)
    x = rng.integers(0, 6, 12).astype(float)
    y = 2 * x + rng.normal(0, 1, 12)
    weights = rng.integers(0, 3, (40, 12))
    weights[0] = 0  # weighs nothing
    weights[1] = 0
    weights[1, 4] = 3  # one pair, thrice: constant
    weights[2] = 0
    weights[2, np.flatnonzero(x != x[0])[0]] = weights[2, 0] = 1  # two distinct pairs: +-1
    weighted = correlations.weighted_pearson(x, y, weights)
    assert np.isnan(weighted[:2]).all() and abs(weighted[2]) == pytest.approx(1.0, abs=1e-12)
    for row, value in zip(weights[2:], weighted[2:]):
        copies_x, copies_y = np.repeat(x, row), np.repeat(y, row)
        if len(set(copies_x)) < 2:
            assert np.isnan(value)
        else:
            assert value == pytest.approx(stats.pearsonr(copies_x, copies_y)[0], abs=1e-12)


@pytest.mark.parametrize("resample", ["inputs", "systems", "both"])
def test_the_global_resamples_from_counts_equal_the_statistic_of_the_resampled_grids(resample):
    human, metric = (np.array(grid, float) for grid in _tiny())
    metric[1, 2] = metric[4, 0] = np.nan  # missing scores are left out
    human[5, 3] = np.nan
    draws = draw(6, 6, 4, resample, 300)
    for name in SCIPY:
        drawn_human = human[draws.inputs[:, :, None], draws.systems[:, None, :]].reshape(300, -1)
        drawn_metric = metric[draws.inputs[:, :, None], draws.systems[:, None, :]].reshape(300, -1)
        expected = correlations.correlate_arrays(name, drawn_human, drawn_metric,
                                                 np.isfinite(drawn_human) & np.isfinite(drawn_metric))
        computed = global_resamples(name, human, metric, draws)
        assert (np.isnan(computed) == np.isnan(expected)).all()
        assert computed == pytest.approx(expected, abs=1e-12, nan_ok=True)


# ---------------------------------------------------------------------------------------------
# the draws, the intervals, the p-values
# ---------------------------------------------------------------------------------------------

def test_the_draws_are_the_documented_numpy_draws_and_boot_both_draws_both_sides():
    both = draw(5, 6, 4, "both", 50)
    rng = np.random.default_rng(5)
    assert (both.inputs == rng.integers(0, 6, (50, 6))).all() and (both.systems == rng.integers(0, 4, (50, 4))).all()
    assert (both.permutations == rng.permuted(np.broadcast_to(np.arange(4), (50, 6, 4)), axis=-1)).all()
    identity_inputs, identity_systems = (both.inputs == np.arange(6)).all(1), (both.systems == np.arange(4)).all(1)
    assert not identity_inputs.any() and not identity_systems.all()
    inputs, systems = draw(5, 6, 4, "inputs", 50), draw(5, 6, 4, "systems", 50)
    assert (inputs.systems == np.arange(4)).all() and not (inputs.inputs == np.arange(6)).all(1).all()
    assert (systems.inputs == np.arange(6)).all() and not (systems.systems == np.arange(4)).all(1).all()


@pytest.mark.parametrize("resample", ["inputs", "systems", "both"])
@pytest.mark.parametrize("level", ["summary", "system", "global"])
def test_the_interval_equals_a_loop_over_the_same_resamples_with_scipy(resample, level):
    human, metric = _tiny()
    count, seed = 200, 11
    report = meta_evaluate(_grid_rows(human, metric), "given.human", levels=[level], resample=resample,
                           resamples=count, seed=seed)
    result = report["correlations"]["scores.m"][level]
    assert report["settings"] | {"resample": resample, "resamples": count, "seed": seed} == report["settings"]
    draws = draw(seed, 6, 4, resample, count)
    for name in SCIPY:
        values = []
        for inputs, systems in zip(draws.inputs, draws.systems):
            h = [[human[i][s] for s in systems] for i in inputs]
            m = [[metric[i][s] for s in systems] for i in inputs]
            if level == "summary":
                values.append(_summary(h, m, name)[0])
            elif level == "system":
                values.append(_system(h, m, name))
            else:
                pooled_h, pooled_m = sum(h, []), sum(m, [])
                constant = len(set(pooled_h)) < 2 or len(set(pooled_m)) < 2
                values.append(float("nan") if constant else SCIPY[name](pooled_h, pooled_m)[0])
        values = np.array(values)
        defined = values[~np.isnan(values)]
        assert result[name]["undefined_resamples"] == count - len(defined)
        assert [result[name]["low"], result[name]["high"]] == pytest.approx(list(np.percentile(defined, [2.5, 97.5])),
                                                                            abs=1e-9)
        assert result[name]["se"] == pytest.approx(np.std(defined, ddof=1), abs=1e-9)


@pytest.mark.parametrize("level", ["summary", "system"])
def test_the_p_value_equals_a_loop_over_the_same_permutations(level):
    human, metric = _tiny()
    count = 300
    result = meta_evaluate(_grid_rows(human, metric), "given.human", levels=[level], resamples=count,
                           seed=4)["correlations"]["scores.m"][level]
    permutations = draw(4, 6, 4, "both", count).permutations
    compute = _summary if level == "summary" else (lambda h, m, name: (_system(h, m, name),))
    for name in SCIPY:
        observed = compute(human, metric, name)[0]
        permuted = [compute(human, [[row[s] for s in order] for row, order in zip(metric, orders)], name)[0]
                    for orders in permutations]
        defined = [value for value in permuted if not np.isnan(value)]
        extreme = sum(abs(value) >= abs(observed) - 1e-12 for value in defined)
        assert result[name]["p"] == pytest.approx((1 + extreme) / (1 + len(defined)))
        assert result[name]["undefined_permutations"] == count - len(defined)
        assert result[name]["permutations"] == len(defined)  # the p's floor is 1 / (1 + this)


def test_a_metric_unrelated_to_the_human_scores_is_not_significant_and_a_close_one_is():
    rng = random.Random(9)
    human = [[rng.uniform(1, 5) for _ in range(5)] for _ in range(30)]
    close = [[h + rng.gauss(0, 0.3) for h in row] for row in human]
    noise = [[rng.random() for _ in row] for row in human]
    rows = _grid_rows(human, close)
    for row, value in zip(rows, sum(noise, [])):
        row["scores"]["noise"] = value
    summary = {path: levels["summary"] for path, levels in
               meta_evaluate(rows, "given.human", resamples=500)["correlations"].items()}
    assert summary["scores.m"]["pearson"]["p"] < 0.01 and summary["scores.m"]["pearson"]["low"] > 0.5
    assert summary["scores.noise"]["pearson"]["p"] > 0.05
    assert summary["scores.noise"]["pearson"]["low"] < 0 < summary["scores.noise"]["pearson"]["high"]


# ---------------------------------------------------------------------------------------------
# the command
# ---------------------------------------------------------------------------------------------

def _samples(tmp_path, rows):
    samples = tmp_path / "samples.jsonl"
    samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(samples)


def test_the_cli_prints_each_level_with_intervals_and_p_values_and_records_the_settings(tmp_path):
    human, metric = _tiny()
    out = tmp_path / "meta.json"
    result = CliRunner().invoke(cli, ["meta-eval", _samples(tmp_path, _grid_rows(human, metric)), "--human",
                                      "given.human", "--resamples", "100", "--seed", "2", "--resample", "inputs",
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    recorded = json.loads(out.read_text())
    assert recorded == meta_evaluate(_grid_rows(human, metric), "given.human", resample="inputs", resamples=100,
                                     seed=2)
    blocks = result.output.strip().split("\n\n")
    assert [block.split()[0] for block in blocks] == ["global", "summary", "system"]
    assert "100 BOOT-INPUTS resamples, seed 2" in blocks[1] and "permutation test" in blocks[1]
    for block, level in zip(blocks, ("global", "summary", "system")):
        header, row = block.splitlines()[1:3]
        assert header.split()[2:] == ["pearson", "95%CI", "p", "spearman", "95%CI", "p", "kendall", "95%CI", "p"]
        cells = row.split()
        assert cells[0] == "scores.m"
        for index, name in enumerate(SCIPY):
            value = recorded["correlations"]["scores.m"][level][name]
            r, interval, p = cells[2 + 3 * index: 5 + 3 * index]
            assert r == f"{value['r']:.4f}" and p == expected_p(value)
            assert interval == f"[{value['low']:.4f},{value['high']:.4f}]"


def test_today_s_global_table_stays_available_with_scipys_r_and_p(tmp_path):
    rng = random.Random(7)
    human = [rng.uniform(1, 5) for _ in range(40)]
    scores = {"close": [h + rng.gauss(0, 0.3) for h in human], "noise": [rng.random() for _ in human]}
    rows = [{"given": {"human": h}, "scores": {name: values[i] for name, values in scores.items()}}
            for i, h in enumerate(human)]
    rows.append({"given": {"human": None}, "scores": {"close": 1.0, "noise": 1.0}})  # left out
    result = CliRunner().invoke(cli, ["meta-eval", _samples(tmp_path, rows), "--human", "given.human",
                                      "--resamples", "0"])
    assert result.exit_code == 0, result.output
    assert "summary and system levels: no row has 'given.paper'" in result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("global level") and len(lines) == 4
    assert lines[1].split() == ["score", "n", "pearson", "p", "spearman", "p", "kendall", "p"]
    printed = {line.split()[0]: line.split()[1:] for line in lines[2:]}
    for name, values in scores.items():
        expected = [str(len(human))]
        for function in SCIPY.values():
            statistic, p_value = function(human, values)
            expected += [f"{statistic:.4f}", f"{p_value:.3g}"]
        assert printed[f"scores.{name}"] == expected


def test_without_input_and_system_keys_the_global_interval_resamples_rows():
    rng = random.Random(1)
    rows = [{"h": rng.random(), "scores": {"m": rng.random()}} for _ in range(30)]
    report = meta_evaluate(rows, "h", resamples=100, seed=3)
    assert report["settings"]["resample"] == "rows" and report["settings"]["levels"] == ["global"]
    picks = np.random.default_rng(3).integers(0, 30, (100, 30))
    values = [stats.pearsonr([rows[i]["h"] for i in pick], [rows[i]["scores"]["m"] for i in pick])[0] for pick in picks]
    found = report["correlations"]["scores.m"]["global"]["pearson"]
    assert [found["low"], found["high"]] == pytest.approx(list(np.percentile(values, [2.5, 97.5])), abs=1e-9)


def test_an_undefined_correlation_is_said_beside_the_p_value_columns(tmp_path):
    rows = [{"h": h, "scores": {"m": 1.0}} for h in (1, 2, 3)]
    result = CliRunner().invoke(cli, ["meta-eval", _samples(tmp_path, rows), "--human", "h"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[2].split(None, 2) == ["scores.m", "3",
                                                            "undefined: a constant series has no correlation"]


@pytest.mark.parametrize("arguments, error", [
    (["--input-key", "given.doc"], "row 1 has no value at 'given.doc'"),
    (["--system-key", "given.nope"], "row 1 has no value at 'given.nope'"),
    (["--input-key", "given.system"], "rows 1 and 5 are both input 's0' of system 's0'"),
])
def test_a_bad_key_is_a_one_line_error(tmp_path, arguments, error):
    human, metric = _tiny()
    result = CliRunner().invoke(cli, ["meta-eval", _samples(tmp_path, _grid_rows(human, metric)), "--human",
                                      "given.human", "--resamples", "0", *arguments])
    assert result.exit_code != 0 and error in result.output and len(result.output.strip().splitlines()) == 1


def test_asking_for_the_summary_level_of_rows_without_inputs_is_refused():
    with pytest.raises(CtrlkitError, match="row 1 has no value at 'given.paper'"):
        meta_evaluate([{"h": 1, "scores": {"m": 1}}] * 3, "h", levels=["summary"])


def test_a_permutation_p_at_its_floor_is_printed_as_a_bound_and_the_analytic_p_is_not(tmp_path):
    """A metric that orders every input's systems as the humans do: no permutation is as extreme,
    so the summary-level p is 1 / (1 + permutations), printed as runs print it. The analytic global
    p, however small, has no floor and is printed to three significant digits."""
    rng = random.Random(5)
    human = [rng.sample([1.0, 2.0, 3.0, 4.0, 5.0], 4) for _ in range(20)]
    metric = [[2 * h + 0.1 for h in row] for row in human]
    rows = _grid_rows(human, metric)
    report = meta_evaluate(rows, "given.human", resamples=150, seed=1)
    levels = report["correlations"]["scores.m"]
    assert expected_p({"p": 1 / 151, "permutations": 150}) == "<=0.0067"  # 0.006623 rounded up, a bound
    assert expected_p({"p": 1 / 1001, "permutations": 1000}) == "<=0.001"
    for name in SCIPY:
        assert levels["summary"][name]["permutations"] == 150 and levels["summary"][name]["p"] == 1 / 151
        assert levels["system"][name]["permutations"] == 150
    assert all("permutations" not in levels["global"][name] for name in SCIPY)  # analytic: no floor
    result = CliRunner().invoke(cli, ["meta-eval", _samples(tmp_path, rows), "--human", "given.human",
                                      "--resamples", "150", "--seed", "1"])
    assert result.exit_code == 0, result.output
    for block, level in zip(result.output.strip().split("\n\n"), ("global", "summary", "system")):
        cells = block.splitlines()[2].split()
        printed = [cells[4 + 3 * index] for index in range(len(SCIPY))]
        assert printed == [expected_p(levels[level][name]) for name in SCIPY]
        if level == "summary":
            assert printed == ["<=0.0067"] * 3
        if level == "global":
            assert not any(cell.startswith("<=") for cell in printed)


# ---------------------------------------------------------------------------------------------
# a warning when resampling the systems leaves two or fewer
# ---------------------------------------------------------------------------------------------

def _fd_rows_from_the_dataset():
    """FD's 200 (paper, system) rows as the fd dataset loads them, with the human and GPT-4 FM scores."""
    import ctrlkit

    dataset = ctrlkit.get_dataset("fd", path=str(shared_file("fd/arxiv.json")))
    return [{"given": {key: example.meta[key] for key in ("paper", "system", "human", "gpt4_fm")}}
            for example in dataset.load(None)]


def _few_system_lines(caplog):
    return [record.getMessage() for record in caplog.records if "two or fewer" in record.getMessage()]


def test_boot_both_on_fd_warns_how_many_resamples_hold_two_systems_or_fewer(caplog):
    rows = _fd_rows_from_the_dataset()
    with caplog.at_level("WARNING", logger="ctrlkit"):
        meta_evaluate(rows, "given.human", ["given.gpt4_fm"], resample="both", resamples=1000, seed=0)
    # the same draws, made here: numpy's, the inputs' first (draw's documented order), then the systems'
    rng = np.random.default_rng(0)
    rng.integers(0, 50, (1000, 50))
    systems = rng.integers(0, 4, (1000, 4))
    few = [row for row in systems if len(set(row)) <= 2]
    # four draws of four systems hold two or fewer in 4 + 6 x (2^4 - 2) = 88 of 256 ways: a third
    assert abs(len(few) / 1000 - 88 / 256) < 3 * np.sqrt(88 / 256 * 168 / 256 / 1000)
    lines = _few_system_lines(caplog)
    assert len(lines) == 1 and lines[0].startswith(
        f"ctrlkit: meta-eval: {len(few)} of 1000 BOOT-BOTH resamples ({len(few) / 10:.1f}%) draw two or fewer of the "
        "4 systems; ") and "summary- and system-level intervals" in lines[0], lines
    # what the line says of them: each input's correlation across its drawn systems is +1, -1 or undefined
    # (scores rounded to 12 places: FD stores some equal scores 1 ulp apart, 0.4916666666666667 and
    # 0.4916666666666666, whose difference is rounding noise and would correlate as noise does)
    by_paper = {}
    for row in rows:
        by_paper.setdefault(row["given"]["paper"], {})[row["given"]["system"]] = row["given"]
    names = list(dict.fromkeys(row["given"]["system"] for row in rows))
    for drawn in few[:20]:
        for paper in by_paper.values():
            human = [round(paper[names[s]]["human"], 12) for s in drawn]
            metric = [round(paper[names[s]]["gpt4_fm"], 12) for s in drawn]
            if len(set(human)) > 1 and len(set(metric)) > 1:
                for function in SCIPY.values():
                    assert abs(function(human, metric)[0]) == pytest.approx(1.0)


@pytest.mark.parametrize("asked", [{"resample": "inputs"}, {"levels": ["global"]}, {"resamples": 0}])
def test_no_such_warning_where_the_systems_are_not_resampled_for_a_level_across_systems(caplog, asked):
    with caplog.at_level("WARNING", logger="ctrlkit"):
        meta_evaluate(_fd_rows_from_the_dataset(), "given.human", ["given.gpt4_fm"],
                      **{"resample": "both", "resamples": 200, **asked})
    assert not _few_system_lines(caplog)


def test_no_such_warning_with_ten_systems_and_one_from_the_command_with_three(tmp_path, caplog):
    rng = random.Random(5)
    human = [[rng.uniform(1, 5) for _ in range(10)] for _ in range(8)]
    metric = [[h + rng.gauss(0, 1) for h in row] for row in human]
    with caplog.at_level("WARNING", logger="ctrlkit"):
        meta_evaluate(_grid_rows(human, metric), "given.human", resample="both", resamples=1000)
    assert not _few_system_lines(caplog)  # ten draws of ten systems: two or fewer about once in 200,000
    three = _grid_rows([row[:3] for row in human], [row[:3] for row in metric])
    result = invoke_ctrlkit("meta-eval", _samples(tmp_path, three), "--human", "given.human", "--level", "system",
                            "--resample", "systems", "--resamples", "100")
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "two or fewer" in line]
    assert len(said) == 1 and "BOOT-SYSTEMS resamples" in said[0] and "of the 3 systems" in said[0]
    assert "the system-level intervals" in said[0]


# ---------------------------------------------------------------------------------------------
# memory: the draws come a chunk of resamples at a time; a grid too large is one line
# ---------------------------------------------------------------------------------------------

def _random_grid(inputs, systems, seed=2):
    rng = random.Random(seed)
    human = [[rng.uniform(1, 5) for _ in range(systems)] for _ in range(inputs)]
    return human, [[h + rng.gauss(0, 1) for h in row] for row in human]


def test_the_peak_memory_of_meta_eval_does_not_grow_with_resamples_x_inputs_x_systems(monkeypatch):
    monkeypatch.setattr(meta_evaluation, "_CHUNK_CELLS", 4000)  # 10 resamples of the 20 x 20 grid a chunk
    rows = _grid_rows(*_random_grid(20, 20))
    meta_evaluate(rows, "given.human", resamples=10)  # imports and first-use caches out of the measure
    peaks = [peak_bytes(lambda: meta_evaluate(rows, "given.human", resamples=count)) for count in (100, 800)]
    # before: the permutations and resampled grids were held whole (resamples x 400 cells each:
    # the peak grew from 7.8 to 24 MB from 100 to 800 resamples); now only the R values per correlation grow
    assert peaks[1] < 1.6 * peaks[0], peaks


@pytest.mark.parametrize("resample", ["inputs", "systems", "both"])
def test_chunked_draws_give_the_report_of_one_whole_draw(monkeypatch, resample):
    rows = _grid_rows(*_random_grid(7, 5, seed=4))
    whole = meta_evaluate(rows, "given.human", resample=resample, resamples=150, seed=9)
    monkeypatch.setattr(meta_evaluation, "_CHUNK_CELLS", 7 * 5 * 4)  # 4 resamples a chunk, summary 1 input a chunk
    draws = draw(9, 7, 5, resample, 150)
    assert len(list(draws.chunks())) == 38
    chunked = meta_evaluate(rows, "given.human", resample=resample, resamples=150, seed=9)
    # the same draws; a summary averaged over inputs taken one at a time may differ in the last bits
    assert chunked["settings"] == whole["settings"]
    found, expected = _leaves(chunked["correlations"]), _leaves(whole["correlations"])
    assert found.keys() == expected.keys()
    assert [found[key] for key in found] == pytest.approx([expected[key] for key in found], rel=1e-12)


def _leaves(report, path=""):
    if isinstance(report, dict):
        return {key: value for name, inner in report.items() for key, value in _leaves(inner, f"{path}.{name}").items()}
    return {path: report}


@pytest.mark.parametrize("rows, resamples, said", [
    (60, 10, "meta-eval: a grid of 60 inputs x 60 systems (3,600 cells for 60 rows) is over the 2,000 cells one "
             "score's grid may hold: name fields that group the rows into fewer inputs and systems "
             "(--input-key, --system-key)"),
    (40, 100, "meta-eval: a grid of 40 inputs x 40 systems (1,600 cells for 40 rows) x 100 resamples is 160,000 "
              "cells, over the 100,000 a run may resample: lower --resamples (at most 62 here; 0 skips the "
              "intervals and p-values), or group the rows into fewer inputs and systems (--input-key, --system-key)"),
])
def test_a_grid_too_large_for_its_resamples_is_refused_in_one_line(tmp_path, monkeypatch, rows, resamples, said):
    # rows that each name their own input and system: a grid of rows squared cells (400 rows peaked at 5.1 GB)
    monkeypatch.setattr(meta_evaluation, "GRID_CELLS", 2000)
    monkeypatch.setattr(meta_evaluation, "RESAMPLED_CELLS", 100_000)
    samples = [{"given": {"paper": i, "system": f"s{i}", "human": i % 7}, "scores": {"m": i % 5}} for i in range(rows)]
    with pytest.raises(CtrlkitError) as refused:
        meta_evaluate(samples, "given.human", resamples=resamples)
    assert str(refused.value) == said
    path = tmp_path / "samples.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in samples))
    result = CliRunner().invoke(cli, ["meta-eval", str(path), "--human", "given.human", "--resamples", str(resamples)])
    assert result.exit_code == 1 and result.output == f"Error: {said}\n"
