"""The FD loader reads every stored field of the release from the keys of each line: on the real
arXiv half, on a PubMed-shaped file derived from it (helpers.fd_pubmed), and on small broken lines."""

import json
import math

import pytest

import ctrlkit
from ctrlkit import DatasetError

from helpers import shared_file
from helpers.fd_pubmed import ORPHAN, SOURCES, pubmed_fields, write_pubmed_shaped


def _lines(path):
    return [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines() if text.strip()]


def test_every_stored_field_of_each_arxiv_system_is_in_meta():
    path = shared_file("fd/arxiv.json")
    papers = _lines(path)
    examples = ctrlkit.get_dataset("fd", path=str(path)).load(None)
    assert len(examples) == 200
    # the systems with human scores, as the authors' metric-level code lists them
    assert {e.meta["system"] for e in examples} == {"gpt35", "llama2_70b", "factsum", "bartlarge"}
    for example in examples:
        paper = papers[example.meta["paper"] - 1]
        system = example.meta["system"]
        stored = {key[len(system) + 1:]: value for key, value in paper.items() if key.startswith(system + "_")}
        assert len(stored) == 16  # 15 scores and score lists, and the facets (aspect)
        assert {k: v for k, v in example.meta.items() if k not in ("prediction", "system", "paper",
                                                                    "reference_aspect")} == stored
        assert example.meta["prediction"] == paper[system] and example.references == [paper["human"]]
        assert example.meta["reference_aspect"] == paper["human_aspect"] and example.document == paper["article"]
    assert {"acu3", "questeval", "delta", "gpt4", "llama", "gpt4_fm_list", "gpt35_fm_list", "human_list",
            "newrouge1", "newrouge2", "newrougel", "bert", "aspect"} <= set(examples[0].meta)


def test_a_system_without_human_scores_is_read_when_named():
    path = shared_file("fd/arxiv.json")
    examples = ctrlkit.get_dataset("fd", path=str(path), systems="bartbase").load(None)
    assert len(examples) == 50
    assert set(examples[0].meta) == {"prediction", "system", "paper", "reference_aspect", "aspect"}


def test_a_pubmed_shaped_file_gives_its_six_systems_and_their_fields(tmp_path):
    arxiv = shared_file("fd/arxiv.json")
    path = write_pubmed_shaped(arxiv, tmp_path / "pubmed.json")
    papers, derived = _lines(arxiv), _lines(path)
    examples = ctrlkit.get_dataset("fd", path=str(path)).load(None)
    assert len(examples) == 300 and [e.meta["system"] for e in examples[:6]] == list(SOURCES)
    for example in examples:
        line = example.meta["paper"]
        system = example.meta["system"]
        expected = pubmed_fields(papers[line - 1], SOURCES[system])
        # bigbird_pegasus_block_human is bigbird_pegasus_block's, never bigbird_pegasus's "block_human"
        assert {k: v for k, v in example.meta.items() if k not in ("prediction", "system", "paper",
                                                                    "reference_aspect")} == expected
        assert example.meta["prediction"] == derived[line - 1][system]
        assert example.meta["reference_aspect"] == derived[line - 1]["ground_aspect"]
        assert ORPHAN[1] not in example.meta.values()
    assert {"geval", "gpt4_wo", "gpt4_list_wo", "llama_base"} <= set(examples[0].meta)
    named = ctrlkit.get_dataset("fd", path=str(path), systems="bigbird_pegasus,longt5_block").load(None)
    assert len(named) == 100 and {e.meta["system"] for e in named} == {"bigbird_pegasus", "longt5_block"}


PAPER = {"article": "A paper.", "human": "An abstract.", "gpt35": "One abstract.", "gpt35_aspect": "{}",
         "gpt35_human": 0.5, "gpt35_human_list": [1.0, 0.5], "llama": "Another.", "llama_human": 0.7}


def _load(tmp_path, *lines, **options):
    path = tmp_path / "fd.json"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return ctrlkit.get_dataset("fd", path=str(path), **options).load(None)


