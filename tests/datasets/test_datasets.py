import csv
import hashlib
import json
from collections import Counter

import pytest

import ctrlkit
from ctrlkit import DatasetError

from helpers import invoke_ctrlkit, shared_file


def test_sample_has_sixty_articles_six_topics_two_examples_each():
    dataset = ctrlkit.get_dataset("sample")
    examples = dataset.load("test")
    assert len(examples) == 120 and len({e.meta["article"] for e in examples}) == 60
    topics = Counter(e.controls["topic"] for e in examples)
    assert sorted(topics) == ["business", "environment", "health", "politics", "sports", "technology"]
    assert all(e.references and e.document for e in examples)
    assert Counter(topic for topic, _ in dataset.topic_documents()) == {topic: 8 for topic in topics}
    topic_texts = {text for _, text in dataset.topic_documents()}
    assert not topic_texts & {e.document for e in examples}  # topics are defined apart from the articles


def test_newts_gives_two_examples_per_row_split_by_article():
    dataset = ctrlkit.get_dataset("newts", path=str(shared_file("newts/NEWTS_test_600.csv")))
    train, test = dataset.load("train"), dataset.load("test")
    assert len(train) + len(test) == 1200
    assert len({e.meta["doc_id"] for e in train + test}) == 574
    assert not {e.meta["doc_id"] for e in train} & {e.meta["doc_id"] for e in test}
    assert len({e.id for e in train + test}) == 1200
    example = test[0]
    assert set(example.controls) == set(dataset.controls)
    assert example.controls["topic"] == example.controls["topic_words"] and not example.controls["topic"].endswith(",")
    # deterministic: the split is a hash of the article id
    for e in test[:20]:
        digest = hashlib.sha1(e.meta["doc_id"].encode()).digest()
        assert int.from_bytes(digest[:8], "big") / 2**64 < 0.5


def test_newts_topic_documents_come_from_train_summaries_and_descriptions():
    path = str(shared_file("newts/NEWTS_test_600.csv"))
    dataset = ctrlkit.get_dataset("newts", path=path)
    documents = dataset.topic_documents()
    assert len({topic for topic, _ in documents}) == 50
    summaries_only = ctrlkit.get_dataset("newts", path=path, topic_documents="summaries").topic_documents()
    assert sorted(summaries_only) == sorted((e.controls["topic"], e.references[0]) for e in dataset.load("train"))
    assert len(documents) - len(summaries_only) == 50  # one description per topic
    ids = ctrlkit.get_dataset("newts", path=path, topic_label="id").load("test")
    assert ids[0].controls["topic"] == ids[0].controls["topic_id"]


def test_newts_without_a_path_or_with_a_wrong_file(tmp_path):
    with pytest.raises(DatasetError, match="needs the NEWTS CSV files: --data FOLDER or FILE"):
        ctrlkit.get_dataset("newts").load("test")
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("a,b\n1,2\n")
    with pytest.raises(DatasetError, match=r"wrong.csv: column 'docId' is missing"):
        ctrlkit.get_dataset("newts", path=str(wrong)).load("test")


def _newts_train_file(path, rows):
    """A small file in the layout of NEWTS_train_2400.csv (not here): the first rows of the real
    test file under new article and assignment ids."""
    with open(shared_file("newts/NEWTS_test_600.csv"), newline="", encoding="utf-8") as file:
        reader = csv.DictReader(file)
        taken = [row for _, row in zip(range(rows), reader)]
        columns = reader.fieldnames
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        for i, row in enumerate(taken):
            writer.writerow({**row, "docId": f"train-doc-{i}", "AssignmentId": f"train-{i}"})


