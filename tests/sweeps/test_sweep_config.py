"""Sweep configuration files: every setting checked for type and range (one line naming the file
and the key), the command line's forms accepted, YAML aliases and oversized files refused, the
shipped example runs; and a sweep cell reused only while its data file holds the same bytes."""

import json
import os
import shutil
import time
from pathlib import Path

import pytest

import ctrlkit
from ctrlkit.digest import data_digest
from ctrlkit.sweeps.config import load_config
from ctrlkit.sweeps.sweep import sweep
MAX_CONFIG_BYTES = 64 * 1024

from helpers import ROOT, invoke_ctrlkit


def _config(tmp_path: Path, text: str, suffix: str = ".toml") -> Path:
    path = tmp_path / f"sweep{suffix}"
    path.write_text(text, encoding="utf-8")
    return path


def _refused(path: Path, key: str | None = None) -> str:
    """The one-line error ``load_config(path)`` gives, checked to name the file and the key."""
    with pytest.raises(ctrlkit.ConfigurationError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path)), message
    assert key is None or f"setting '{key}" in message, message
    return message


# ---------------------------------------------------------------------------------------------
# The command line's forms
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("suffix,text", [
    (".toml", 'controllers = "none, tag"\nmetrics = "stas"\nbackbones = "extractive"\ndatasets = "sample"\n'),
    (".yaml", "controllers: none, tag\nmetrics: stas\nbackbones: extractive\ndatasets: sample\n"),
])
def test_names_may_be_one_comma_separated_string_as_on_the_command_line(tmp_path, suffix, text):
    pytest.importorskip("yaml")
    assert load_config(_config(tmp_path, text, suffix)) == {
        "controllers": ["none", "tag"], "metrics": ["stas"], "backbones": ["extractive"], "datasets": ["sample"]}


def test_data_may_be_one_path_for_a_sweep_of_one_dataset(tmp_path):
    path = _config(tmp_path, 'datasets = "jsonl"\ndata = "my.jsonl"\n')
    assert load_config(path) == {"datasets": ["jsonl"], "data": {"jsonl": "my.jsonl"}}
    path = _config(tmp_path, 'data = "my.jsonl"\n')  # no datasets: the default one, as with --data
    assert load_config(path) == {"data": {"sample": "my.jsonl"}}


def test_a_config_with_a_comma_string_and_one_data_path_runs_from_the_command_line(tmp_path, private_cache):
    data = _write_data(tmp_path / "d.jsonl")
    path = _config(tmp_path, f'controllers = "none,prepend"\nmetrics = "rouge"\ndatasets = "jsonl"\n'
                             f'data = {json.dumps(str(data))}\n')
    result = invoke_ctrlkit("sweep", "--config", str(path), "-o", str(tmp_path / "out"),
                            env={"CTRLKIT_CACHE_DIR": str(private_cache)})
    assert result.returncode == 0, result.stderr
    table = json.loads((tmp_path / "out" / "table.json").read_text())
    assert [(row["dataset"], row["controller"]) for row in table["rows"]] == [("jsonl", "none"), ("jsonl", "prepend")]


# ---------------------------------------------------------------------------------------------
# Every setting's type and range
# ---------------------------------------------------------------------------------------------

BAD_TOML = [
    ("limit = -5", "limit"),
    ("limit = 0", "limit"),
    ("limit = true", "limit"),
    ("limit = 2.5", "limit"),
    ('limit = "5"', "limit"),
    ("limit = 1979-05-27", "limit"),
    ("seed = -1", "seed"),
    ("seed = false", "seed"),
    ("seed = 4294967296", "seed"),
    ("batch_size = 0", "batch_size"),
    ("batch_size = nan", "batch_size"),
    ("controllers = []", "controllers"),
    ('controllers = ""', "controllers"),
    ("controllers = [1, 2]", "controllers"),
    ('controllers = ["none", ""]', "controllers"),
    ("controllers = { none = 1 }", "controllers"),
    ('controllers = "none\\ntag"', "controllers"),
    ("metrics = 5", "metrics"),
    ("backbones = [[\"extractive\"]]", "backbones"),
    ("datasets = true", "datasets"),
    ("split = { name = \"test\" }", "split"),
    ('split = ["test"]', "split"),
    ('split = "   "', "split"),
    ("judge = 3", "judge"),
    ("topics = inf", "topics"),
    ('options = "tag.top_n=5"', "options"),
    ("[options]\ntag = 5", "options.tag"),
    ("[options.tag]\ntop_n = nan", "options.tag.top_n"),
    ("[options.tag]\ntop_n = -inf", "options.tag.top_n"),
    ("[options.tag]\ntop_n = [1, 2]", "options.tag.top_n"),
    ("[options.tag.top_n]\nvalue = 1", "options.tag.top_n"),
    ('[options.tag]\ntop_n = "5\\u001b[2J"', "options.tag.top_n"),
    ("data = 5", "data"),
    ('data = ["a.jsonl"]', "data"),
    ("data = { jsonl = 3 }", "data.jsonl"),
    ('datasets = ["jsonl", "csv"]\ndata = "a.jsonl"', "data"),
    ('datasets = ["jsonl"]\ndata = { csv = "a.csv" }', "data"),
]


