"""A field mapped by an option that no line of the file holds is an error naming the field, the
option and the file; a field only some lines lack keeps working (partial controls, no references
for those lines). csv, jsonl and hf spell their field options alike."""

import json
import logging

import pytest

import ctrlkit
from ctrlkit import DatasetError

from helpers import shared_file


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


ROWS = [{"id": "a", "document": "One text.", "references": ["One."], "controls": {"topic": "x"}, "summary": "S1",
         "cat": "sports"},
        {"id": "b", "document": "Two text.", "references": "Two.", "controls": {}, "cat": "politics"}]


@pytest.mark.parametrize("option, value", [
    ("references_field", "summry"),   # the issue's attack: a field no line has
    ("controls_field", "control"),
    ("id_field", "identifier"),
    ("control_fields", "topic=category"),
])
def test_jsonl_a_mapped_field_no_line_holds_is_an_error(tmp_path, option, value):
    path = _jsonl(tmp_path / "data.jsonl", ROWS)
    dataset = ctrlkit.get_dataset("jsonl", path=path, **{option: value})
    with pytest.raises(DatasetError) as error:
        dataset.load(None)
    message = str(error.value)
    field = value.split("=")[-1]
    assert f"'{field}'" in message and path in message and f"jsonl.{option}" in message and "\n" not in message


def test_jsonl_a_field_some_lines_lack_keeps_todays_behaviour(tmp_path):
    path = _jsonl(tmp_path / "data.jsonl", ROWS)
    examples = ctrlkit.get_dataset("jsonl", path=path, references_field="summary").load(None)
    assert [e.references for e in examples] == [["S1"], []]
    examples = ctrlkit.get_dataset("jsonl", path=path).load(None)
    assert [e.controls for e in examples] == [{"topic": "x"}, {}]


def test_jsonl_default_field_names_may_be_absent(tmp_path):
    """A file of documents only (no ids, references or controls) reads as before: the defaults
    are conventions, not requests."""
    path = _jsonl(tmp_path / "data.jsonl", [{"document": "One."}, {"document": "Two."}])
    examples = ctrlkit.get_dataset("jsonl", path=path).load(None)
    assert [(e.id, e.references, e.controls) for e in examples] == [("1", [], {}), ("2", [], {})]


@pytest.mark.parametrize("option, value", [
    ("references_field", "summary3"),
    ("id_field", "doc_id"),
    ("reference_fields", "summary3"),  # the old spelling, an alias
])
def test_csv_a_mapped_column_no_row_holds_is_an_error(tmp_path, option, value):
    path = tmp_path / "data.csv"
    path.write_text("id,document,summary1\n1,One text.,One.\n2,Two text.,Two.\n")
    dataset = ctrlkit.get_dataset("csv", path=str(path), **({"references_field": "summary1"} if option == "id_field" else {}), **{option: value})
    with pytest.raises(DatasetError, match=f"'{value}'.*csv.references_field|'{value}'.*csv.{option}"):
        dataset.load(None)


def test_csv_and_jsonl_spell_their_field_options_alike():
    names = {name: {option.name for option in type(ctrlkit.get_dataset(name)).options} for name in ("jsonl", "csv", "hf")}
    mapped = {"id_field", "document_field", "references_field", "control_fields"}
    for name, options in names.items():
        assert mapped <= options, (name, mapped - options)
    old = [option for option in type(ctrlkit.get_dataset("csv")).options if option.name == "reference_fields"]
    assert all(option.help.startswith("deprecated") for option in old)


def test_csv_reference_fields_still_works_with_one_deprecation_line(tmp_path, caplog):
    path = tmp_path / "data.csv"
    path.write_text("id,document,s1,s2\n1,One text.,One.,Uno.\n")
    with caplog.at_level(logging.WARNING):
        examples = ctrlkit.get_dataset("csv", path=str(path), reference_fields="s1,s2").load(None)
    assert examples[0].references == ["One.", "Uno."]
    lines = [r.getMessage() for r in caplog.records if "reference_fields" in r.getMessage()]
    assert len(lines) == 1 and "references_field" in lines[0] and "\n" not in lines[0]
    same = ctrlkit.get_dataset("csv", path=str(path), references_field="s1,s2").load(None)
    assert same[0].references == examples[0].references


