"""Options of components that share a name: the hf dataset and the hf backbone, the length
controller and the length metric. ``KIND:NAME`` names one of them; a plain name works where it
is unambiguous."""

import json

import pytest
from click.testing import CliRunner

import ctrlkit
from ctrlkit.cli import cli
from ctrlkit.component_options import RunOptions, split_key

LENGTH = [("controllers", "length"), ("metrics", "length")]


def test_a_qualified_key_names_one_kind_singular_or_plural():
    assert split_key("dataset:hf") == ("datasets", "hf")
    assert split_key("backbones:hf") == ("backbones", "hf")
    assert split_key("hf") == (None, "hf")
    with pytest.raises(ctrlkit.OptionError, match=r"--set model:hf\.\*: expected KIND:NAME with KIND one of "
                                                   r"controller, metric, dataset, backbone, vectorizer"):
        split_key("model:hf")


def test_a_plain_name_goes_to_the_one_component_that_takes_the_option():
    given = RunOptions({"length": {"top_bin": 3}}, LENGTH)
    assert given.of("metrics", "length") == {"top_bin": 3}
    assert given.of("controllers", "length") == {}


def test_an_ambiguous_plain_name_is_refused_naming_the_qualified_forms():
    with pytest.raises(ctrlkit.OptionError) as caught:
        RunOptions({"length": {"unit": "bin"}}, LENGTH)
    assert str(caught.value) == ("--set length.unit is ambiguous: controller:length and metric:length both take it; "
                                 "write --set controller:length.unit=... or --set metric:length.unit=...")


def test_qualified_keys_set_each_component_apart():
    given = RunOptions({"controller:length": {"unit": "bin"}, "metric:length": {"unit": "words"}}, LENGTH)
    assert given.of("controllers", "length") == {"unit": "bin"}
    assert given.of("metrics", "length") == {"unit": "words"}
    assert [given.key(c) for c in LENGTH] == ["controller:length", "metric:length"]


def test_an_option_given_twice_with_different_values_is_refused():
    with pytest.raises(ctrlkit.OptionError, match=r"option 'hf\.max_new_tokens' is given twice, as '4' and '8'"):
        RunOptions({"hf": {"max_new_tokens": "4"}, "backbone:hf": {"max_new_tokens": "8"}}, [("backbones", "hf")])


def test_an_option_no_component_of_that_name_takes_is_refused():
    with pytest.raises(ctrlkit.OptionError, match=r"Unknown option 'length\.colour': none of controller:length, "
                                                   r"metric:length takes it"):
        RunOptions({"length": {"colour": "red"}}, LENGTH)
    with pytest.raises(ctrlkit.OptionError, match=r"Unknown option 'tag\.top_nn'\. Valid options of tag: top_n, "
                                                   r"stop_words"):
        RunOptions({"tag": {"top_nn": 5}}, [("controllers", "tag")])


def test_a_key_naming_no_component_of_its_kind_is_refused():
    given = RunOptions({"backbone:tag": {"top_n": 5}}, [("controllers", "tag"), ("backbones", "extractive")])
    with pytest.raises(ctrlkit.OptionError, match=r"--set backbone:tag\.\*: no backbone named 'tag' in this run "
                                                   r"\(components: tag, extractive\)"):
        given.check_unused()


def test_a_run_records_components_sharing_a_name_apart():
    result = ctrlkit.run(controller="length", metrics=["length"], baseline=None, limit=2, cache=False,
                         options={"controller:length": {"unit": "bin"}, "length": {"top_bin": 3}},
                         dataset="jsonl", data=_length_file())
    options = result.results["config"]["options"]
    assert options["controller:length"] == {"unit": "bin", "levels": ""}
    assert options["metric:length"] == {"unit": "words", "levels": "", "top_bin": 3, "pcc_generated": "bins"}
    assert "length" not in options and options["jsonl"]["path"].endswith("length.jsonl")


