import json

import pytest

import ctrlkit
from ctrlkit.evaluation import evaluate
from ctrlkit.analyses.meta_evaluation import correlate, meta_evaluate

from helpers import invoke_ctrlkit, shared_file

SYSTEMS = ("gpt35", "llama2_70b", "bartlarge", "factsum")


@pytest.fixture(scope="module")
def fd_files(tmp_path_factory):
    """FD's 50 papers x 4 systems as a JSONL dataset and a predictions file with the stored scores."""
    papers = [json.loads(line) for line in shared_file("fd/arxiv.json").read_text(encoding="utf-8").splitlines()
              if line.strip()]
    folder = tmp_path_factory.mktemp("fd")
    with open(folder / "data.jsonl", "w") as data, open(folder / "predictions.jsonl", "w") as predictions:
        for i, paper in enumerate(papers):
            document = paper["article"] if isinstance(paper["article"], str) else " ".join(paper["article"])
            for system in SYSTEMS:
                identifier = f"{i}:{system}"
                data.write(json.dumps({"id": identifier, "document": document, "references": [paper["human"]]}) + "\n")
                predictions.write(json.dumps({
                    "id": identifier, "prediction": paper[system], "human": paper[f"{system}_human"],
                    "bert": paper[f"{system}_bert"], "rougeL": paper[f"{system}_newrougel"],
                    "rouge1": paper[f"{system}_newrouge1"], "rouge2": paper[f"{system}_newrouge2"]}) + "\n")
    return folder


def test_evaluate_reproduces_fds_stored_rouge_for_all_200_pairs(fd_files, tmp_path):
    result = invoke_ctrlkit("evaluate", "-d", "jsonl", "--data", fd_files / "data.jsonl",
                            "-p", fd_files / "predictions.jsonl", "-m", "rouge",
                            "--set", "rouge.types=rouge1,rouge2,rougeL", "--set", "rouge.use_stemmer=false",
                            "-o", tmp_path / "eval")
    assert result.returncode == 0, result.stderr
    samples = [json.loads(line) for line in (tmp_path / "eval" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 200
    for sample in samples:
        for name in ("rouge1", "rouge2", "rougeL"):
            assert sample["scores"]["rouge"][name] == pytest.approx(sample["given"][name], abs=1e-6)
    results = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert results["config"]["mode"] == "evaluate" and results["n_examples"] == 200


def test_meta_evaluation_on_fd(fd_files, tmp_path):
    from scipy import stats

    result = evaluate(predictions=str(fd_files / "predictions.jsonl"), dataset="jsonl",
                      data=str(fd_files / "data.jsonl"), metrics=["rouge"],
                      options={"rouge": {"types": "rougeL", "use_stemmer": False}})
    report = meta_evaluate(result.samples, "given.human", ["scores.rouge.rougeL", "given.bert"], levels=["global"],
                           resamples=0)["correlations"]
    human = [s["given"]["human"] for s in result.samples]
    for path, values in (("scores.rouge.rougeL", [s["scores"]["rouge"]["rougeL"] for s in result.samples]),
                         ("given.bert", [s["given"]["bert"] for s in result.samples])):
        pooled = report[path]["global"]
        assert pooled["n"] == 200 and pooled["left_out"] == 0
        assert pooled["spearman"]["r"] == pytest.approx(stats.spearmanr(human, values).statistic)
        assert pooled["kendall"]["r"] == pytest.approx(stats.kendalltau(human, values).statistic)
        assert pooled["pearson"]["p"] == pytest.approx(stats.pearsonr(human, values).pvalue)


def test_meta_eval_command_prints_and_writes(fd_files, tmp_path):
    evaluate(predictions=str(fd_files / "predictions.jsonl"), dataset="jsonl", data=str(fd_files / "data.jsonl"),
             metrics=["rouge"], options={"rouge": {"types": "rougeL"}}, out=str(tmp_path / "e"))
    result = invoke_ctrlkit("meta-eval", tmp_path / "e" / "samples.jsonl", "--human", "given.human",
                            "-o", tmp_path / "meta.json")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2].split()[:2] == ["scores.rouge.rougeL", "200"]
    report = json.loads((tmp_path / "meta.json").read_text())
    assert report["settings"]["human"] == "given.human" and "scores.rouge.rougeL" in report["correlations"]


def test_undefined_correlations_say_why():
    assert correlate([1, 2], [3, 4]) == {"n": 2, "undefined": "fewer than 3 pairs"}
    assert correlate([1, 1, 1], [1, 2, 3])["undefined"] == "a constant series has no correlation"
    rows = [{"h": 1, "s": {"m": 1}}, {"h": None, "s": {"m": 2}}, {"h": 2, "s": {"m": 2}}, {"h": 3, "s": {"m": 5}}]
    assert meta_evaluate(rows, "h", ["s.m"], resamples=0)["correlations"]["s.m"]["global"]["left_out"] == 1


def test_predictions_must_match_the_examples(tmp_path):
    examples = ctrlkit.get_dataset("sample").load("test")
    path = tmp_path / "p.jsonl"
    path.write_text("".join(json.dumps({"id": e.id, "prediction": e.references[0]}) + "\n" for e in examples[:5]))
    with pytest.raises(ctrlkit.CtrlkitError, match=r"p.jsonl: 115 examples with no prediction "
                                                   r"\(first: id 'sample-003:"):
        evaluate(predictions=str(path), metrics=["rouge"])
    assert evaluate(predictions=str(path), metrics=["rouge"], limit=5).metrics["rouge"]["rouge1"] == pytest.approx(1.0)
    with open(path, "a") as file:
        file.write('{"id": "nope", "prediction": "x"}\n')
    with pytest.raises(ctrlkit.CtrlkitError) as caught:
        evaluate(predictions=str(path), metrics=["rouge"], limit=5)
    assert str(caught.value) == (f"{path}: 1 prediction with an id that is no example of dataset 'sample' "
                                 "(first: id 'nope')")
    # a mistyped id: its prediction matches nothing and its example has none; the line names both ids
    lines = path.read_text().splitlines()[:5]
    lines[2] = json.dumps({"id": examples[2].id + "x", "prediction": "y"})
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ctrlkit.CtrlkitError) as caught:
        evaluate(predictions=str(path), metrics=["rouge"], limit=5)
    assert str(caught.value) == (f"{path}: 1 prediction with an id that is no example of dataset 'sample' (first: id "
                                 f"'{examples[2].id}x'); 1 example with no prediction (first: id '{examples[2].id}')")
    path.write_text('{"id": "a", "text": "x"}\n')
    with pytest.raises(ctrlkit.DatasetError) as caught:
        evaluate(predictions=str(path), metrics=["rouge"])
    assert str(caught.value) == f"{path}:1: field 'prediction' is missing (fields: id, text)"
    path.write_text('{"id": "a", "prediction": 3}\n')
    with pytest.raises(ctrlkit.DatasetError, match=r"p.jsonl:1: field 'prediction' must be a string, got int$"):
        evaluate(predictions=str(path), metrics=["rouge"])


