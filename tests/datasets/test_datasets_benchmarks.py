"""The MACSum, CTRLsum and FD loaders on the real files, and on small malformed ones."""

import json
from collections import Counter

import pytest

import ctrlkit
from ctrlkit import DatasetError, Example, ModelInput
from ctrlkit.evaluation import evaluate

from helpers import shared_file


def test_macsum_doc_and_dial_give_one_example_per_reference():
    doc = ctrlkit.get_dataset("macsum", path=str(shared_file("macsum/macdoc_val.json")))
    assert doc.default_split == "val"
    examples = doc.load("val")
    assert len(examples) == 554 and len({e.meta["source_index"] for e in examples}) == 94
    assert Counter(e.controls["length"] for e in examples) == {"normal": 298, "long": 135, "short": 121}
    assert doc.length_levels == {"short": 24, "normal": 30, "long": 59}
    assert examples[0].controls.keys() <= {"length", "extractiveness", "specificity", "topic", "speaker"}
    dial = ctrlkit.get_dataset("macsum", path=str(shared_file("macsum/macdial_val.json")))
    dialogues = dial.load("val")
    assert len(dialogues) == 292 and len({e.meta["source_index"] for e in dialogues}) == 41
    assert "\n" in dialogues[0].document and dial.length_levels["normal"] == 60
    assert any("speaker" in e.controls for e in dialogues)


def test_macsum_length_levels_are_the_median_reference_lengths():
    import math
    from statistics import median

    from ctrlkit_datasets.macsum import LENGTH_LEVELS

    for name, key in (("macdoc_val.json", "doc"), ("macdial_val.json", "dial")):
        examples = ctrlkit.get_dataset("macsum", path=str(shared_file(f"macsum/{name}"))).load(None)
        for level, words in LENGTH_LEVELS[key].items():
            lengths = [len(e.references[0].split()) for e in examples if e.controls["length"] == level]
            assert math.floor(median(lengths) + 0.5) == words  # a median of 31.5 words is 32


def test_macsum_errors_name_the_source(tmp_path):
    path = tmp_path / "bad_val.json"
    path.write_text(json.dumps([{"source": ["A sentence."], "references": [{"summary": "", "control_attribute": {}}]}]))
    with pytest.raises(DatasetError, match=r"bad_val.json: source 0, reference 0: field 'summary' is missing or empty"):
        ctrlkit.get_dataset("macsum", path=str(path)).load("val")
    with pytest.raises(DatasetError, match="--split test does not apply"):
        ctrlkit.get_dataset("macsum", path=str(path)).load("test")
    path.write_text("[{")
    with pytest.raises(DatasetError, match="cannot read as MACSum JSON"):
        ctrlkit.get_dataset("macsum", path=str(path)).load(None)


def _references(sources):
    return sum(len(source["references"]) for source in sources)


def test_macsum_release_layout_gives_train_val_and_test_of_both_domains(tmp_path):
    """The release's dataset/ folder: macdoc/ and macdial/, one file per split. Only the val files
    are here, so train and test are written from parts of them."""
    doc_file, dial_file = shared_file("macsum/macdoc_val.json"), shared_file("macsum/macdial_val.json")
    doc, dial = json.loads(doc_file.read_text()), json.loads(dial_file.read_text())
    root = tmp_path / "dataset"
    for domain, real, sources in (("macdoc", doc_file, doc), ("macdial", dial_file, dial)):
        (root / domain).mkdir(parents=True)
        (root / domain / "val.json").symlink_to(real)
        (root / domain / "train.json").write_text(json.dumps(sources[:3]))
        (root / domain / "test.json").write_text(json.dumps(sources[3:5]))
    by_folder = ctrlkit.get_dataset("macsum", path=str(root / "macdoc"))
    assert [len(by_folder.load(split)) for split in ("train", "val", "test")] == [
        _references(doc[:3]), _references(doc), _references(doc[3:5])]
    assert by_folder.default_split == "test"
    from_root = ctrlkit.get_dataset("macsum", path=str(root), domain="dial")
    examples = from_root.load("val")
    assert len(examples) == _references(dial) == 292
    assert sum("speaker" in e.controls for e in examples) == sum(
        bool(r["control_attribute"].get("speaker")) for s in dial for r in s["references"])
    assert from_root.length_levels["normal"] == 60  # the Dial levels
    shared = ctrlkit.get_dataset("macsum", path=str(doc_file.parent), domain="dial")
    assert len(shared.load("val")) == 292  # macdial_val.json, found by its name


