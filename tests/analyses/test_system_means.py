"""Each system's mean of each score with its bootstrap interval (ctrlkit.analyses.system_means),
against pandas and scipy.stats.bootstrap on FD's arXiv scores read straight from arxiv.json."""

import json
import warnings

import numpy as np
import pytest

from ctrlkit.analyses.system_means import means_markdown, system_means
from ctrlkit.errors import CtrlkitError

from helpers import shared_file

SYSTEMS = ("gpt35", "llama2_70b", "factsum", "bartlarge")
SCORES = ("human", "gpt4_fm", "gpt35_fm", "llama", "gpt4", "newrougel", "bert", "questeval", "acu3", "delta")


def _rows():
    papers = [json.loads(text) for text in shared_file("fd/arxiv.json").read_text(encoding="utf-8").splitlines()]
    return [{"given": {"paper": number, "system": system, **{name: paper[f"{system}_{name}"] for name in SCORES}}}
            for number, paper in enumerate(papers, 1) for system in SYSTEMS]


def test_means_and_intervals_are_pandas_means_and_scipy_percentile_intervals():
    pandas = pytest.importorskip("pandas")
    from scipy import stats

    rows = _rows()
    paths = [f"given.{name}" for name in SCORES]
    report = system_means(rows, paths, resamples=1000, seed=3)
    frame = pandas.DataFrame([row["given"] for row in rows])
    expected = frame.groupby("system")[list(SCORES)].mean()
    assert list(report["means"]) == list(SYSTEMS)
    assert report["settings"] == {"input_key": "given.paper", "system_key": "given.system", "inputs": 50,
                                       "systems": 4, "resample": "inputs", "resamples": 1000, "seed": 3,
                                       "confidence": 0.95, "interval": "percentile bootstrap"}
    for system in SYSTEMS:
        values = frame[frame.system == system]
        for name in SCORES:
            found = report["means"][system][f"given.{name}"]
            assert found["mean"] == pytest.approx(expected.loc[system, name], abs=1e-12) and found["n"] == 50
            # the same draws scipy makes for one sample of 50 given default_rng(seed)
            interval = stats.bootstrap((values[name].to_numpy(),), np.mean, n_resamples=1000, method="percentile",
                                       random_state=np.random.default_rng(3)).confidence_interval
            assert (found["low"], found["high"]) == pytest.approx((interval.low, interval.high), abs=1e-12)


def test_a_missing_score_is_left_out_of_its_systems_mean():
    rows = _rows()
    for row in rows:
        if row["given"]["system"] == "gpt35" and row["given"]["paper"] <= 10:
            del row["given"]["bert"]
        if row["given"]["system"] == "factsum":
            del row["given"]["delta"]
    report = system_means(rows, ["given.bert", "given.delta"], resamples=0)
    kept = [row["given"]["bert"] for row in rows if row["given"]["system"] == "gpt35" and "bert" in row["given"]]
    assert report["means"]["gpt35"]["given.bert"] == {"mean": pytest.approx(np.mean(kept)), "n": 40, "low": None,
                                                      "high": None, "se": None}
    assert "given.delta" not in report["means"]["factsum"]
    lines = means_markdown(report, ["given.bert", "given.delta"])
    assert lines[2:4] == ["| system | given.bert | given.delta |", "|---|---:|---:|"]
    factsum = next(line for line in lines if line.startswith("| factsum |"))
    assert factsum == f"| factsum | {report['means']['factsum']['given.bert']['mean']:.4f} |  |"


def test_the_table_prints_each_mean_with_its_interval():
    report = system_means(_rows(), ["given.human"], resamples=200, seed=0)
    lines = means_markdown(report, ["given.human"])
    assert lines[0] == "Mean of each score by system over the inputs (95% CI: 200 resamples of the 50 inputs, seed 0):"
    gpt35 = report["means"]["gpt35"]["given.human"]
    assert f"| gpt35 | {gpt35['mean']:.4f} [{gpt35['low']:.4f}, {gpt35['high']:.4f}] |" in lines


def test_a_row_without_its_system_is_one_line():
    with pytest.raises(CtrlkitError, match=r"^row 2 has no usable value at 'given.system' \(the input and the "
                                           r"system of each row\)$"):
        system_means([{"given": {"paper": 1, "system": "a"}}, {"given": {"paper": 1}}], ["given.human"])


@pytest.mark.parametrize("top", [1.5e308, 1.7976931348623157e308, 1e-310])
def test_means_of_scores_near_the_float_limits_are_the_scaled_means_scaled_back(top):
    # before: scores of 1.5e308 summed to inf, and the table printed "inf [nan, nan]" without a word
    rng = np.random.default_rng(2)
    human = rng.uniform(0.5, 1.0, (12, 3))
    rows = [{"given": {"paper": i, "system": f"s{s}", "human": float(human[i, s] * top)}}
            for i in range(12) for s in range(3)]
    exponent = np.frexp(top)[1]
    unit = [{"given": {**row["given"], "human": float(np.ldexp(row["given"]["human"], -exponent))}} for row in rows]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow, no invalid value
        found = system_means(rows, ["given.human"], resamples=200, seed=1)
    expected = system_means(unit, ["given.human"], resamples=200, seed=1)
    for system in ("s0", "s1", "s2"):
        got, scaled = found["means"][system]["given.human"], expected["means"][system]["given.human"]
        assert all(np.isfinite(got[key]) for key in ("mean", "low", "high", "se"))
        assert [got[key] for key in ("mean", "low", "high", "se")] == pytest.approx(
            [np.ldexp(scaled[key], exponent) for key in ("mean", "low", "high", "se")], rel=1e-12, abs=0)
    line = means_markdown(found, ["given.human"])[-1]
    assert "inf" not in line and "nan" not in line and len(line) < 80, line


def test_resamples_drawn_a_chunk_at_a_time_hold_bounded_memory_and_give_the_same_means(monkeypatch):
    import tracemalloc

    from ctrlkit.analyses import system_means as module

    rows = [{"given": {"paper": i, "system": s, "human": (i * 7 + s) % 10 / 10}} for i in range(2000) for s in (0, 1)]
    whole = module.system_means(rows, ["given.human"], resamples=200, seed=3)
    monkeypatch.setattr(module, "CHUNK_CELLS", 5000)  # two resamples of 2,000 inputs at a time
    chunked = module.system_means(rows, ["given.human"], resamples=200, seed=3)
    for system in ("0", "1"):  # the same draws; sums in another order differ in the last bits only
        assert chunked["means"][system]["given.human"] == pytest.approx(whole["means"][system]["given.human"],
                                                                        rel=1e-12)

    def peak(resamples):
        tracemalloc.start()
        try:
            module.system_means(rows, ["given.human"], resamples=resamples, seed=3)
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    # before: resamples x inputs counts, 16 bytes each (800 x 2,000: 25.6 MB against 3.2 MB at 100)
    small, large = peak(100), peak(800)
    assert large < 2 * small, (small, large)


def test_a_system_given_as_a_number_and_as_text_is_one_system():
    rows = [{"given": {"paper": i, "system": 1 if i % 2 else "1", "human": i / 10}} for i in range(6)]
    rows += [{"given": {"paper": i, "system": "b", "human": 0.5}} for i in range(6)]
    means = system_means(rows, ["given.human"], resamples=0)["means"]
    # before: 1 and "1" were two systems, and meta-eval.json held the key "1" twice
    assert sorted(means) == ["1", "b"] and means["1"]["given.human"]["n"] == 6
