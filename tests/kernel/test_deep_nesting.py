"""JSON, TOML and YAML nested deeper than any ctrlkit data (issue 36, item 4): a parser accepts
nesting 500 to 960 deep, and code walking the value then overflowed Python's stack. Every reader
refuses it in one line naming the file; a cached value so deep is a damaged entry, computed again."""

import json
import logging

import pytest

from ctrlkit import ConfigurationError, CtrlkitError, DatasetError
from ctrlkit.cache import Cache, cache_key
from ctrlkit.files import read_json, read_jsonl
from ctrlkit.intake import MAX_DEPTH, Intake, check_nesting, nesting
from ctrlkit.sweeps.config import load_config
from helpers import invoke_ctrlkit

DEPTHS = [MAX_DEPTH + 1, 500, 960]
DOC = "Rain fell on the town. The river rose."


def nested(depth, kind="list"):
    text = "[" * depth + "]" * depth if kind == "list" else '{"a":' * depth + "1" + "}" * depth
    return text


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("kind", ["list", "object"])
def test_a_deep_line_of_a_jsonl_file_is_one_line_naming_the_file_and_line(tmp_path, depth, kind):
    path = tmp_path / "data.jsonl"
    path.write_text(json.dumps({"id": "a", "document": DOC}) + "\n" +
                    '{"id": "b", "document": "x", "meta": ' + nested(depth, kind) + "}\n")
    with pytest.raises(DatasetError, match=rf"^{path}:2: nested over {MAX_DEPTH} levels deep"):
        list(read_jsonl(path))


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_deep_json_file_is_one_line_naming_the_file(tmp_path, depth):
    path = tmp_path / "deep.json"  # not results.json, which the session fixture checks
    path.write_text('{"metrics": ' + nested(depth) + "}")
    with pytest.raises(CtrlkitError, match=rf"^{path}: nested over {MAX_DEPTH} levels deep") as refused:
        read_json(path, dict)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("depth", [500, 960])
def test_a_run_on_a_deep_data_file_and_an_evaluation_of_deep_predictions_are_one_line(tmp_path, depth):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "a", "document": DOC, "references": ["Rain fell."],
                                "meta": json.loads(nested(depth // 2))}) + "\n")
    ran = invoke_ctrlkit("run", "--dataset", "jsonl", "--data", str(data), "--controller", "none",
                                     "--backbone", "extractive", "--metric", "rouge", "--no-cache", "--bootstrap", "0",
                                     "--out", str(tmp_path / "out"))
    assert ran.returncode == 1 and f"{data}:1: nested over {MAX_DEPTH} levels deep" in ran.stderr, ran.stderr
    data.write_text(json.dumps({"id": "a", "document": DOC, "references": ["Rain fell."]}) + "\n")
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text('{"id": "a", "prediction": "Rain fell.", "extra": ' + nested(depth) + "}\n")
    evaluated = invoke_ctrlkit("evaluate", "-p", str(predictions), "--dataset", "jsonl", "--data", str(data),
                                     "--metric", "rouge", "--bootstrap", "0", "--out", str(tmp_path / "evaluated"))
    assert evaluated.returncode == 1, evaluated.stderr
    assert f"{predictions}:1: nested over {MAX_DEPTH} levels deep" in evaluated.stderr


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 500, 960])
def test_a_deep_sweep_configuration_is_one_line_naming_the_file(tmp_path, depth):
    toml = tmp_path / "sweep.toml"
    toml.write_text("dataset = 'sample'\nmetrics = " + nested(depth) + "\n")
    with pytest.raises(ConfigurationError) as refused:
        load_config(toml)
    assert str(refused.value).startswith(f"{toml}") and "\n" not in str(refused.value)
    assert "nested" in str(refused.value) or "cannot read" in str(refused.value)
    yaml = tmp_path / "sweep.yaml"
    yaml.write_text("dataset: sample\nmetrics: " + nested(depth) + "\n")
    with pytest.raises(ConfigurationError) as refused:
        load_config(yaml)
    assert str(refused.value).startswith(f"{yaml}") and "\n" not in str(refused.value)


def test_a_deep_cached_value_is_a_damaged_entry_computed_again(private_cache, caplog):
    cache = Cache("judge")
    cache.put_stored({cache_key(["k"]): nested(960)})
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        assert cache.get(["k"]) is None
    cache.put(["k"], {"answer": "fine"})
    assert cache.get(["k"]) == {"answer": "fine"}


def test_nesting_is_counted_without_recursion_and_bounded():
    deep = []
    for _ in range(100_000):
        deep = [deep]
    assert nesting(deep) == MAX_DEPTH + 1  # stops counting past the limit
    assert nesting({"a": [1, {"b": []}]}) == 4 and nesting(5) == 0
    with pytest.raises(CtrlkitError, match=r"^here: nested over"):
        check_nesting(deep, "here")
    with pytest.raises(CtrlkitError, match=r"^output: meta is nested over"):
        Intake("output").value(deep, "meta")


@pytest.mark.parametrize("depth", [960, 5000])
def test_a_judges_answer_nested_past_the_parser_is_unparseable_not_a_crash(depth):
    from ctrlkit_metrics.judging import UnparseableAnswer, json_object

    with pytest.raises(UnparseableAnswer):
        json_object('{"a": ' + nested(depth) + "}")
    with pytest.raises(UnparseableAnswer):
        json_object("Here it is: {" + '"a":' * depth + "1" + "}" * depth)