def test_macsum_reads_attribute_keys_in_any_case_and_split_aliases(tmp_path):
    source = {"metadata": {"dataset": "qmsum"}, "source": ["A: Hello there.", "B: Hi."],
              "references": [{"summary": "They greet.", "control_attribute": {
                  "length": "short", "extractiveness": "normal", "specificity": "normal", "topic": "greeting",
                  "Speaker": "A"}}]}
    (tmp_path / "valid.json").write_text(json.dumps([source]))
    dataset = ctrlkit.get_dataset("macsum", path=str(tmp_path))
    assert dataset.load("val")[0].controls["speaker"] == "A"
    (tmp_path / "val.json").write_text(json.dumps([source]))
    with pytest.raises(DatasetError, match="could both be MACSum's val split; keep one"):
        dataset.load("val")
    with pytest.raises(DatasetError, match=r"no MACSum train file \(train.json, macdoc/train.json"):
        dataset.load("train")


def test_ctrlsum_reads_aligned_files_with_keyword_groups():
    folder = shared_file("ctrlsum")
    dataset = ctrlkit.get_dataset("ctrlsum", path=str(folder))
    for split in ("train", "val", "test"):
        assert len(dataset.load(split)) == 100
    assert dataset.options["keywords"] == "full"  # .oraclewordns is there
    first = dataset.load("val")[0]
    assert first.controls["keyword_groups"] == [["$", "89", "ship", "6", "pounds", "Boston", "snow", "insulated",
                                                 "Styrofoam", "box"], ["warmer", "states"], ["selling"]]
    assert first.controls["keywords"][:4] == ["$", "89", "ship", "6"]
    assert first.meta["keyword_file"] == "val.oraclewordns"
    assert first.references[0].startswith("A man in suburban Boston is selling snow online")


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_ctrlsum_full_keywords_by_default_and_dropout_by_option(split):
    """Every line's keywords against the file read independently; the dropout keywords are a
    subset of the full ones on every line (the released files' relation)."""
    folder = shared_file("ctrlsum")

    def words(kind):
        lines = (folder / f"{split}.{kind}").read_text(encoding="utf-8").split("\n")[:100]
        return [list(dict.fromkeys(line.replace("|", " ").split())) for line in lines]

    full = ctrlkit.get_dataset("ctrlsum", path=str(folder)).load(split)
    dropout = ctrlkit.get_dataset("ctrlsum", path=str(folder), keywords="dropout").load(split)
    assert [e.controls["keywords"] for e in full] == words("oraclewordns")
    assert [e.controls["keywords"] for e in dropout] == words("oracleword")
    assert all(set(d.controls["keywords"]) <= set(f.controls["keywords"]) for d, f in zip(dropout, full))
    assert sum(map(len, words("oraclewordns"))) > sum(map(len, words("oracleword")))


def test_ctrlsum_without_full_keywords_falls_back_with_a_warning(tmp_path, caplog):
    for kind, text in (("source", "doc one\n"), ("target", "sum one\n"), ("oracleword", "one\n")):
        (tmp_path / f"test.{kind}").write_text(text)
    dataset = ctrlkit.get_dataset("ctrlsum", path=str(tmp_path))
    with caplog.at_level("WARNING", logger="ctrlkit"):
        assert dataset.load("test")[0].controls["keywords"] == ["one"]
    assert dataset.options["keywords"] == "dropout"
    assert "has no test.oraclewordns" in caplog.text
    with pytest.raises(DatasetError, match=r"test.oraclewordns: no such file"):
        ctrlkit.get_dataset("ctrlsum", path=str(tmp_path), keywords="full").load("test")


def test_ctrlsum_errors(tmp_path):
    for kind, text in (("source", "doc one\ndoc two\n"), ("target", "sum one\n\n"), ("oracleword", "a | b\nc\n")):
        (tmp_path / f"test.{kind}").write_text(text)
    dataset = ctrlkit.get_dataset("ctrlsum", path=str(tmp_path))
    with pytest.raises(DatasetError, match=r"test.target:2: the line is empty"):
        dataset.load("test")
    skipping = ctrlkit.get_dataset("ctrlsum", path=str(tmp_path), skip_invalid=True)
    assert len(skipping.load("test")) == 1 and skipping.skipped == 1
    (tmp_path / "test.oracleword").write_text("a\n")
    with pytest.raises(DatasetError, match=r"not aligned \(lines: source 2, target 2, oracleword 1\)"):
        dataset.load("test")
    with pytest.raises(DatasetError, match=r"val.source: no such file"):
        dataset.load("val")
    source = tmp_path / "test.source"
    with pytest.raises(DatasetError, match=rf"^{source}: a file; dataset 'ctrlsum' reads the folder that holds "
                                           rf"{{split}}.source, .target and the keyword files: --data {tmp_path}$"):
        ctrlkit.get_dataset("ctrlsum", path=str(source)).load("test")
    (tmp_path / "val.source").mkdir()
    with pytest.raises(DatasetError, match=r"val.source: a folder, not a file$"):
        dataset.load("val")


def test_fd_gives_one_example_per_paper_and_system_with_its_prediction():
    dataset = ctrlkit.get_dataset("fd", path=str(shared_file("fd/arxiv.json")))
    examples = dataset.load(None)
    assert len(examples) == 200 and Counter(e.meta["system"] for e in examples)["gpt35"] == 50
    first = examples[0]
    assert first.meta["prediction"] and first.references and len(first.meta["human_list"]) == 4


