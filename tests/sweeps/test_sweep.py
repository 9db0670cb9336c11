"""The generation cache, resume after SIGKILL, and sweeps."""

import json
import signal
import subprocess
import sys
import time

import pytest

import ctrlkit
from ctrlkit.sweeps.config import load_config
from ctrlkit.sweeps.sweep import sweep

from helpers.chat_server import JsonHandler, serving
from helpers import invoke_ctrlkit
from helpers.slow_backbone import cached_generations, slow_backbone


def test_a_second_identical_run_generates_nothing(private_cache):
    first = ctrlkit.run(controller="tag", metrics=["stas"], limit=12)
    assert first.results["cache"] == {"hits": 0, "misses": 24}  # tag and the none baseline
    second = ctrlkit.run(controller="tag", metrics=["stas"], limit=12)
    assert second.results["cache"] == {"hits": 24, "misses": 0}
    assert [s["prediction"] for s in second.samples] == [s["prediction"] for s in first.samples]
    assert second.metrics == first.metrics
    other = ctrlkit.run(controller="tag", metrics=["stas"], limit=12, options={"extractive": {"max_words": 30}})
    assert other.results["cache"]["misses"] == 24  # another backbone setting is another cache key
    uncached = ctrlkit.run(controller="tag", metrics=["stas"], limit=12, cache=False)
    assert uncached.results["cache"] is None and uncached.metrics == first.metrics


def test_a_second_identical_sweep_generates_nothing(private_cache, tmp_path):
    arguments = dict(out=str(tmp_path / "sweep"), controllers=["none", "prepend", "tag"], metrics=["stas"], limit=10)
    first = sweep(**arguments)
    assert sum(row["cache"]["misses"] for row in first) == 30
    again = sweep(**arguments)
    assert all(row["reused"] for row in again) and not any(row["reused"] for row in first)
    assert [{**row, "reused": False} for row in again] == first  # cells reused as they are
    more = sweep(**{**arguments, "metrics": ["stas", "rouge"]})  # one more metric: cells rerun from the cache
    assert sum(row["cache"]["misses"] for row in more) == 0 and sum(row["cache"]["hits"] for row in more) == 30
    assert all(set(row["metrics"]) == {"stas", "rouge"} for row in more)
    table = json.loads((tmp_path / "sweep" / "table.json").read_text())
    assert [row["controller"] for row in table["rows"]] == ["none", "prepend", "tag"]
    [group] = table["best"]
    assert group["values"]["stas"] == max(row["metrics"]["stas"]["stas"] for row in more)
    markdown = (tmp_path / "sweep" / "table.md").read_text()
    assert f"**{group['values']['stas']:.4f}**" in markdown
    csv_lines = (tmp_path / "sweep" / "table.csv").read_text().splitlines()
    assert csv_lines[0].startswith("dataset,backbone,controller,stas,stas.above_threshold") and len(csv_lines) == 4


def test_sweep_options_reach_the_cells_that_use_them_and_typos_are_refused(private_cache, tmp_path):
    rows = sweep(out=str(tmp_path / "s"), controllers=["none", "tag"], metrics=["stas"], limit=6,
                 options={"tag": {"top_n": 20}})
    assert len(rows) == 2
    cell = json.loads((tmp_path / "s" / rows[1]["run"] / "results.json").read_text())
    assert cell["config"]["options"]["tag"]["top_n"] == 20 and cell["config"]["limit"] == 6
    with pytest.raises(ctrlkit.OptionError, match="no component named 'tga'"):
        sweep(out=str(tmp_path / "t"), controllers=["tag"], metrics=["stas"], options={"tga": {"top_n": 5}})


def test_sweep_config_files_are_data(tmp_path):
    (tmp_path / "s.toml").write_text('controllers = ["none", "tag"]\nmetrics = ["stas"]\nlimit = 4\n')
    assert load_config(tmp_path / "s.toml") == {"controllers": ["none", "tag"], "metrics": ["stas"], "limit": 4}
    (tmp_path / "bad.toml").write_text('controlers = ["none"]\n')
    with pytest.raises(ctrlkit.ConfigurationError, match="unknown setting 'controlers'"):
        load_config(tmp_path / "bad.toml")
    yaml = pytest.importorskip("yaml")
    (tmp_path / "s.yaml").write_text("controllers: [none]\nmetrics: [stas]\n")
    assert load_config(tmp_path / "s.yaml") == {"controllers": ["none"], "metrics": ["stas"]}
    (tmp_path / "evil.yaml").write_text("controllers: !!python/object/apply:os.system ['echo pwned']\n")
    with pytest.raises(ctrlkit.ConfigurationError, match="cannot read the sweep configuration"):
        load_config(tmp_path / "evil.yaml")
    assert yaml