def _length_file():
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "length.jsonl"
    rows = [{"id": str(i), "document": "One sentence here. Another one there.", "references": ["One sentence."],
             "controls": {"length": 1}} for i in range(2)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def test_a_sweep_refuses_an_option_no_cell_takes(tmp_path):
    from ctrlkit.sweeps.sweep import sweep

    with pytest.raises(ctrlkit.OptionError, match=r"Unknown option 'tag\.top_nn'"):
        sweep(out=str(tmp_path / "s"), controllers=["none", "tag"], options={"tag": {"top_nn": 5}})
    assert not (tmp_path / "s").exists()  # refused before any cell ran


def test_a_sweep_cell_takes_only_the_options_of_its_own_components(tmp_path):
    """In the cell without the length controller, length.unit is the metric's alone; in the other
    it must be qualified, so the sweep refuses it before any cell runs."""
    from ctrlkit.sweeps.sweep import sweep

    data = _length_file()
    rows = sweep(out=str(tmp_path / "s"), controllers=["none", "length"], metrics=["length"], datasets=["jsonl"],
                 data={"jsonl": data}, limit=2, options={"metric:length": {"unit": "bin"},
                                                         "controller:length": {"unit": "words"}})
    recorded = {row["controller"]: json.loads((tmp_path / "s" / row["run"] / "results.json").read_text())
                ["config"]["options"] for row in rows}
    assert recorded["none"]["length"]["unit"] == "bin"
    assert recorded["length"]["metric:length"]["unit"] == "bin"
    assert recorded["length"]["controller:length"]["unit"] == "words"
    again = sweep(out=str(tmp_path / "s"), controllers=["none", "length"], metrics=["length"], datasets=["jsonl"],
                  data={"jsonl": data}, limit=2, options={"metric:length": {"unit": "bin"},
                                                          "controller:length": {"unit": "words"}})
    assert all(row["reused"] for row in again)
    with pytest.raises(ctrlkit.OptionError, match="--set length.unit is ambiguous"):
        sweep(out=str(tmp_path / "t"), controllers=["none", "length"], metrics=["length"], datasets=["jsonl"],
              data={"jsonl": data}, limit=2, options={"length": {"unit": "bin"}})


# A real run: the hf dataset on a local copy, the hf backbone on a tiny model.

@pytest.fixture(scope="module")
def hub_copy(tmp_path_factory):
    datasets = pytest.importorskip("datasets", reason="the hf dataset needs the optional 'datasets' library")
    folder = tmp_path_factory.mktemp("hub") / "copy"
    datasets.DatasetDict({"test": datasets.Dataset.from_dict({
        "key": ["a", "b", "c"],
        "article": ["The council met on Monday. It voted to build a bridge.", "Rain fell all week. Rivers rose.",
                    "The team won the final. Fans cheered in the streets."],
        "highlights": ["A bridge will be built.", "Rivers rose.", "The team won."],
    })}).save_to_disk(str(folder))
    return folder


def test_the_hf_dataset_with_the_hf_backbone(hub_copy, tiny_bart, tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, [
        "run", "-d", "hf", "--data", str(hub_copy), "-b", f"hf:{tiny_bart}", "-m", "rouge", "--no-baseline",
        "--no-cache", "--device", "cpu", "-o", str(out),
        "--set", "dataset:hf.document_field=article", "--set", "hf.references_field=highlights",
        "--set", "hf.id_field=key", "--set", "backbone:hf.num_beams=1", "--set", "hf.max_new_tokens=4"])
    assert result.exit_code == 0, result.output
    config = json.loads((out / "results.json").read_text())["config"]
    dataset, backbone = config["options"]["dataset:hf"], config["options"]["backbone:hf"]
    assert (dataset["path"], dataset["document_field"], dataset["references_field"], dataset["id_field"]) == \
        (str(hub_copy), "article", "highlights", "key")
    assert (backbone["model"], backbone["device"], backbone["num_beams"], backbone["max_new_tokens"]) == \
        (str(tiny_bart), "cpu", 1, 4)
    assert "hf" not in config["options"]
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [sample["id"] for sample in samples] == ["a", "b", "c"]


def test_an_option_neither_hf_component_takes_is_one_line(hub_copy, tiny_bart):
    result = CliRunner().invoke(cli, ["run", "-d", "hf", "--data", str(hub_copy), "-b", f"hf:{tiny_bart}",
                                      "--set", "hf.colour=red"])
    assert result.exit_code == 1
    assert result.output == "Error: Unknown option 'hf.colour': none of dataset:hf, backbone:hf takes it\n"