@pytest.mark.parametrize("text,key", BAD_TOML, ids=[text for text, _ in BAD_TOML])
def test_each_wrong_type_or_range_is_one_line_naming_the_file_and_the_key(tmp_path, text, key):
    _refused(_config(tmp_path, text + "\n"), key)


@pytest.mark.parametrize("text,key", [
    ("limit: -5", "limit"),
    ("limit: yes", "limit"),
    ("limit: .nan", "limit"),
    ("controllers: [none, [tag]]", "controllers"),
    ("controllers: {none: 1}", "controllers"),
    ("split: [a]", "split"),
    ("options: {tag: {top_n: .inf}}", "options.tag.top_n"),
    ("options: {tag: {top_n: {deep: 1}}}", "options.tag.top_n"),
    ("options: {tag: [1]}", "options.tag"),
])
def test_yaml_values_are_checked_the_same_way(tmp_path, text, key):
    pytest.importorskip("yaml")
    _refused(_config(tmp_path, text + "\n", ".yaml"), key)


@pytest.mark.parametrize("text,meant", [("controlers = [\"none\"]", "controllers"), ("batchsize = 4", "batch_size"),
                                        ("metric = \"stas\"", "metrics"), ("Limit = 4", "limit")])
def test_an_unknown_setting_is_refused_with_a_did_you_mean(tmp_path, text, meant):
    message = _refused(_config(tmp_path, text + "\n"), text.split(" ")[0])
    assert f"Did you mean '{meant}'?" in message


def test_a_null_setting_in_yaml_is_left_out(tmp_path):
    pytest.importorskip("yaml")
    assert load_config(_config(tmp_path, "controllers: [none]\njudge:\nsplit: null\n", ".yaml")) == {
        "controllers": ["none"]}


