"""A sweep into a folder that holds a sweep: refused in one line when the settings differ, resumed
when they only add, replaced with overwrite; and the run options a sweep shares with ``run``
(--baseline, --device, --no-cache)."""

import json
import logging
from pathlib import Path

import pytest

import ctrlkit
from helpers import invoke_ctrlkit
from ctrlkit.errors import CtrlkitError
from ctrlkit.report.write import write_report
from ctrlkit.sweeps.cells import same_configuration
from ctrlkit.sweeps.config import load_config
from ctrlkit.sweeps.plan import with_device
from ctrlkit.sweeps.sweep import sweep
from ctrlkit.sweeps.folder import changed_settings

BASE = dict(controllers=["none", "tag"], metrics=["rouge"], limit=2)


def _contents(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.mark.parametrize("change,named", [
    ({"limit": 3}, "limit"),
    ({"controllers": ["tag"]}, "controllers"),
    ({"metrics": ["stas"]}, "metrics"),
    ({"seed": 1}, "seed"),
    ({"options": {"tag": {"top_n": 5}}}, "options"),
    ({"baseline": "none"}, "baseline"),
])
def test_a_sweep_with_other_settings_is_refused_and_changes_nothing(tmp_path, private_cache, change, named):
    out = tmp_path / "s"
    sweep(out=str(out), **BASE)
    write_report(out)
    before = _contents(out)
    with pytest.raises(ctrlkit.CtrlkitError) as refused:
        sweep(out=str(out), **{**BASE, **change})
    assert str(refused.value) == (
        f"{out} holds a sweep with other settings ({named}); rerun it with the same settings to resume (more "
        f"controllers, metrics, backbones or datasets may be added), choose another --out, or pass --overwrite to "
        f"replace it")
    assert _contents(out) == before


def test_the_command_refuses_in_one_line(tmp_path, private_cache):
    out = tmp_path / "s"
    common = ["sweep", "--controllers", "none", "--metrics", "rouge", "-o", str(out)]
    assert invoke_ctrlkit(*common, "--limit", "2").returncode == 0
    refused = invoke_ctrlkit(*common, "--limit", "3")
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"Error: {out} holds a sweep with other settings (limit);")
    assert len(refused.stderr.splitlines()) == 1


def test_more_metrics_or_controllers_resume_and_a_stale_report_goes(tmp_path, private_cache, caplog):
    out = tmp_path / "s"
    sweep(out=str(out), **BASE)
    write_report(out)
    rows = sweep(out=str(out), **{**BASE, "metrics": ["rouge", "stas"]})
    assert [row["cache"]["misses"] for row in rows] == [0, 0]  # no generation: only the scoring is new
    assert all("stas" in row["metrics"] for row in rows)
    assert not (out / "report.html").exists() and not (out / "report.md").exists()
    assert "removed report.html and report.md, written from the sweep's earlier cells" in caplog.text
    assert json.loads((out / "sweep.json").read_text())["settings"]["metrics"] == ["rouge", "stas"]

    write_report(out)
    rows = sweep(out=str(out), **{**BASE, "metrics": ["rouge", "stas"], "controllers": ["none", "tag", "prepend"]})
    assert [row["reused"] for row in rows] == [True, True, False]
    assert not (out / "report.html").exists()


def test_a_rerun_of_the_same_sweep_keeps_its_report(tmp_path, private_cache):
    out = tmp_path / "s"
    sweep(out=str(out), **BASE)
    write_report(out)
    assert all(row["reused"] for row in sweep(out=str(out), **BASE))
    assert (out / "report.html").is_file() and (out / "report.md").is_file()


def test_overwrite_removes_the_earlier_sweep_and_says_what(tmp_path, private_cache, caplog):
    out = tmp_path / "s"
    sweep(out=str(out), **BASE)
    write_report(out)
    (out / "notes.txt").write_text("mine")
    caplog.set_level(logging.WARNING, logger="ctrlkit")
    rows = sweep(out=str(out), controllers=["prepend"], metrics=["stas"], limit=3, overwrite=True)
    assert ("--overwrite: removing the earlier sweep in " f"{out}: 2 cells in cells/, sweep.json, table.json, "
            "table.csv, table.md, table.tex, report.html, report.md") in caplog.text
    assert [row["controller"] for row in rows] == ["prepend"]
    assert sorted(path.name for path in (out / "cells").iterdir()) == ["sample--extractive--prepend"]
    assert sorted(path.name for path in out.iterdir()) == ["cells", "notes.txt", "sweep.json", "table.csv",
                                                          "table.json", "table.md", "table.tex"]
    assert (out / "notes.txt").read_text() == "mine"
    assert json.loads((out / "sweep.json").read_text())["settings"]["controllers"] == ["prepend"]


