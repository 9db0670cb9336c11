"""CCSBench, EntSUM and Hugging Face datasets, on small fixtures written in their layouts (no
real copy of either benchmark is here; see each module's docstring for what is assumed)."""

import json
import sys

import pytest

import ctrlkit
from ctrlkit import DatasetError, OptionError

from helpers.ccs_release import write_csv

PAPER = ("We propose a sparse attention method for long documents. It reduces memory by half. "
         "Experiments on arXiv show higher ROUGE than dense baselines. The method is simple to implement. "
         "We release the code.")


def ccs_row(**changes):
    row = {"text": PAPER, "summary": "A sparse attention method halves memory and beats dense baselines.",
           "length": "1", "keywords": "['sparse attention', 'memory']", "readability": "high", "focus": "empirical"}
    return {**row, **changes}


@pytest.fixture
def ccsbench(tmp_path):
    """The release layout: one folder per subset, one CSV per split."""
    root = tmp_path / "CCSBench"
    write_csv(root / "compositional" / "test.csv", [
        ccs_row(),
        ccs_row(length="0", keywords="ROUGE, arXiv", readability="normal", focus="conceptual"),
        ccs_row(length="3", keywords="", readability="", focus="low"),
    ])
    write_csv(root / "compositional" / "train.csv", [ccs_row(length="2")])
    write_csv(root / "compositional" / "val.csv", [ccs_row(length="4"), ccs_row(length="0")])
    write_csv(root / "length" / "test.csv", [ccs_row(keywords="", readability="", focus="")])
    return root


def test_ccsbench_reads_the_four_controls_with_length_bins_as_words(ccsbench):
    dataset = ctrlkit.get_dataset("ccsbench", path=str(ccsbench))
    examples = dataset.load(dataset.default_split)
    assert [e.id for e in examples] == ["test:1", "test:2", "test:3"]
    first, second, third = examples
    assert first.controls == {"length": 75, "keywords": ["sparse attention", "memory"],
                              "readability": "high", "focus": "high"}
    assert first.meta["length_bin"] == 1 and first.meta["source"].endswith("test.csv:2")
    assert first.document == PAPER and first.references == [ccs_row()["summary"]]
    assert second.controls == {"length": 25, "keywords": ["ROUGE", "arXiv"], "readability": "normal",
                               "focus": "low"}
    assert third.controls == {"length": 175, "focus": "low"}  # empty cells are absent controls
    # length_unit=words forces the reading: a word count becomes its bin (1, 0 and 3 words: bin 0),
    # in the same representation as a bin, with the count kept in meta
    words = ctrlkit.get_dataset("ccsbench", path=str(ccsbench), length_unit="words").load("test")
    assert [e.controls["length"] for e in words] == [25, 25, 25]
    assert [e.meta["length_words"] for e in words] == [1, 0, 3] and words[0].meta["length_bin"] == 0


def test_ccsbench_splits_subsets_and_single_files(ccsbench):
    dataset = ctrlkit.get_dataset("ccsbench", path=str(ccsbench))
    assert [e.meta["length_bin"] for e in dataset.load("validation")] == [4, 0]  # val.csv
    assert [e.id for e in dataset.load("train")] == ["train:1"]
    with pytest.raises(DatasetError, match=r"has split\(s\) train, validation, test, not 'dev'"):
        dataset.load("dev")
    length = ctrlkit.get_dataset("ccsbench", path=str(ccsbench), subset="length").load("test")
    assert [e.controls for e in length] == [{"length": 75}]
    with pytest.raises(DatasetError, match=r"no subset folder 'focus' \(has compositional, length\)"):
        ctrlkit.get_dataset("ccsbench", path=str(ccsbench), subset="focus").load("test")
    with pytest.raises(DatasetError, match=r"length: no train file"):
        ctrlkit.get_dataset("ccsbench", path=str(ccsbench / "length")).load("train")
    single = ctrlkit.get_dataset("ccsbench", path=str(ccsbench / "compositional" / "val.csv"))
    assert single.default_split == "validation" and len(single.load("validation")) == 2
    with pytest.raises(DatasetError, match=r"--data is the file val.csv; --split test does not apply"):
        single.load("test")


