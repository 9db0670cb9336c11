import json
import xml.etree.ElementTree as ET

import pytest

from ctrlkit import ConfigurationError, Example
from ctrlkit.analyses.interference import change_amplitude, change_attribute, heatmap_svg, interference

from helpers import invoke_ctrlkit, shared_file

SVG = "{http://www.w3.org/2000/svg}"


def _document(example: int, words_per_sentence: int) -> str:
    """Six sentences of exactly ``words_per_sentence`` words, so the extractive backbone's
    output length under a word budget can be worked out by hand."""
    return " ".join(" ".join(f"e{example}s{k}w{j}" for j in range(words_per_sentence)) + "."
                    for k in range(6))


def _write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


@pytest.fixture
def lengths(tmp_path):
    """Example a: 15-word sentences, asks for 20 words; example b: 12-word sentences, asks for 40."""
    return _write(tmp_path / "lengths.jsonl", [
        {"id": "a", "document": _document(0, 15), "references": ["a summary"], "controls": {"length": 20}},
        {"id": "b", "document": _document(1, 12), "references": ["b summary"], "controls": {"length": 40}},
    ])


def test_change_amplitude_matches_a_hand_computed_case(lengths, tmp_path):
    # Base: a gets one 15-word sentence (|15 - 20| = 5), b three 12-word ones (|36 - 40| = 4): word_mad 4.5.
    # Changed (each takes the other's request): a gets 30 words for 40 (10), b 12 for 20 (8): word_mad 9.
    report = interference(dataset="jsonl", data=lengths, controller="length", attributes=["length"],
                          metrics=["length"], out=str(tmp_path / "out"))
    assert report["base"]["length.word_mad"] == 4.5
    assert report["changed"]["length"]["length.word_mad"] == 9.0
    assert report["matrix"]["length"]["length.word_mad"] == pytest.approx(1.0)
    # every length lies in bin 0, so the base MAD is 0 and the bins' PCC undefined: CA undefined, with the reason
    assert report["matrix"]["length"]["length.mad"] is None
    assert report["undefined"]["length"]["length.mad"] == "the base value is 0"
    assert report["undefined"]["length"]["length.pcc"] == "the base value is undefined"
    assert report["changed_examples"] == {"length": 2} and report["n_examples"] == 2
    assert report["config"]["controller"] == "length" and report["config"]["attributes"] == ["length"]
    # the controller and the metric share the name 'length': each is recorded under its kind
    assert report["config"]["options"]["controller:length"] == {"unit": "words", "levels": ""}
    assert report["config"]["options"]["metric:length"] == {"unit": "words", "levels": "", "top_bin": -1,
                                                            "pcc_generated": "bins"}
    written = json.loads((tmp_path / "out" / "interference.json").read_text())
    assert written == report
    assert {"attributes", "values", "matrix", "base", "changed", "changed_examples", "n_examples", "config",
            "versions"} <= set(written)
    ET.fromstring((tmp_path / "out" / "interference.svg").read_text())
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["interference.json", "interference.svg"]


def test_change_amplitude_is_undefined_without_a_nonzero_base():
    assert change_amplitude(0.0, 0.5) == (None, "the base value is 0")
    assert change_amplitude(None, 0.5) == (None, "the base value is undefined")
    assert change_amplitude(0.5, None) == (None, "the value after the change is undefined")
    assert change_amplitude(-0.5, -0.25) == (0.5, None)


@pytest.mark.parametrize("values", [
    ["short", "normal", "long", "normal", "normal", "short"],
    [f"topic {i % 7}" for i in range(40)],
    [["solar", "grid"], ["wind"], ["solar", "grid"], ["wind"], ["hydro"]],
])
def test_the_changed_value_is_always_another_one_of_the_dataset_and_fixed_by_the_seed(values):
    examples = [Example(id=str(i), document="text", controls={"x": value, "keep": i}) for i, value in
                enumerate(values)]
    changed = change_attribute(examples, "x", seed=3)
    assert [e.controls for e in change_attribute(examples, "x", seed=3)] == [e.controls for e in changed]
    for old, new in zip(examples, changed):
        assert new.controls["x"] != old.controls["x"] and new.controls["x"] in values
        assert new.controls["keep"] == old.controls["keep"] and new.id == old.id
    assert [e.controls["x"] for e in examples] == values  # the originals are untouched


def test_a_single_value_cannot_be_changed():
    examples = [Example(id=str(i), document="text", controls={"x": "same"}) for i in range(3)]
    with pytest.raises(ConfigurationError, match=r"""^attribute 'x' takes only one value \("same"\) in the 3 """):
        change_attribute(examples, "x", seed=0)


