"""``sweep --sample N``: every cell reads the N examples ``run --sample N`` draws with the same seed,
the draw is a setting of the sweep folder, and a setting given on the command line wins over a
configuration file's (``--sample`` over the file's ``limit``, ``--set`` option by option)."""

import json
from pathlib import Path

import pytest

import ctrlkit
from ctrlkit.sweeps.config import load_config
from ctrlkit.sweeps.sweep import sweep

from helpers import invoke_ctrlkit


def _samples(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]


def test_every_cell_reads_the_examples_run_draws_and_scores_them_as_run_does(tmp_path, private_cache):
    out = tmp_path / "s"
    rows = sweep(out=str(out), controllers=["none", "tag"], metrics=["rouge", "stas"], sample=5, seed=3)
    first_five = [example.id for example in ctrlkit.get_dataset("sample").load("test")[:5]]
    for row in rows:
        alone = ctrlkit.run(controller=row["controller"], metrics=["rouge", "stas"], sample=5, seed=3, baseline=None)
        ids = [sample["id"] for sample in _samples(out / row["run"])]
        assert ids == [sample["id"] for sample in alone.samples] and len(ids) == 5
        assert ids != first_five  # a random draw, not the first five
        assert row["metrics"] == alone.metrics
        config = json.loads((out / row["run"] / "results.json").read_text())["config"]
        assert config["sample"] == 5 and config["limit"] is None and config["seed"] == 3
    assert json.loads((out / "sweep.json").read_text())["settings"]["sample"] == 5


def test_another_sample_size_is_another_setting_and_the_same_one_resumes(tmp_path, private_cache):
    arguments = dict(out=str(tmp_path / "s"), controllers=["none"], metrics=["rouge"], sample=4)
    sweep(**arguments)
    assert [row["reused"] for row in sweep(**arguments)] == [True]
    with pytest.raises(ctrlkit.CtrlkitError, match=r"holds a sweep with other settings \(sample\)"):
        sweep(**{**arguments, "sample": 3})
    with pytest.raises(ctrlkit.CtrlkitError, match=r"holds a sweep with other settings \(limit, sample\)"):
        sweep(**{**arguments, "sample": None, "limit": 4})


def test_sample_and_limit_together_are_refused_in_a_call_and_in_a_file(tmp_path):
    with pytest.raises(ctrlkit.ConfigurationError, match="^sweep: settings 'limit' and 'sample' cannot both be given"):
        sweep(out=str(tmp_path / "s"), controllers=["none"], sample=3, limit=2)
    path = tmp_path / "s.toml"
    path.write_text('controllers = "none"\nsample = 3\nlimit = 2\n')
    with pytest.raises(ctrlkit.ConfigurationError, match=f"^{path}: settings 'limit' and 'sample'"):
        load_config(path)
    path.write_text('controllers = "none"\nsample = 0\n')
    with pytest.raises(ctrlkit.ConfigurationError, match="setting 'sample' must be at least 1, got 0"):
        load_config(path)
    assert not (tmp_path / "s").exists()


def test_the_command_line_wins_over_the_file_sample_over_limit_and_set_option_by_option(tmp_path, private_cache):
    path = tmp_path / "s.toml"
    path.write_text('controllers = ["tag"]\nmetrics = "stas"\nlimit = 4\n'
                    '[options.tag]\ntop_n = 20\nstop_words = false\n')
    result = invoke_ctrlkit("sweep", "--config", str(path), "--sample", "3", "--seed", "1", "--set", "tag.top_n=7",
                            "-o", str(tmp_path / "out"), env={"CTRLKIT_CACHE_DIR": str(private_cache)})
    assert result.returncode == 0, result.stderr
    [row] = json.loads((tmp_path / "out" / "table.json").read_text())["rows"]
    config = json.loads((tmp_path / "out" / row["run"] / "results.json").read_text())["config"]
    assert (config["sample"], config["limit"], config["seed"]) == (3, None, 1)
    assert config["options"]["tag"]["top_n"] == 7 and config["options"]["tag"]["stop_words"] is False
    alone = ctrlkit.run(controller="tag", metrics=["stas"], sample=3, seed=1, baseline=None)
    assert [sample["id"] for sample in _samples(tmp_path / "out" / row["run"])] == [s["id"] for s in alone.samples]