def test_the_command_takes_overwrite(tmp_path, private_cache):
    out = tmp_path / "s"
    first = invoke_ctrlkit("sweep", "--controllers", "none", "--metrics", "rouge", "--limit", "2", "-o", str(out))
    assert first.returncode == 0, first.stderr
    replaced = invoke_ctrlkit("sweep", "--controllers", "tag", "--metrics", "rouge", "--limit", "2", "-o", str(out),
                           "--overwrite")
    assert replaced.returncode == 0, replaced.stderr
    assert "removing the earlier sweep" in replaced.stderr
    assert [row["controller"] for row in json.loads((out / "table.json").read_text())["rows"]] == ["tag"]


def test_a_sweep_json_that_is_not_a_sweeps_is_refused(tmp_path):
    out = tmp_path / "s"
    out.mkdir()
    (out / "sweep.json").write_text("[]")
    with pytest.raises(ctrlkit.CtrlkitError, match=r"sweep.json: cannot read as a sweep's settings|expected a JSON"):
        sweep(out=str(out), **BASE)
    (out / "sweep.json").write_text("{}")
    with pytest.raises(ctrlkit.CtrlkitError, match="no 'settings' object.*--overwrite"):
        sweep(out=str(out), **BASE)


def test_a_new_api_key_or_a_moved_data_file_is_not_another_setting(tmp_path, private_cache):
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "document": f"Sentence {i} here. Another one.",
                                        "references": ["Sentence."]}) + "\n" for i in range(3)))
    arguments = dict(out=str(tmp_path / "s"), controllers=["none"], metrics=["rouge"], datasets=["jsonl"])
    sweep(**arguments, data={"jsonl": str(data)})
    moved = data.rename(tmp_path / "moved.jsonl")
    assert sweep(**arguments, data={"jsonl": str(moved)})[0]["reused"]
    other = tmp_path / "other.jsonl"
    other.write_text(moved.read_text().replace("Another", "Other"))
    with pytest.raises(ctrlkit.CtrlkitError, match=r"other settings \(data\)"):
        sweep(**arguments, data={"jsonl": str(other)})
    before = {"options": {"openai": {"api_key": "***", "model": "m"}}}
    assert changed_settings(before, {}, {"options": {"openai": {"model": "m"}}}, {}) == []
    assert changed_settings(before, {}, {"options": {"openai": {"model": "n"}}}, {}) == ["options"]


# ---------------------------------------------------------------------------------------------
# --baseline, --device, --no-cache
# ---------------------------------------------------------------------------------------------

def test_each_cell_records_the_baseline_as_run_does(tmp_path, private_cache):
    rows = sweep(out=str(tmp_path / "s"), controllers=["tag", "none"], metrics=["rouge"], limit=3, baseline="none")
    recorded = [json.loads((tmp_path / "s" / row["run"] / "results.json").read_text()) for row in rows]
    alone = ctrlkit.run(controller="tag", metrics=["rouge"], limit=3, baseline="none")
    assert recorded[0]["baseline"] == alone.results["baseline"]
    assert recorded[0]["metrics"] == alone.metrics
    assert recorded[1]["baseline"] is None  # the baseline's own cell, as run records it
    samples = (tmp_path / "s" / rows[0]["run"] / "samples.jsonl").read_text().splitlines()
    assert json.loads(samples[0])["baseline"] == alone.samples[0]["baseline"]
    again = sweep(out=str(tmp_path / "s"), controllers=["tag", "none"], metrics=["rouge"], limit=3, baseline="none")
    assert all(row["reused"] for row in again)


def test_a_cell_without_the_baseline_asked_for_is_not_reused():
    config = {"dataset": "sample", "controller": "tag", "backbone": "extractive", "metrics": ["rouge"], "judge": None,
              "limit": 2, "seed": 0, "batch_size": 16, "split": "test", "options": {}, "baseline": None,
              "data_digest": None, "topics_digest": None, "backbone_digest": "b", "data": None, "topics": None,
              "bootstrap": {"resamples": 1000, "seed": 0}}
    arguments = {key: config[key] for key in ("dataset", "controller", "backbone", "metrics", "judge", "limit", "seed",
                                              "batch_size", "split", "options", "data", "topics")}
    arguments["bootstrap"] = 1000
    digests = {"data": None, "topics": None, "backbone": "b"}
    assert same_configuration(config, {**arguments, "baseline": None}, digests)
    assert same_configuration(config, {**arguments, "baseline": "tag"}, digests)  # the controller itself
    assert not same_configuration(config, {**arguments, "baseline": "none"}, digests)
    assert not same_configuration(config, {**arguments, "baseline": None, "bootstrap": 200}, digests)  # rescored


class _DeviceModel(ctrlkit.Backbone):
    options = (ctrlkit.Option("device", str, "", "torch device"),)

    def generate(self, inputs):
        return ["Sentence one is here." for _ in inputs]


class _DeviceModels:
    @ctrlkit.hookimpl
    def register_backbones(self, register):
        register("device-model", _DeviceModel)