@pytest.fixture
def no_generation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("generated before refusing")

    monkeypatch.setattr("ctrlkit.analyses.interference.generate", refuse)


@pytest.mark.parametrize("case, message", [
    ({"controller": "length", "attributes": ["topic"]},
     "controller 'length' does not read attribute 'topic' (it reads length), so changing it cannot change a summary"),
    ({"controller": "length+prepend", "attributes": ["focus"], "options": {"prepend": {"attributes": "focus"}}},
     "no example of dataset 'jsonl' carries attribute 'focus'"),
    ({"controller": "length", "attributes": ["length"], "rows": "same"},
     "attribute 'length' takes only one value (20) in the 2 examples analysed, so there is nothing to change it to"),
    ({"controller": "length", "attributes": ["length"], "metrics": ["rouge"], "rows": "unreferenced"},
     "metric 'rouge' needs references, but example 'a' (and 1 more) of dataset 'jsonl' has none"),
])
def test_refusals_come_in_one_line_before_any_generation(tmp_path, no_generation, case, message):
    rows = [{"id": "a", "document": _document(0, 15), "references": ["x"], "controls": {"length": 20}},
            {"id": "b", "document": _document(1, 12), "references": ["y"], "controls": {"length": 40}}]
    if case.get("rows") == "same":
        rows[1]["controls"]["length"] = 20
    if case.get("rows") == "unreferenced":
        for row in rows:
            del row["references"]
    with pytest.raises(ConfigurationError) as refused:
        interference(dataset="jsonl", data=_write(tmp_path / "d.jsonl", rows), controller=case["controller"],
                     attributes=case["attributes"], metrics=case.get("metrics", ["length"]),
                     options=case.get("options"), out=str(tmp_path / "out"))
    assert str(refused.value) == message
    assert not (tmp_path / "out").exists()  # a refused analysis creates no folder


def test_the_heatmap_is_well_formed_svg_with_escaped_labels():
    attributes, paths = ['topic <"a" & b>', "length"], ["m.<v>&", "rouge.rouge1"]
    report = {"attributes": attributes, "values": paths, "n_examples": 3,
              "config": {"controller": "x&y", "dataset": "<d>"},
              "matrix": {attributes[0]: {paths[0]: 0.5, paths[1]: None}, attributes[1]: {paths[0]: 0.0, paths[1]: 2.0}},
              "undefined": {attributes[0]: {paths[1]: "the base value is 0"}}}
    svg = heatmap_svg(report)
    root = ET.fromstring(svg)  # well-formed: every label was escaped
    text = "".join(root.itertext())
    assert all(label in text for label in attributes + paths)
    assert {"0.5000", "0.0000", "2.0000", "undefined"} <= {element.text for element in root.iter(f"{SVG}text")}
    assert '<"a"' not in svg and "&lt;" in svg


def test_cli_prints_the_matrix_and_writes_both_files(lengths, tmp_path):
    result = invoke_ctrlkit("analyze", "interference", "-d", "jsonl", "--data", lengths, "-c", "length",
                            "--attributes", "length", "-m", "length", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    header, _, *rows = result.stdout.splitlines()
    assert header.split() == ["value", "base", "length:", "new", "length:", "CA"]
    assert ["length.word_mad", "4.5000", "9.0000", "1.0000"] in [row.split() for row in rows]
    assert (tmp_path / "out" / "interference.svg").is_file()
    refused = invoke_ctrlkit("analyze", "interference", "-d", "jsonl", "--data", lengths, "-c", "length",
                             "--attributes", "topic", "-m", "length", "-o", tmp_path / "refused")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "Error: controller 'length' does not read attribute 'topic' (it reads length), so changing it cannot "
        "change a summary"]


def test_macsum_doc_length_and_topic(tmp_path):
    data = shared_file("macsum/macdoc_val.json")
    report = interference(dataset="macsum", data=str(data), controller="length+prepend",
                          options={"prepend": {"attributes": "topic"}}, attributes=["length", "topic"],
                          metrics=["length", "rouge"], limit=60, out=str(tmp_path / "out"))
    assert list(report["matrix"]) == ["length", "topic"]
    assert report["matrix"]["length"]["length.word_mad"] is not None
    assert all(report["matrix"][a]["rouge.rouge1"] is not None for a in ("length", "topic"))
    # half of MACSum's references request no topic; prepend cannot run on those, so they are left out
    assert report["n_examples"] + report["n_left_out"] == 60 and report["n_examples"] > 20
    assert report["changed_examples"] == {"length": report["n_examples"], "topic": report["n_examples"]}
    ET.parse(tmp_path / "out" / "interference.svg")