def test_newts_folder_gives_the_official_splits(tmp_path):
    test_file = shared_file("newts/NEWTS_test_600.csv")
    folder = tmp_path / "newts"
    folder.mkdir()
    (folder / "NEWTS_test_600.csv").symlink_to(test_file)
    _newts_train_file(folder / "NEWTS_train_2400.csv", 6)
    dataset = ctrlkit.get_dataset("newts", path=str(folder))
    test, train = dataset.load("test"), dataset.load("train")
    with open(test_file, newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert len(test) == 2 * len(rows) == 1200 and len(train) == 12
    assert [e.id for e in test[:2]] == [f"{rows[0]['AssignmentId']}-1", f"{rows[0]['AssignmentId']}-2"]
    assert {e.meta["doc_id"] for e in train} == {f"train-doc-{i}" for i in range(6)}
    assert dataset.describe_split("test") == "the official test file, NEWTS_test_600.csv"
    summaries = ctrlkit.get_dataset("newts", path=str(folder), topic_documents="summaries").topic_documents()
    assert sorted(summaries) == sorted((e.controls["topic"], e.references[0]) for e in train)
    single = ctrlkit.get_dataset("newts", path=str(test_file))
    assert "split by a hash of docId" in single.describe_split("test")


def test_newts_folder_errors(tmp_path):
    folder = tmp_path / "newts"
    folder.mkdir()
    with pytest.raises(DatasetError, match="no NEWTS_train_.*csv or NEWTS_test_.*csv file in this folder"):
        ctrlkit.get_dataset("newts", path=str(folder)).load("test")
    _newts_train_file(folder / "NEWTS_train_2400.csv", 2)
    only_train = ctrlkit.get_dataset("newts", path=str(folder))
    assert len(only_train.load("train")) == 4
    with pytest.raises(DatasetError, match="no NEWTS_test_\\*.csv file for split 'test'"):
        only_train.load("test")
    _newts_train_file(folder / "newts_train_copy.csv", 2)
    with pytest.raises(DatasetError, match="NEWTS_train_2400.csv and newts_train_copy.csv could both be the train"):
        ctrlkit.get_dataset("newts", path=str(folder)).load("train")


def test_a_run_says_which_split_it_used(tmp_path):
    test_file = shared_file("newts/NEWTS_test_600.csv")
    done = invoke_ctrlkit("run", "-d", "newts", "--data", str(test_file), "-m", "rouge", "--limit", "3",
                          "--no-baseline", "--no-cache", "-o", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    assert ("3 examples of split 'test' (the test part of one file split by a hash of docId (test_fraction 0.5); "
            "the official splits are two files: give their folder)") in done.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["config"]["split_origin"].startswith("the test part of one file")


def test_jsonl_reads_references_as_list_or_string_and_maps_fields(tmp_path):
    path = tmp_path / "data.jsonl"
    rows = [
        {"id": "a", "document": "Doc one.", "references": ["R1", "R2"], "controls": {"topic": "t"}},
        {"document": "Doc two.", "references": "Only one", "topic": "u"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    examples = ctrlkit.get_dataset("jsonl", path=str(path)).load(None)
    assert [e.id for e in examples] == ["a", "2"]
    assert examples[0].references == ["R1", "R2"] and examples[1].references == ["Only one"]
    assert examples[0].controls == {"topic": "t"}
    with pytest.raises(DatasetError, match=r"data.jsonl:1: field 'topic' is missing"):
        ctrlkit.get_dataset("jsonl", path=str(path), control_fields="topic").load(None)


@pytest.mark.parametrize("line, message", [
    ('{"document": "x"', r"bad.jsonl:2: invalid JSON"),
    ('["a list"]', r"bad.jsonl:2: expected a JSON object, got list"),
    ('{"id": "b"}', r"bad.jsonl:2: field 'document' is missing"),
    ('{"id": "b", "document": "   "}', r"bad.jsonl:2: field 'document' is empty"),
    ('{"id": "b", "document": 7}', r"bad.jsonl:2: field 'document' must be a string, got int"),
    ('{"id": "b", "document": "x", "references": [1]}', r"bad.jsonl:2: field 'references' must be a string or a list"),
    ('{"id": "b", "document": "x", "controls": "topic"}', r"bad.jsonl:2: field 'controls' must be an object"),
    ('{"id": "a", "document": "again"}', r"bad.jsonl: duplicate id 'a'"),
])
def test_jsonl_errors_name_file_line_and_field(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a", "document": "fine"}\n' + line + "\n")
    with pytest.raises(DatasetError, match=message):
        ctrlkit.get_dataset("jsonl", path=str(path)).load(None)


def test_jsonl_rejects_bytes_that_are_not_utf8(tmp_path):
    path = tmp_path / "latin.jsonl"
    path.write_bytes(b'{"document": "ok"}\n{"document": "caf\xe9"}\n')
    with pytest.raises(DatasetError, match=r"latin.jsonl:2: not valid UTF-8"):
        ctrlkit.get_dataset("jsonl", path=str(path)).load(None)


def test_csv_columns_become_references_and_controls(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text('id,document,ref_a,ref_b,topic\n1,"A doc, with comma.",First,,sports\n2,Another.,X,Y,health\n')
    dataset = ctrlkit.get_dataset("csv", path=str(path), references_field="ref_a,ref_b", control_fields="topic")
    first, second = dataset.load(None)
    assert first.document == "A doc, with comma." and first.references == ["First"]
    assert second.references == ["X", "Y"] and second.controls == {"topic": "health"}
    with pytest.raises(DatasetError, match=r"data.csv:2: column 'reference' is missing"):
        ctrlkit.get_dataset("csv", path=str(path)).load(None)


def test_file_datasets_have_no_splits_and_need_a_path(tmp_path):
    with pytest.raises(DatasetError, match="needs a file: --data PATH"):
        ctrlkit.get_dataset("jsonl").load(None)
    with pytest.raises(DatasetError, match="has no splits"):
        ctrlkit.get_dataset("jsonl", path="x.jsonl").load("train")
    with pytest.raises(DatasetError, match="missing.jsonl: no such file"):
        ctrlkit.get_dataset("jsonl", path=str(tmp_path / "missing.jsonl")).load(None)


def test_csv_with_a_byte_order_mark_reads_its_first_column(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes("id,document,reference\nart-7,Some text here.,Text.\nart-9,More text.,More.\n"
                     .encode("utf-8-sig"))
    examples = ctrlkit.get_dataset("csv", path=str(path)).load(None)
    assert [e.id for e in examples] == ["art-7", "art-9"]
    assert examples[0].references == ["Text."]


def test_csv_cells_of_any_size(tmp_path):
    path = tmp_path / "long.csv"
    long = "word " * 300_000  # 1.5 MB, past the csv module's default 131,072-character limit
    path.write_text(f"id,document,reference\na,\"{long}\",Short.\n", encoding="utf-8")
    examples = ctrlkit.get_dataset("csv", path=str(path)).load(None)
    assert examples[0].document == long


@pytest.mark.parametrize("name, text, options, message", [
    ("data.csv", "id,text,summary\n1,A doc.,A ref.\n", {"references_field": "summary"},
     "data.csv:2: column 'document' is missing (columns: id, text, summary); "
     "--set csv.document_field=COLUMN reads another"),
    ("data.csv", "id,document,summary\n1,A doc.,A ref.\n", {},
     "data.csv:2: column 'reference' is missing (columns: id, document, summary); "
     "--set csv.references_field=COLUMN reads another"),
    ("data.csv", "id,document,reference\n1,A doc.,A ref.\n", {"control_fields": "topic"},
     "data.csv:2: column 'topic' is missing (columns: id, document, reference); "
     "--set csv.control_fields=COLUMN reads another"),
    ("data.jsonl", '{"id": "a", "text": "A doc."}\n', {},
     "data.jsonl:1: field 'document' is missing (fields: id, text); --set jsonl.document_field=FIELD reads another"),
    ("data.jsonl", '{"id": "a", "document": "A doc."}\n', {"control_fields": "topic"},
     "data.jsonl:1: field 'topic' is missing (fields: id, document); --set jsonl.control_fields=FIELD reads another"),
])
def test_a_missing_field_names_those_there_are_and_the_option_that_maps_it(tmp_path, name, text, options, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DatasetError) as caught:
        ctrlkit.get_dataset(name.split(".")[1], path=str(path), **options).load(None)
    assert str(caught.value) == f"{tmp_path}/{message}"


def test_a_missing_field_message_shows_at_most_20_fields(tmp_path):
    path = tmp_path / "wide.jsonl"
    path.write_text(json.dumps({f"f{i}": i for i in range(25)}) + "\n")
    with pytest.raises(DatasetError, match=r"\(fields: f0, f1, .*, f19 and 5 more\); --set jsonl.document_field"):
        ctrlkit.get_dataset("jsonl", path=str(path)).load(None)


def test_a_missing_field_message_stays_one_line_whatever_the_header_holds(tmp_path):
    # an unclosed quote makes the whole rest of the file one header name, line breaks included
    path = tmp_path / "broken.csv"
    path.write_text('"id,document,reference\r\n1,The match ended.,A match.\r\n,,"\t\n "\r\n')
    with pytest.raises(DatasetError) as caught:
        ctrlkit.get_dataset("csv", path=str(path)).load(None)
    message = str(caught.value)
    assert "\n" not in message and "\r" not in message
    assert message.startswith(f"{path}:") and "column 'document' is missing (columns: 'id,document,reference\\r\\n" in message
    assert message.endswith("...); --set csv.document_field=COLUMN reads another")
