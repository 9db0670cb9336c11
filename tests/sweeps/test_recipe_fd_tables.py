"""The fd-meta-eval recipe's two tables on FD's stored scores: the comparison rows (the authors'
pooled Pearson, np.corrcoef over every (paper, system) pair as their evaluation_code computes it)
and the per-system means (pandas), on a PubMed-shaped file derived from arxiv.json and on
arxiv.json, whose PubMed-only scores are named as absent. ROUGE alone is scored (--metrics rouge):
BERTScore and the FM judge have tests of their own."""

import json

import numpy as np
import pytest

from ctrlkit.sweeps.sweep import sweep

from helpers import invoke_ctrlkit, shared_file
from helpers.fd_pubmed import SOURCES, write_pubmed_shaped

STORED = ["gpt4_fm", "gpt4_wo", "gpt35_fm", "llama", "gpt4", "llama_base", "newrougel", "newrouge1", "newrouge2",
          "bert", "geval", "questeval", "acu3", "delta"]
"""The recipe's compare list, by the release's names."""


def test_on_a_pubmed_shaped_file_every_stored_score_is_compared_and_averaged(tmp_path):
    pandas = pytest.importorskip("pandas")
    path = write_pubmed_shaped(shared_file("fd/arxiv.json"), tmp_path / "pubmed.json")
    out = tmp_path / "run"
    rows = sweep(recipe="fd-meta-eval", out=str(out), data=str(path), metrics=["rouge"], limit=60)  # 10 papers
    recorded = json.loads((out / "meta-eval.json").read_text())
    assert recorded["compare_absent"] == []
    assert [row["score"] for row in rows][-len(STORED):] == [f"given.{name}" for name in STORED]
    lines = [json.loads(text) for text in path.read_text().splitlines()][:10]
    pairs = [(line, system) for system in SOURCES for line in lines]
    human = [line[f"{system}_human"] for line, system in pairs]
    for name in STORED:
        score = [line[f"{system}_{name}"] for line, system in pairs]
        pooled = recorded["correlations"][f"given.{name}"]["global"]
        assert pooled["n"] == 60 and pooled["pearson"]["r"] == pytest.approx(np.corrcoef(human, score)[0, 1], abs=1e-9)
    frame = pandas.DataFrame([{"system": system, "human": line[f"{system}_human"],
                               **{name: line[f"{system}_{name}"] for name in STORED}} for line, system in pairs])
    expected = frame.groupby("system").mean()
    means = recorded["system_means"]["means"]
    assert list(means) == list(SOURCES) and recorded["system_means"]["settings"]["inputs"] == 10
    for system in SOURCES:
        for name in ["human", *STORED]:
            found = means[system][f"given.{name}"]
            assert found["mean"] == pytest.approx(expected.loc[system, name], abs=1e-12)
            assert found["low"] <= found["mean"] <= found["high"]
    table = (out / "table.md").read_text()
    _, means_table = table.split("\n\nMean of each score by system over the inputs (95% CI: 1000 resamples of the "
                                 "10 inputs, seed 0):\n\n")
    header, rule, *body = means_table.splitlines()
    assert header.startswith("| system | given.human | scores.rouge.rouge1 |") and len(body) == 6
    gpt35 = means["gpt35_fm"]["given.geval"]
    cells = dict(zip(header.strip("|").split(" | "), body[list(SOURCES).index("gpt35_fm")].strip("|").split(" | ")))
    assert cells["given.geval"].strip() == f"{gpt35['mean']:.4f} [{gpt35['low']:.4f}, {gpt35['high']:.4f}]"


def test_on_arxiv_the_pubmed_only_scores_are_named_absent(tmp_path):
    out = tmp_path / "run"
    result = invoke_ctrlkit("sweep", "--recipe", "fd-meta-eval", "--data", shared_file("fd/arxiv.json"),
                            "--metrics", "rouge", "--limit", "8", "-o", out)
    assert result.returncode == 0, result.stderr
    recorded = json.loads((out / "meta-eval.json").read_text())
    assert recorded["compare_absent"] == ["given.gpt4_wo", "given.llama_base", "given.geval"]
    assert recorded["compare_unlisted"] == []  # every number arXiv stores is compared
    assert not {"given.gpt4_wo", "given.llama_base", "given.geval"} & set(recorded["correlations"])
    assert "Not in these data, so not correlated: given.gpt4\\_wo, given.llama\\_base, given.geval." in result.stdout
    assert "| gpt35 |" in result.stdout and list(recorded["system_means"]["means"]) == [
        "bartlarge", "llama2_70b", "gpt35", "factsum"]


def test_a_stored_score_the_recipe_does_not_compare_is_named(tmp_path):
    lines = [json.loads(text) for text in shared_file("fd/arxiv.json").read_text().splitlines() if text.strip()][:4]
    for line in lines:  # a score of a later release, under a name the recipe's compare list lacks
        for system in ("gpt35", "llama2_70b", "bartlarge", "factsum"):
            line[f"{system}_newscore"] = 0.5
    path = tmp_path / "extra.json"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "run"
    sweep(recipe="fd-meta-eval", out=str(out), data=str(path), metrics=["rouge"])
    recorded = json.loads((out / "meta-eval.json").read_text())
    assert recorded["compare_unlisted"] == ["given.newscore"]  # given.paper names the input: not a score
    assert ("Stored in these data but not in the recipe's compare list, so not correlated: given.newscore "
            "(ctrlkit meta-eval --score PATH correlates any of them).") in (out / "table.md").read_text()