def test_the_sweep_command(private_cache, tmp_path):
    (tmp_path / "s.toml").write_text('controllers = ["none", "tag"]\nmetrics = ["stas"]\nlimit = 4\n')
    result = invoke_ctrlkit("sweep", "--config", str(tmp_path / "s.toml"), "--controllers", "none,prepend",
                            "-o", str(tmp_path / "out"), env={"CTRLKIT_CACHE_DIR": str(private_cache)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("| dataset | backbone | controller | stas |")
    rows = [line for line in result.stdout.splitlines() if line.startswith("|")][2:]  # a note follows the table
    assert [line.split("|")[3].strip() for line in rows] == ["none", "prepend"]


def test_a_run_killed_with_sigkill_resumes_to_the_same_results(tmp_path):
    env = slow_backbone(tmp_path)
    command = [sys.executable, "-m", "ctrlkit", "run", "-b", "slow", "-c", "tag", "-m", "stas", "-m", "rouge",
               "--limit", "48", "--batch-size", "4", "--no-baseline"]
    # the uninterrupted reference (uncached: it neither reads nor fills the cache) beside the run to be killed
    with (tmp_path / "whole.err").open("w") as errors:
        whole = subprocess.Popen([*command, "--no-cache", "-o", str(tmp_path / "whole")], env=env,
                                 stdout=subprocess.DEVNULL, stderr=errors)
    process = subprocess.Popen([*command, "-o", str(tmp_path / "run")], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while cached_generations(tmp_path / "cache") < 12 and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    done_before_kill = cached_generations(tmp_path / "cache")
    assert 12 <= done_before_kill < 48, "the kill must land midway"
    assert not (tmp_path / "run" / "results.json").exists()

    resumed = subprocess.run([*command, "-o", str(tmp_path / "run")], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["cache"] == {"hits": done_before_kill, "misses": 48 - done_before_kill}
    assert whole.wait(timeout=300) == 0, (tmp_path / "whole.err").read_text()
    assert json.loads((tmp_path / "whole" / "results.json").read_text())["metrics"] == results["metrics"]
    assert [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()] == \
        [json.loads(line) for line in (tmp_path / "whole" / "samples.jsonl").read_text().splitlines()]


# slow: two whole runs of a slow backbone; the cache shared by several processes at once is checked fast by
# test_judge_metrics.py::test_cache_is_safe_for_several_processes_at_once
@pytest.mark.slow
def test_two_processes_share_the_cache_at_once(tmp_path):
    env = slow_backbone(tmp_path)
    runs = [subprocess.Popen([sys.executable, "-m", "ctrlkit", "run", "-b", "slow", "-c", controller, "-m", "stas",
                              "--limit", "24", "--batch-size", "2", "--no-baseline", "-o", str(tmp_path / controller)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for controller in ("tag", "prepend")]
    for process in runs:
        assert process.wait(timeout=300) == 0, process.stderr.read()
    assert cached_generations(tmp_path / "cache") == 48


class _EchoSystem(JsonHandler):
    """A chat server whose summary is the system message it was sent."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        system = next(m["content"] for m in body["messages"] if m["role"] == "system")
        self.reply(200, {"choices": [{"message": {"role": "assistant", "content": system}}]})


def test_a_prompt_file_edited_in_place_runs_its_cell_again(private_cache, tmp_path):
    """A prompt file is compared by the digest its cell recorded: the same path with other bytes is
    another cell (before, the cell of the old text was reused)."""
    system = tmp_path / "system.txt"
    system.write_text("Write about sport.", encoding="utf-8")
    with serving(_EchoSystem) as server:
        def once(path):
            options = {"prompt": {"system_file": str(path)}, "openai": {"base_url": server.url, "backoff": 0.01}}
            return sweep(out=str(tmp_path / "s"), controllers=["prompt"], backbones=["openai:m"], metrics=["stats"],
                         limit=2, options=options, cache=False)

        [first] = once(system)
        system.write_text("Write about politics.", encoding="utf-8")
        [edited] = once(system)
        [again] = once(system)
    assert not first["reused"] and not edited["reused"] and again["reused"]
    samples = [json.loads(line) for line in
               (tmp_path / "s" / edited["run"] / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {sample["prediction"] for sample in samples} == {"Write about politics."}