def test_fd_evaluates_and_meta_evaluates_without_a_predictions_file(tmp_path):
    result = evaluate(dataset="fd", data=str(shared_file("fd/arxiv.json")), metrics=["rouge"],
                      options={"rouge": {"types": "rouge1,rouge2,rougeL", "use_stemmer": False}}, out=str(tmp_path))
    for sample in result.samples:
        for name in ("rouge1", "rouge2", "rougeL"):
            assert sample["scores"]["rouge"][name] == pytest.approx(sample["given"]["new" + name.lower()], abs=1e-6)
    from ctrlkit.analyses.meta_evaluation import meta_evaluate

    report = meta_evaluate(result.samples, "given.human", ["scores.rouge.rougeL", "given.bert"], levels=["global"],
                           resamples=0)["correlations"]
    assert report["scores.rouge.rougeL"]["global"]["spearman"]["r"] == pytest.approx(0.2584, abs=1e-4)
    assert report["given.bert"]["global"]["spearman"]["r"] == pytest.approx(0.2457, abs=1e-4)


def test_fd_correlations_with_the_default_rouge_are_the_ones_the_docs_quote():
    result = evaluate(dataset="fd", data=str(shared_file("fd/arxiv.json")), metrics=["rouge"],
                      options={"rouge": {"types": "rouge1,rougeL"}})
    from ctrlkit.analyses.meta_evaluation import meta_evaluate

    report = meta_evaluate(result.samples, "given.human", ["scores.rouge.rougeL", "scores.rouge.rouge1"],
                           levels=["global"], resamples=0)["correlations"]
    assert report["scores.rouge.rougeL"]["global"]["spearman"]["r"] == pytest.approx(0.287, abs=5e-4)
    assert report["scores.rouge.rouge1"]["global"]["spearman"]["r"] == pytest.approx(0.325, abs=5e-4)


def test_length_controller_gives_word_targets():
    length = ctrlkit.get_controller("length", levels="short=20")
    length.use_dataset(ctrlkit.get_dataset("sample"))
    source = ModelInput(source="x")
    assert length.apply(Example("a", "x", controls={"length": "short"}), source).features == {"target_words": 20}
    assert length.apply(Example("b", "x", controls={"length": 75}), source).features == {"target_words": 75}
    binned = ctrlkit.get_controller("length", unit="bin")
    binned.use_dataset(ctrlkit.get_dataset("sample"))
    assert binned.apply(Example("c", "x", controls={"length": 2}), source).features == {"target_words": 125}
    with pytest.raises(ctrlkit.CtrlkitError, match="requests length 'tiny', which is not a number or a known level"):
        length.apply(Example("d", "x", controls={"length": "tiny"}), source)


@pytest.mark.slow  # a whole MACSum run and its baseline; test_length_controller_gives_word_targets checks the targets
def test_macsum_with_the_length_controller_reaches_the_requested_bins():
    path = str(shared_file("macsum/macdoc_val.json"))
    steered = ctrlkit.run(dataset="macsum", data=path, controller="length", metrics=["length"])
    plain = steered.results["baseline"]["metrics"]["length"]
    assert steered.metrics["length"]["mad"] < plain["mad"] and steered.metrics["length"]["pcc"] > plain["pcc"]
    assert steered.metrics["length"]["word_mad"] < plain["word_mad"]



def test_macsum_train_fraction_holds_out_whole_sources_of_the_authors_file(tmp_path):
    """One file has no train split; train_fraction holds out a share of its sources, chosen by a
    hash of each source's text, so the held-out sources do not change when the file is reordered."""
    path = shared_file("macsum/macdoc_val.json")
    whole = ctrlkit.get_dataset("macsum", path=str(path)).load(None)
    split = ctrlkit.get_dataset("macsum", path=str(path), train_fraction=0.2)
    assert split.data_splits() == ("train", "val")
    train, rest = split.load("train"), split.load("val")
    train_sources = {e.meta["source_index"] for e in train}
    assert not train_sources & {e.meta["source_index"] for e in rest}
    assert sorted(e.id for e in train + rest) == sorted(e.id for e in whole)
    assert 0.1 < len(train_sources) / 94 < 0.3  # a hash split: near the share asked, not exact
    assert "train_fraction 0.2" in split.describe_split("train")

    reordered = tmp_path / "macdoc_val.json"
    reordered.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8"))[::-1]), encoding="utf-8")
    again = ctrlkit.get_dataset("macsum", path=str(reordered), train_fraction=0.2).load("train")
    assert sorted(e.references[0] for e in again) == sorted(e.references[0] for e in train)

    with pytest.raises(DatasetError, match="holds no train split.*macsum.train_fraction"):
        ctrlkit.get_dataset("macsum", path=str(path)).load("train")