def test_meta_eval_without_score_finds_scores_present_in_any_row():
    """The first row lacks 'sr' (its example had no keywords) and has 'rouge' null; later rows have both."""
    rows = [{"given": {"h": 1.0}, "scores": {"rouge": {"rougeL": None}}},
            {"given": {"h": 2.0}, "scores": {"rouge": {"rougeL": 0.2}, "sr": {"sr": 0.5}}},
            {"given": {"h": 3.0}, "scores": {"rouge": {"rougeL": 0.3}, "sr": {"sr": 0.25}}},
            {"given": {"h": 4.0}, "scores": {"rouge": {"rougeL": 0.5}, "sr": {"sr": 1.0}}},
            {"given": {"h": 5.0}, "scores": {"rouge": {"rougeL": 0.4}, "sr": {"sr": 0.75}, "new": {"x": 1}}}]
    report = {path: levels["global"] for path, levels in
              meta_evaluate(rows, "given.h", resamples=0)["correlations"].items()}
    assert list(report) == ["scores.rouge.rougeL", "scores.sr.sr", "scores.new.x"]
    assert report["scores.rouge.rougeL"]["n"] == 4 and report["scores.rouge.rougeL"]["left_out"] == 1
    assert report["scores.sr.sr"]["n"] == 4 and report["scores.sr.sr"]["left_out"] == 1
    assert report["scores.sr.sr"]["spearman"]["r"] == pytest.approx(0.6)  # ranks 2,1,4,3 against 1,2,3,4: 1 - 6*4/60
    assert report["scores.new.x"]["undefined"] == "fewer than 3 pairs"