def test_ccsbench_reads_jsonl_and_remapped_columns(tmp_path):
    path = tmp_path / "test.jsonl"
    rows = [{"paper": PAPER, "target": "Short.", "len": 2, "kw": ["sparse attention"], "readability": "High"}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    dataset = ctrlkit.get_dataset("ccsbench", path=str(path),
                                  fields="document=paper,summary=target,length=len,keywords=kw")
    [example] = dataset.load("test")
    assert example.references == ["Short."] and example.document == PAPER
    assert example.controls == {"length": 125, "keywords": ["sparse attention"], "readability": "high"}
    with pytest.raises(OptionError, match=r"'ccsbench.fields' names the unknown role 'title'"):
        ctrlkit.get_dataset("ccsbench", fields="title=x")


@pytest.mark.parametrize("changes, message", [
    ({"summary": ""}, r"test.csv:3: field 'summary' is empty"),
    ({"readability": "simple"}, r"test.csv:3: field 'readability' must be one of normal, high; got 'simple'"),
    ({"focus": "medium"}, r"test.csv:3: field 'focus' must be one of low, high"),
    ({"length": "1.5"}, r"test.csv:3: field 'length' must be a whole number of bins, got '1.5'"),
    ({"length": "-1"}, r"test.csv:3: field 'length' must be a whole number of bins"),
    ({"keywords": "['unclosed'"}, r"test.csv:3: field 'keywords' is not a readable list"),
    ({"keywords": " , "}, r"test.csv:3: field 'keywords' lists no keyword"),
    ({"length": "", "keywords": "", "readability": "", "focus": ""}, r"test.csv:3: no control field"),
])
def test_ccsbench_malformed_rows_name_file_line_and_field(tmp_path, changes, message):
    path = write_csv(tmp_path / "compositional" / "test.csv", [ccs_row(), ccs_row(**changes), ccs_row()])
    with pytest.raises(DatasetError, match=message):
        ctrlkit.get_dataset("ccsbench", path=str(tmp_path)).load("test")
    dataset = ctrlkit.get_dataset("ccsbench", path=str(path), skip_invalid=True)
    assert [e.id for e in dataset.load("test")] == ["test:1", "test:3"] and dataset.skipped == 1


def test_ccsbench_single_attribute_subset_requires_its_attribute_and_files_their_columns(tmp_path):
    write_csv(tmp_path / "length" / "test.csv", [ccs_row(length="")])
    with pytest.raises(DatasetError, match=r"test.csv:2: field 'length' is missing \(subset 'length'\)"):
        ctrlkit.get_dataset("ccsbench", path=str(tmp_path), subset="length").load("test")
    wrong = write_csv(tmp_path / "wrong.csv", [{"abstract": "x"}], columns=["abstract"])
    with pytest.raises(DatasetError, match=r"wrong.csv: column 'text' is missing \(columns: abstract\); not a "
                                           r"CCSBench file\? --set ccsbench.fields=ROLE=COLUMN,... maps them"):
        ctrlkit.get_dataset("ccsbench", path=str(wrong)).load(None)


def test_ccsbench_length_and_keyword_metrics_run_on_it(ccsbench):
    # the first two test rows request keywords (the third does not, and sr would refuse it)
    result = ctrlkit.run(dataset="ccsbench", data=str(ccsbench), metrics=["length", "sr"], baseline=None, limit=2)
    assert result.results["n_examples"] == 2 and result.results["config"]["split"] == "test"
    corpus = result.results["metrics"]
    assert {"mad", "pcc", "sr"} <= set(corpus["length"]) | set(corpus["sr"])
    for sample in result.samples:
        words = len(sample["prediction"].split())
        requested_bin = (sample["controls"]["length"] - 25) // 50
        assert sample["scores"]["length"]["abs_bin_error"] == abs(max(0, -(-words // 50) - 1) - requested_bin)


def test_ccsbench_without_data_reads_the_hub_and_says_when_it_cannot(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DatasetError, match=r"needs the 'datasets' library: pip install 'ctrlkit-datasets\[hf\]'"):
        ctrlkit.get_dataset("ccsbench").load("test")
    monkeypatch.undo()
    pytest.importorskip("datasets", reason="the Hub path needs the optional 'datasets' library")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetError, match=r"cannot reach the Hugging Face Hub for 'dyxohjl666/CCSBench'.*--data PATH"):
        ctrlkit.get_dataset("ccsbench").load("test")


# EntSUM: annotation lines (fields doc_id, entity, summary as assumed) and user-supplied texts.

NYT = {
    "1001": "Apple said on Monday that Tim Cook will visit Beijing. Shares of Apple rose. "
            "Microsoft declined to comment. Cook met officials last year.",
    "1002": "The Yankees beat the Red Sox. Aaron Judge hit two home runs. The Red Sox manager was ejected.",
}


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def entsum(tmp_path):
    annotations = write_jsonl(tmp_path / "nyt_annotated_all_annotation.jsonl", [
        {"doc_id": 1001, "entity": "Tim Cook", "summary": "Tim Cook will visit Beijing.", "sent_ids": [0]},
        {"doc_id": 1001, "entity": "Microsoft", "summary": ["Microsoft declined to comment."]},
        {"doc_id": 1001, "entity": "Tim Cook", "summary": ["Tim Cook will visit Beijing, Apple said.",
                                                             "Tim Cook will visit Beijing."]},
        {"doc_id": 1002, "entity": "Aaron Judge", "summary": [["Aaron Judge hit two home runs.", "The Yankees won."]]},
    ])
    texts = write_jsonl(tmp_path / "texts.jsonl", [{"doc_id": k, "text": v} for k, v in NYT.items()])
    return annotations, texts


def test_entsum_one_example_per_document_and_entity_with_every_annotators_summary(entsum, tmp_path):
    annotations, texts = entsum
    examples = ctrlkit.get_dataset("entsum", path=str(tmp_path), texts=str(texts)).load(None)
    assert [e.id for e in examples] == ["1001:Tim Cook", "1001:Microsoft", "1002:Aaron Judge"]
    cook = examples[0]
    assert cook.controls == {"entity": "Tim Cook"} and cook.document == NYT["1001"]
    assert cook.references == ["Tim Cook will visit Beijing.", "Tim Cook will visit Beijing, Apple said."]
    assert examples[2].references == ["Aaron Judge hit two home runs. The Yankees won."]
    assert cook.meta == {"doc_id": "1001", "source": f"{annotations}:1"}


def test_entsum_texts_from_a_folder_and_missing_texts(entsum, tmp_path):
    annotations, _ = entsum
    folder = tmp_path / "nyt"
    folder.mkdir()
    (folder / "1001.txt").write_text(NYT["1001"])
    with pytest.raises(DatasetError, match=r"all_annotation.jsonl:4: no text for document '1002' in .*nyt"):
        ctrlkit.get_dataset("entsum", path=str(annotations), texts=str(folder)).load(None)
    dataset = ctrlkit.get_dataset("entsum", path=str(annotations), texts=str(folder), skip_invalid=True)
    assert [e.id for e in dataset.load(None)] == ["1001:Tim Cook", "1001:Microsoft"] and dataset.skipped == 1
    with pytest.raises(DatasetError, match=r"needs the article texts, which EntSUM does not release"):
        ctrlkit.get_dataset("entsum", path=str(annotations)).load(None)


@pytest.mark.parametrize("line, message", [
    ({"doc_id": 1002, "summary": "x"}, r"annotation.jsonl:2: field 'entity' is missing"),
    ({"doc_id": 1002, "entity": "Aaron Judge", "summary": 3}, r":2: field 'summary' must be a string or a list"),
    ({"doc_id": 1002, "entity": "Aaron Judge", "summary": ["", " "]}, r":2: field 'summary' is empty"),
    ({"entity": "Aaron Judge", "summary": "x"}, r"annotation.jsonl:2: field 'doc_id' is missing"),
])
def test_entsum_malformed_lines_name_file_line_and_field(entsum, tmp_path, line, message):
    _, texts = entsum
    path = write_jsonl(tmp_path / "nyt_annotated_one_annotation.jsonl", [
        {"doc_id": 1001, "entity": "Apple", "summary": "Apple shares rose."}, line])
    with pytest.raises(DatasetError, match=message):
        ctrlkit.get_dataset("entsum", path=str(tmp_path), annotations="one", texts=str(texts)).load(None)
    dataset = ctrlkit.get_dataset("entsum", path=str(path), texts=str(texts), skip_invalid=True)
    assert [e.id for e in dataset.load(None)] == ["1001:Apple"] and dataset.skipped == 1


def test_entsum_names_the_fields_a_file_has_when_the_mapping_is_wrong(entsum, tmp_path):
    _, texts = entsum
    path = write_jsonl(tmp_path / "other.jsonl", [{"doc_id": 1001, "entity_name": "Apple", "summary": "x"}])
    with pytest.raises(DatasetError, match=r"other.jsonl:1: field 'entity' is missing \(fields: doc_id, "
                                           r"entity_name, summary\); --set entsum.entity_field=FIELD reads another$"):
        ctrlkit.get_dataset("entsum", path=str(path), texts=str(texts)).load(None)
    [example] = ctrlkit.get_dataset("entsum", path=str(path), texts=str(texts), entity_field="entity_name").load(None)
    assert example.controls == {"entity": "Apple"}


def test_entsum_runs_with_the_entity_metric(entsum):
    annotations, texts = entsum
    result = ctrlkit.run(dataset="entsum", data=str(annotations), metrics=["entity"], baseline=None,
                         options={"entsum": {"texts": str(texts)}})
    assert result.results["n_examples"] == 3 and 0.0 <= result.results["metrics"]["entity"]["entity"] <= 1.0


def test_entsum_keeps_salient_and_summary_sentences_as_controls(entsum, tmp_path):
    _, texts = entsum
    from ctrlkit.testing import check_dataset
    from ctrlkit.text import sentences

    split = sentences(NYT["1001"])
    path = write_jsonl(tmp_path / "oracle.jsonl", [
        {"doc_id": 1001, "entity": "Tim Cook", "summary": "x", "salient_sentences": [split[0], split[3]],
         "summary_sentences": [[split[0]], [split[3], split[0]]]},   # per annotator
        {"doc_id": 1001, "entity": "Tim Cook", "summary": "y", "salient_sentences": [[2, 0]],  # indices
         "summary_sentences": None},
        {"doc_id": 1001, "entity": "Microsoft", "summary": "z", "salient_sentences": []},
        {"doc_id": 1002, "entity": "Aaron Judge", "summary": "w", "summary_sentences": [1]},
    ])
    cook, microsoft, judge = ctrlkit.get_dataset("entsum", path=str(path), texts=str(texts)).load(None)
    assert cook.controls == {"entity": "Tim Cook", "salient_sentences": [split[0], split[3], split[2]],
                             "summary_sentences": [split[0], split[3]]}
    assert microsoft.controls == {"entity": "Microsoft"}  # an empty or absent field: no control
    assert judge.controls == {"entity": "Aaron Judge", "summary_sentences": ["Aaron Judge hit two home runs."]}
    assert ctrlkit.get_dataset("entsum").optional_controls == ("salient_sentences", "summary_sentences")
    check_dataset(ctrlkit.get_dataset("entsum", path=str(path), texts=str(texts)))


def test_entsum_sentence_fields_are_mappable(entsum, tmp_path):
    _, texts = entsum
    path = write_jsonl(tmp_path / "mapped.jsonl", [
        {"doc_id": 1002, "entity": "Aaron Judge", "summary": "x", "salient": ["Aaron Judge hit two home runs."],
         "oracle": [0]}])
    [example] = ctrlkit.get_dataset("entsum", path=str(path), texts=str(texts), salient_field="salient",
                                    summary_sentences_field="oracle").load(None)
    assert example.controls == {"entity": "Aaron Judge", "salient_sentences": ["Aaron Judge hit two home runs."],
                                "summary_sentences": ["The Yankees beat the Red Sox."]}


@pytest.mark.parametrize("field, message", [
    ({"salient_sentences": [0, 3]}, r"oracle.jsonl:2: field 'salient_sentences': sentence index 3 is out of range: "
                                    r"document '1002' has 3 sentences"),
    ({"summary_sentences": [-1]}, r"oracle.jsonl:2: field 'summary_sentences': sentence index -1 is out of range"),
    ({"salient_sentences": "x"}, None),
    ({"salient_sentences": {"a": 1}}, r":2: field 'salient_sentences' must be a list of sentences or sentence "
                                      r"indices, got dict"),
    ({"salient_sentences": [1.5]}, r":2: field 'salient_sentences' must hold sentences \(strings\), sentence "
                                   r"indices \(integers\) or per-annotator lists of them, not float"),
    ({"salient_sentences": [[[0]]]}, r"not list"),
])
def test_entsum_bad_sentence_fields_name_file_and_line(entsum, tmp_path, field, message):
    _, texts = entsum
    path = write_jsonl(tmp_path / "oracle.jsonl", [
        {"doc_id": 1001, "entity": "Apple", "summary": "Apple shares rose."},
        {"doc_id": 1002, "entity": "Aaron Judge", "summary": "x", **field}])
    if message is None:  # one string: one sentence
        assert ctrlkit.get_dataset("entsum", path=str(path), texts=str(texts)).load(None)[1].controls[
            "salient_sentences"] == ["x"]
        return
    with pytest.raises(DatasetError, match=message) as raised:
        ctrlkit.get_dataset("entsum", path=str(path), texts=str(texts)).load(None)
    assert "\n" not in str(raised.value)
    dataset = ctrlkit.get_dataset("entsum", path=str(path), texts=str(texts), skip_invalid=True)
    assert [e.id for e in dataset.load(None)] == ["1001:Apple"] and dataset.skipped == 1


# hf: any Hugging Face dataset, here one saved with save_to_disk.

@pytest.fixture
def saved(tmp_path):
    datasets = pytest.importorskip("datasets", reason="the hf dataset needs the optional 'datasets' library")
    columns = {
        "uid": ["a", "b", "c"],
        "article": [PAPER, NYT["1001"], ""],
        "highlights": [["Sparse attention halves memory.", "It beats dense baselines."], ["Tim Cook visits."],
                       ["Nothing."]],
        "category": ["science", "business", "none"],
        "keywords": [["memory"], ["Beijing"], []],
    }
    folder = tmp_path / "saved"
    datasets.DatasetDict({
        "test": datasets.Dataset.from_dict(columns),
        "train": datasets.Dataset.from_dict({k: v[:1] for k, v in columns.items()}),
    }).save_to_disk(str(folder))
    return folder


def hf(folder, **options):
    mapping = {"document_field": "article", "references_field": "highlights", "id_field": "uid",
               "control_fields": "topic=category,keywords"}
    return ctrlkit.get_dataset("hf", path=str(folder), **{**mapping, **options})


def test_hf_maps_columns_to_documents_references_and_controls(saved):
    dataset = hf(saved, skip_invalid=True)
    a, b = dataset.load("test")
    assert dataset.skipped == 1  # the empty article
    assert (a.id, a.document, a.references) == ("a", PAPER, ["Sparse attention halves memory.",
                                                             "It beats dense baselines."])
    assert a.controls == {"topic": "science", "keywords": ["memory"]} and b.references == ["Tim Cook visits."]
    assert [e.id for e in hf(saved).load("train")] == ["a"]
    with pytest.raises(DatasetError, match=r"saved\[test\] row 3: field 'article' is empty"):
        hf(saved).load("test")
    with pytest.raises(DatasetError, match=r"no split 'validation' \(has test, train\)"):
        hf(saved).load("validation")


def test_hf_refuses_columns_the_dataset_lacks_naming_those_it_has(saved):
    with pytest.raises(DatasetError, match=r"saved\[test\]: no column 'document' \(columns: article, category, "
                                           r"highlights, keywords, uid\); --set hf.document_field=COLUMN reads "
                                           r"another$"):
        hf(saved, document_field="document").load("test")
    with pytest.raises(DatasetError, match=r"no column 'label' .*; --set hf.control_fields=TARGET=COLUMN reads"):
        hf(saved, control_fields="topic=label").load("test")
    with pytest.raises(OptionError, match=r"'hf.control_fields' expects NAME or TARGET=SOURCE items, got 'topic='"):
        hf(saved, control_fields="topic=")


def test_hf_refuses_an_id_column_the_dataset_lacks_and_reads_a_limit_lazily(saved):
    """A mapped id column no row holds is named like the others (it used to give row numbers
    without a word); a default ``id`` column may be absent."""
    with pytest.raises(DatasetError, match=r"no column 'doc_id' .*; --set hf.id_field=COLUMN reads another$"):
        hf(saved, id_field="doc_id").load("test")
    dataset = ctrlkit.get_dataset("hf", path=str(saved), document_field="article", references_field="highlights")
    assert [e.id for e in dataset.load("train")] == ["1"]
    kept = list(hf(saved, skip_invalid=True).iter_examples("test", keep=lambda index: index == 1))
    assert [e.id for e in kept] == ["b"]


def test_hf_reads_data_files_through_load_dataset_with_split_slices(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets", reason="the hf dataset needs the optional 'datasets' library")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))  # not the user's cache
    folder = tmp_path / "files"
    folder.mkdir()
    write_jsonl(folder / "test.jsonl", [{"document": f"Sentence {i}. Another one.", "summary": f"S{i}."}
                                        for i in range(4)])
    examples = ctrlkit.get_dataset("hf", path=str(folder)).load("test[:2]")
    assert [(e.id, e.references) for e in examples] == [("1", ["S0."]), ("2", ["S1."])]


def test_hf_says_how_to_install_datasets_and_when_the_hub_is_unreachable(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DatasetError, match=r"pip install 'ctrlkit-datasets\[hf\]'"):
        ctrlkit.get_dataset("hf", hub_name="someone/some-dataset").load("test")
    with pytest.raises(DatasetError, match=r"needs a dataset: --data PATH or --set hf.hub_name=NAME"):
        ctrlkit.get_dataset("hf").load("test")
    monkeypatch.undo()
    pytest.importorskip("datasets", reason="the Hub path needs the optional 'datasets' library")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(DatasetError, match=r"cannot reach the Hugging Face Hub for 'someone/some-dataset'"):
        ctrlkit.get_dataset("hf", hub_name="someone/some-dataset").load("test")