def test_a_bad_config_from_the_command_line_is_one_line_and_writes_nothing(tmp_path):
    path = _config(tmp_path, 'controllers = "none"\nlimit = -5\n')
    result = invoke_ctrlkit("sweep", "--config", str(path), "-o", str(tmp_path / "out"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(path) in lines[0] and "'limit'" in lines[0], result.stderr
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------------------------
# Files that would exhaust memory or the stack
# ---------------------------------------------------------------------------------------------

LAUGHS = """\
metrics: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]
backbones: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
datasets: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
split: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
options: &e {x: [*d, *d, *d, *d, *d, *d, *d, *d, *d]}
controllers: [*e, *e, *e, *e, *e, *e, *e, *e, *e]
"""


def test_yaml_aliases_are_refused_in_one_line_before_anything_is_expanded(tmp_path):
    pytest.importorskip("yaml")
    started = time.perf_counter()
    message = _refused(_config(tmp_path, LAUGHS, ".yaml"))
    assert "line 2" in message and "aliases" in message
    assert time.perf_counter() - started < 2
    # an anchor that nothing refers to is harmless, and allowed
    assert load_config(_config(tmp_path, "controllers: &names [none, tag]\n", ".yaml")) == {
        "controllers": ["none", "tag"]}


@pytest.mark.parametrize("suffix", [".toml", ".yaml"])
def test_an_oversized_config_file_is_refused_unread(tmp_path, suffix):
    pytest.importorskip("yaml")
    path = _config(tmp_path, "# padding\n" * (MAX_CONFIG_BYTES // 10 + 1) + 'controllers = "none"\n', suffix)
    message = _refused(path)
    assert f"at most {MAX_CONFIG_BYTES} bytes" in message


@pytest.mark.parametrize("suffix", [".toml", ".yaml"])
def test_deeply_nested_values_are_one_line_quickly_not_a_recursion_traceback(tmp_path, suffix):
    pytest.importorskip("yaml")
    separator = " = " if suffix == ".toml" else ": "
    path = _config(tmp_path, "split" + separator + "[" * 30_000 + "]" * 30_000 + "\n", suffix)
    started = time.perf_counter()
    message = _refused(path)
    assert ("cannot read the sweep configuration" if suffix == ".toml" else "nested more than 16 deep") in message
    assert time.perf_counter() - started < 2


# ---------------------------------------------------------------------------------------------
# The shipped example
# ---------------------------------------------------------------------------------------------

def test_the_example_config_loads_and_runs(tmp_path, private_cache):
    example = ROOT / "examples" / "sweep.toml"
    settings = load_config(example)
    assert settings["controllers"] == ["none", "prepend", "tag"] and settings["metrics"] == ["stas", "rouge"]
    result = invoke_ctrlkit("sweep", "--config", str(example), "-o", str(tmp_path / "out"),
                            env={"CTRLKIT_CACHE_DIR": str(private_cache)})
    assert result.returncode == 0, result.stderr
    table = json.loads((tmp_path / "out" / "table.json").read_text())
    assert [row["controller"] for row in table["rows"]] == ["none", "prepend", "tag"]
    cell = json.loads((tmp_path / "out" / table["rows"][2]["run"] / "results.json").read_text())
    assert cell["n_examples"] == settings["limit"] and cell["config"]["options"]["tag"]["top_n"] == 50


# ---------------------------------------------------------------------------------------------
# A cell is reused only while its data holds the same bytes
# ---------------------------------------------------------------------------------------------

def _write_data(path: Path, reference: str = "Sentence") -> Path:
    path.write_text("".join(json.dumps({"id": f"e{i}", "document": f"Sentence {i} is here. Another one {i}.",
                                        "references": [f"{reference} {i}."], "controls": {"topic": "sports"}})
                         + "\n" for i in range(4)))
    return path


def _sweep(out: Path, data: Path, **extra):
    arguments = dict(out=str(out), controllers=["none"], metrics=["rouge"], datasets=["jsonl"])
    if "options" not in extra:
        arguments["data"] = {"jsonl": str(data)}
    return sweep(**arguments, **extra)


def test_a_cell_runs_again_when_its_data_changes_even_with_the_same_size_and_time(tmp_path, private_cache):
    data = _write_data(tmp_path / "d.jsonl")
    first = _sweep(tmp_path / "s", data)
    recorded = json.loads((tmp_path / "s" / first[0]["run"] / "results.json").read_text())["config"]
    assert recorded["data_digest"] == data_digest(data) and recorded["data_digest"].startswith("sha256:")
    before = os.stat(data)
    _write_data(data, reference="Sentinel")  # same length, other references
    os.utime(data, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(data).st_size == before.st_size
    again = _sweep(tmp_path / "s", data)
    assert not again[0]["reused"]
    assert again[0]["metrics"]["rouge"] != first[0]["metrics"]["rouge"]
    assert json.loads((tmp_path / "s" / again[0]["run"] / "results.json").read_text())["config"]["data_digest"] \
        == data_digest(data) != recorded["data_digest"]


def test_a_data_path_set_as_an_option_is_fingerprinted_too(tmp_path, private_cache):
    data = _write_data(tmp_path / "d.jsonl")
    options = {"jsonl": {"path": str(data)}}
    assert not _sweep(tmp_path / "s", data, options=options)[0]["reused"]
    assert _sweep(tmp_path / "s", data, options=options)[0]["reused"]
    _write_data(data, reference="Changed!")
    assert not _sweep(tmp_path / "s", data, options=options)[0]["reused"]


def test_a_touched_moved_or_copied_data_file_with_the_same_bytes_reuses_its_cell(tmp_path, private_cache):
    data = _write_data(tmp_path / "d.jsonl")
    first = _sweep(tmp_path / "s", data)
    os.utime(data, (time.time() + 100, time.time() + 100))
    assert _sweep(tmp_path / "s", data)[0]["reused"]
    copy = Path(shutil.copy(data, tmp_path / "elsewhere.jsonl"))
    reused = _sweep(tmp_path / "s", copy)[0]
    assert reused["reused"] and reused["metrics"] == first[0]["metrics"]


def test_a_cell_runs_again_when_its_topic_documents_change_but_not_when_they_move(tmp_path, private_cache):
    bundled = ROOT / "plugins" / "datasets" / "ctrlkit_datasets" / "data" / "sample_topics.jsonl"
    topics = Path(shutil.copy(bundled, tmp_path / "t.jsonl"))
    arguments = dict(out=str(tmp_path / "s"), controllers=["tag"], metrics=["stas"], limit=4)
    first = sweep(**arguments, topics=str(topics))[0]
    assert _recorded(tmp_path / "s", first)["topics_digest"] == data_digest(topics)
    moved = Path(shutil.copy(topics, tmp_path / "moved.jsonl"))
    assert sweep(**arguments, topics=str(moved))[0]["reused"]
    lines = moved.read_text().splitlines(keepends=True)
    moved.write_text("".join(lines[:-1]))  # one topic document fewer
    again = sweep(**arguments, topics=str(moved))[0]
    assert not again["reused"] and _recorded(tmp_path / "s", again)["topics_digest"] == data_digest(moved)


def _recorded(out: Path, row: dict) -> dict:
    return json.loads((out / row["run"] / "results.json").read_text())["config"]


def test_a_cell_recorded_without_a_digest_runs_again(tmp_path, private_cache):
    data = _write_data(tmp_path / "d.jsonl")
    first = _sweep(tmp_path / "s", data)
    results = tmp_path / "s" / first[0]["run"] / "results.json"
    old = json.loads(results.read_text())
    del old["config"]["data_digest"]  # as a cell written before digests were recorded
    results.write_text(json.dumps(old))
    assert not _sweep(tmp_path / "s", data)[0]["reused"]


class _FolderModel(ctrlkit.Backbone):
    """A "model" that is a folder, fingerprinted as the hf backbones fingerprint theirs."""
    spec_option = "model"
    options = (ctrlkit.Option("model", str, "", "the folder"),)

    def identity(self):
        folder = Path(self.options["model"])
        return {**super().identity(), "files": sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns)
                                                      for p in folder.iterdir())}

    def generate(self, inputs):
        said = (Path(self.options["model"]) / "weights.txt").read_text()
        return [said for _ in inputs]


class _FolderModels:
    @ctrlkit.hookimpl
    def register_backbones(self, register):
        register("folder-model", _FolderModel)


def test_a_cell_runs_again_when_its_model_folder_is_trained_again(tmp_path, private_cache, throwaway_plugins):
    throwaway_plugins(_FolderModels(), "folder-models")
    model = tmp_path / "model"
    model.mkdir()
    (model / "weights.txt").write_text("Sentence 1 is here.")
    data = _write_data(tmp_path / "d.jsonl")
    first = _sweep(tmp_path / "s", data, backbones=[f"folder-model:{model}"])[0]
    assert _recorded(tmp_path / "s", first)["backbone_digest"].startswith("sha256:")
    assert _sweep(tmp_path / "s", data, backbones=[f"folder-model:{model}"])[0]["reused"]
    (model / "weights.txt").write_text("Another one 2 and more words.")  # trained again, same folder
    again = _sweep(tmp_path / "s", data, backbones=[f"folder-model:{model}"])[0]
    assert not again["reused"] and again["metrics"] != first["metrics"]


def test_a_folder_digest_follows_the_bytes_and_names_of_its_files_not_their_order_or_times(tmp_path):
    folder = tmp_path / "release"
    (folder / "sub").mkdir(parents=True)
    (folder / "train.jsonl").write_text("a\n")
    (folder / "sub" / "test.jsonl").write_text("b\n")
    digest = data_digest(folder)
    os.utime(folder / "train.jsonl", (1, 1))
    assert data_digest(folder) == digest
    copy = Path(shutil.copytree(folder, tmp_path / "copy"))
    assert data_digest(copy) == digest
    (copy / "sub" / "test.jsonl").write_text("c\n")
    assert data_digest(copy) != digest
    (copy / "sub" / "test.jsonl").write_text("b\n")
    assert data_digest(copy) == digest
    (copy / "sub" / "test.jsonl").rename(copy / "sub" / "valid.jsonl")
    assert data_digest(copy) != digest
    (copy / "sub" / "loop").symlink_to(copy)  # a link cycle ends instead of recursing forever
    assert data_digest(copy).startswith("sha256:")
    assert data_digest(tmp_path / "missing") is None and data_digest(None) is None