@pytest.mark.parametrize("change, message", [
    ({"gpt35_bert": None}, r"fd.json:1: field 'gpt35_bert' must be a number, a list of numbers or text, got null$"),
    ({"gpt35_bert": True}, r"field 'gpt35_bert' must be a number, a list of numbers or text, got bool$"),
    ({"gpt35_bert": {"f1": 1}}, r"field 'gpt35_bert' must be a number, a list of numbers or text, got dict$"),
    ({"gpt35_human_list": [1.0, "x"]}, r"field 'gpt35_human_list' must be .*, got a list holding str$"),
    ({"gpt35_human_list": [[1.0]]}, r"field 'gpt35_human_list' must be .*, got a list holding a list$"),
    ({"gpt35_human": math.nan}, r"field 'gpt35_human' must be a number, a list of numbers or text, got nan$"),
    ({"gpt35": 3}, r"fd.json:1: field 'gpt35' must be a system's abstract \(text, since 'gpt35_human' follows "
                   r"it\), got int$"),
    ({"gpt35": None}, r"field 'gpt35' must be a system's abstract .*, got null$"),
    ({"gpt35_system": "x"}, r"field 'gpt35_system' names a system's 'system', which the loader sets itself$"),
    ({"gpt35": " "}, r"fd.json:1: field 'gpt35' is empty$"),
])
def test_a_line_it_cannot_read_right_is_refused_in_one_line(tmp_path, change, message):
    with pytest.raises(DatasetError, match=message):
        _load(tmp_path, {**PAPER, **change})


def test_named_systems_must_be_systems(tmp_path):
    assert [e.meta["system"] for e in _load(tmp_path, PAPER)] == ["gpt35", "llama"]
    with pytest.raises(DatasetError, match=r"fd.json:1: 'human' is the paper or its reference, not a system "
                                           r"\(fd.systems\)$"):
        _load(tmp_path, PAPER, systems="human")
    with pytest.raises(DatasetError, match=r"fd.json:1: field 'gpt35_aspect' is text but not a system's abstract: "
                                           r"no field 'gpt35_aspect_<score>' follows it \(fd.systems\)$"):
        _load(tmp_path, PAPER, systems="gpt35_aspect")
    with pytest.raises(DatasetError, match=r"fd.json:1: field 'gpt3' is missing \(fields: article, .*\); "
                                           r"--set fd.systems=FIELD reads another$"):
        _load(tmp_path, PAPER, systems="gpt3")


def test_every_line_must_have_the_first_lines_judged_systems(tmp_path):
    second = {key: value for key, value in PAPER.items() if key != "llama_human"}
    with pytest.raises(DatasetError, match=r"fd.json:2: the systems with human scores are gpt35, line 1's were "
                                           r"gpt35, llama \(name the ones to read with fd.systems\)$"):
        _load(tmp_path, PAPER, second)
    assert len(_load(tmp_path, PAPER, second, systems="gpt35")) == 2
    skipping = ctrlkit.get_dataset("fd", path=str(tmp_path / "fd.json"), skip_invalid=True)
    assert len(skipping.load(None)) == 2 and skipping.skipped == 1
    alone = {key: value for key, value in second.items() if key != "gpt35_human"}
    with pytest.raises(DatasetError, match=r"fd.json:1: no system has human scores \(a field S_human beside a text "
                                           r"field S\)$"):
        _load(tmp_path, alone)


def test_meta_eval_reaches_every_stored_score_without_a_predictions_file(tmp_path):
    from scipy import stats

    from ctrlkit.evaluation import evaluate
    from helpers import invoke_ctrlkit

    path = shared_file("fd/arxiv.json")
    evaluate(dataset="fd", data=str(path), metrics=["stats"], out=str(tmp_path / "e"))
    scores = ["acu3", "questeval", "delta", "gpt4", "llama", "gpt35_fm", "gpt4_fm", "bert", "newrouge2"]
    result = invoke_ctrlkit("meta-eval", tmp_path / "e" / "samples.jsonl", "--human", "given.human", "--level",
                            "global", "--resamples", "0", *[f"--score=given.{name}" for name in scores],
                            "-o", tmp_path / "meta.json")
    assert result.returncode == 0, result.stderr
    found = json.loads((tmp_path / "meta.json").read_text())["correlations"]
    papers = _lines(path)
    systems = ("bartlarge", "llama2_70b", "gpt35", "factsum")
    human = [paper[f"{system}_human"] for paper in papers for system in systems]
    for name in scores:
        score = [paper[f"{system}_{name}"] for paper in papers for system in systems]
        assert found[f"given.{name}"]["global"]["n"] == 200
        assert found[f"given.{name}"]["global"]["spearman"]["r"] == pytest.approx(stats.spearmanr(human, score)[0])
        assert found[f"given.{name}"]["global"]["pearson"]["r"] == pytest.approx(stats.pearsonr(human, score)[0])