def test_csv_and_jsonl_control_fields_take_target_equals_source_like_hf(tmp_path):
    path = _jsonl(tmp_path / "data.jsonl", ROWS)
    examples = ctrlkit.get_dataset("jsonl", path=path, control_fields="topic=cat").load(None)
    assert [e.controls["topic"] for e in examples] == ["sports", "politics"]
    csv_path = tmp_path / "data.csv"
    csv_path.write_text("document,reference,cat\nOne.,Uno.,sports\n")
    examples = ctrlkit.get_dataset("csv", path=str(csv_path), control_fields="topic=cat").load(None)
    assert examples[0].controls == {"topic": "sports"}


def test_real_newts_csv_mapped_by_options_and_a_misspelt_column(tmp_path):
    path = str(shared_file("newts/NEWTS_test_600.csv"))
    examples = ctrlkit.get_dataset("csv", path=path, document_field="article", id_field="AssignmentId",
                                   references_field="summary1,summary2", control_fields="topic=words1").load(None)
    assert len(examples) == 600 and all(len(e.references) == 2 and e.controls["topic"] for e in examples)
    with pytest.raises(DatasetError, match="'summary3'.*csv.references_field"):
        ctrlkit.get_dataset("csv", path=path, document_field="article", references_field="summary1,summary3").load(None)
    with pytest.raises(DatasetError, match="'docid'.*csv.id_field"):
        ctrlkit.get_dataset("csv", path=path, document_field="article", id_field="docid",
                            references_field="summary1").load(None)


def test_real_fd_jsonl_mapped_by_options_and_a_misspelt_field():
    path = str(shared_file("fd/arxiv.json"))
    examples = ctrlkit.get_dataset("jsonl", path=path, document_field="article", references_field="human").load(None)
    assert len(examples) == 50 and all(e.references for e in examples)
    with pytest.raises(DatasetError, match="'abstract'.*jsonl.references_field"):
        ctrlkit.get_dataset("jsonl", path=path, document_field="article", references_field="abstract").load(None)


def test_a_run_with_a_field_no_line_holds_is_one_line(tmp_path):
    from helpers import invoke_ctrlkit

    path = _jsonl(tmp_path / "data.jsonl", ROWS)
    result = invoke_ctrlkit("run", "-d", "jsonl", "--data", path, "-c", "none", "-b", "extractive", "-m", "rouge",
                            "--set", "jsonl.references_field=summry")
    assert result.returncode != 0
    assert "summry" in result.stderr and "Traceback" not in result.stderr


def test_a_jsonl_file_with_a_byte_order_mark_reads_and_a_folder_is_not_a_file(tmp_path):
    import ctrlkit

    data, predictions = tmp_path / "data.jsonl", tmp_path / "p.jsonl"
    data.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a", "document": "x y z", "references": ["x y"]}).encode()
                     + b"\n")
    predictions.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": "a", "prediction": "x y"}).encode() + b"\n")
    result = ctrlkit.evaluate(predictions=str(predictions), dataset="jsonl", data=str(data), metrics=["rouge"],
                              bootstrap=0)
    assert result.metrics["rouge"]["rouge1"] == 1.0
    with pytest.raises(ctrlkit.DatasetError) as caught:
        ctrlkit.evaluate(predictions=str(tmp_path), dataset="jsonl", data=str(data), metrics=["rouge"], bootstrap=0)
    assert str(caught.value) == f"{tmp_path}: not a regular file"


def test_a_key_given_twice_in_one_line_is_one_line_not_a_silent_last_value(tmp_path):
    import ctrlkit

    data, predictions = tmp_path / "data.jsonl", tmp_path / "p.jsonl"
    data.write_text('{"id": "a", "document": "x y z", "references": ["x y"]}\n')
    # before: the second "prediction" was scored without a word
    predictions.write_text('{"id": "a", "prediction": "x y", "prediction": "ZZZ"}\n')
    with pytest.raises(ctrlkit.DatasetError) as caught:
        ctrlkit.evaluate(predictions=str(predictions), dataset="jsonl", data=str(data), metrics=["rouge"], bootstrap=0)
    assert str(caught.value) == f'{predictions}:1: key "prediction" is given twice in one object'
    fd = tmp_path / "fd.json"
    line = shared_file("fd/arxiv.json").read_text().splitlines()[0]
    fd.write_text(line[:-1] + ', "gpt35_human": 99.0}\n')  # a second human score for gpt35, at the end
    with pytest.raises(ctrlkit.DatasetError, match=r'fd.json:1: key "gpt35_human" is given twice in one object'):
        ctrlkit.get_dataset("fd", path=str(fd)).load(None)