def test_device_is_set_on_every_backbone_that_takes_one(tmp_path, private_cache, throwaway_plugins):
    throwaway_plugins(_DeviceModels(), "device-models")
    rows = sweep(out=str(tmp_path / "s"), controllers=["none"], metrics=["rouge"], limit=2,
                 backbones=["extractive", "device-model"], device="cuda:1")
    options = [json.loads((tmp_path / "s" / row["run"] / "results.json").read_text())["config"]["options"]
               for row in rows]
    assert "device" not in options[0]["extractive"] and options[1]["device-model"]["device"] == "cuda:1"
    assert json.loads((tmp_path / "s" / "sweep.json").read_text())["settings"]["device"] == "cuda:1"
    # named by kind, so the hf dataset in the same sweep never receives it
    assert with_device({"hf": {"dtype": "float32"}}, ["extractive", "hf:some/model"], "cpu") == {
        "hf": {"dtype": "float32"}, "backbone:hf": {"device": "cpu"}}


def test_a_device_no_backbone_takes_is_one_line(tmp_path):
    result = invoke_ctrlkit("sweep", "--controllers", "none", "--device", "cpu", "-o", str(tmp_path / "s"))
    assert result.returncode == 1
    assert result.stderr == "Error: device 'cpu': no backbone of the sweep takes a device (extractive)\n"
    assert not (tmp_path / "s").exists()


def test_no_cache_generates_everything_again_and_records_no_cache(tmp_path, private_cache):
    command = ["sweep", "--controllers", "none", "--metrics", "rouge", "--limit", "2"]
    env = {"CTRLKIT_CACHE_DIR": str(private_cache)}
    result = invoke_ctrlkit(*command, "--no-cache", "-o", str(tmp_path / "s"), env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "s" / "cells" / "sample--extractive--none" / "results.json").read_text())[
        "cache"] is None
    assert not private_cache.exists()
    config = tmp_path / "c.toml"
    config.write_text('controllers = "none"\nmetrics = "rouge"\nlimit = 2\ncache = false\n')
    result = invoke_ctrlkit("sweep", "--config", str(config), "-o", str(tmp_path / "t"), env=env)
    assert result.returncode == 0, result.stderr
    assert not private_cache.exists()


@pytest.mark.parametrize("line,message", [
    ('cache = "no"', "setting 'cache' must be true or false, got the string 'no'"),
    ("device = 1", "setting 'device' must be a string, got 1"),
    ('baseline = ["none"]', "setting 'baseline' must be a string, got a list"),
])
def test_the_new_settings_are_checked_in_a_config_file(tmp_path, line, message):
    path = tmp_path / "sweep.toml"
    path.write_text(f'controllers = "none"\n{line}\n')
    with pytest.raises(ctrlkit.ConfigurationError) as refused:
        load_config(path)
    assert str(refused.value) == f"{path}: {message}"


def test_the_new_settings_are_read_from_a_config_file(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text('controllers = "tag"\nbaseline = "none"\ndevice = "cpu"\ncache = false\n')
    assert load_config(path) == {"controllers": ["tag"], "baseline": "none", "device": "cpu", "cache": False}


def test_overwrite_removes_only_what_a_sweep_wrote(tmp_path, private_cache):
    # a folder that holds no sweep (no sweep.json) loses nothing, whatever its files are named
    out = tmp_path / "mine"
    (out / "cells" / "my-data").mkdir(parents=True)
    (out / "cells" / "my-data" / "f.txt").write_text("kept")
    for name in ("report.md", "report.html"):
        (out / name).write_text(f"my own {name}")
    sweep(out=str(out), controllers=["none"], metrics=["rouge"], limit=2, overwrite=True)
    for name in ("report.md", "report.html"):  # not the report a sweep's cells running again removes
        assert (out / name).read_text() == f"my own {name}"
    assert (out / "cells" / "my-data" / "f.txt").read_text() == "kept"
    # over a sweep: its cells and its own report go; a folder in cells/ that is no cell, and a
    # report.md of the user's own, stay
    (out / "report.md").write_text("# notes on this sweep")
    sweep(out=str(out), controllers=["tag"], metrics=["rouge"], limit=2, overwrite=True)
    assert sorted(path.name for path in (out / "cells").iterdir()) == ["my-data", "sample--extractive--tag"]
    assert (out / "report.md").read_text() == "# notes on this sweep"


@pytest.mark.hand_made_records
@pytest.mark.parametrize("damage", [{"digests": ["oops"]}, {"digests": {"data": "x"}},
                                    {"settings": {"controllers": [{"a": 1}]}}])
def test_a_damaged_sweep_json_is_one_line(tmp_path, private_cache, damage):
    out = tmp_path / "s"
    sweep(out=str(out), controllers=["none"], metrics=["rouge"], limit=2)
    recorded = json.loads((out / "sweep.json").read_text())
    recorded.update(damage)
    (out / "sweep.json").write_text(json.dumps(recorded))
    with pytest.raises(CtrlkitError, match=r"sweep.json: .*, so it is not known what the sweep there ran; choose "
                                           r"another --out, or pass --overwrite to replace it$"):
        sweep(out=str(out), controllers=["none"], metrics=["rouge"], limit=2)
