"""The example third-party plugin (examples/ctrlkit-example-plugin) installs, runs, and is removed.

It is installed into a temporary folder put on PYTHONPATH, never into the environment, so the
other tests see ctrlkit as it is. The source is copied first because building writes build/
and *.egg-info beside it.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

import ctrlkit

from helpers import ROOT, run_ctrlkit

EXAMPLE = ROOT / "examples" / "ctrlkit-example-plugin"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The environment of a ctrlkit process that has the example plugin installed."""
    tmp = tmp_path_factory.mktemp("example-plugin")
    source = shutil.copytree(EXAMPLE, tmp / "source", ignore=shutil.ignore_patterns("__pycache__"))
    # Offline when this environment has the build backend; a Python 3.12+ venv comes without
    # setuptools, and then pip fetches it into an isolated build environment.
    offline = ["--no-build-isolation", "--no-index"] if importlib.util.find_spec("setuptools") else []
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", *offline, "--no-cache-dir", "--quiet",
         "--target", str(tmp / "site"), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    yield {"PYTHONPATH": str(tmp / "site")}
    shutil.rmtree(tmp)


def test_its_components_are_listed(installed):
    controllers = run_ctrlkit("list", "controllers", env=installed)
    assert controllers.returncode == 0, controllers.stderr
    assert "length-code  (ctrlkit-example-plugin)  Prepends the length code <len_k>" in controllers.stdout
    assert "--set length-code.max_bins=INT" in controllers.stdout
    metrics = run_ctrlkit("list", "metrics", env=installed)
    assert "novelty  (ctrlkit-example-plugin)  Novel n-gram rate" in metrics.stdout
    rows = {row["name"]: row for row in json.loads(run_ctrlkit("plugins", env=installed).stdout)}
    assert rows["ctrlkit-example-plugin"] == {"name": "ctrlkit-example-plugin", "version": "0.1.0",
                                             "hooks": ["register_controllers", "register_metrics"]}


def test_a_run_uses_both(installed, tmp_path):
    documents = list(dict.fromkeys(example.document for example in ctrlkit.get_dataset("sample").load("test")))
    data = tmp_path / "lengths.jsonl"
    data.write_text("".join(json.dumps({"id": f"d{i}", "document": document, "controls": {"length": words}}) + "\n"
                            for i, (document, words) in enumerate(zip(documents, (30, 80, 130, 900)))))
    out = tmp_path / "run"
    result = run_ctrlkit("run", "-d", "jsonl", "--data", str(data), "-c", "length-code", "-m", "novelty",
                         "--out", str(out), env=installed)
    assert result.returncode == 0, result.stderr
    results = json.loads((out / "results.json").read_text())
    assert results["config"]["controller"] == "length-code"
    assert results["versions"]["plugins"]["ctrlkit-example-plugin"] == "0.1.0"
    novelty = results["metrics"]["novelty"]
    assert 0 <= novelty["novel"] <= 1 and novelty["undefined"] == 0
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 4 and all(sample["scores"]["novelty"]["novel"] is not None for sample in samples)


def test_without_it_the_components_are_unknown():
    assert "length-code" not in run_ctrlkit("list", "controllers").stdout


def test_its_own_tests_pass():
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", str(EXAMPLE / "tests")],
        capture_output=True, text=True, cwd=ROOT, timeout=300, env={**os.environ, "PYTHONPATH": str(EXAMPLE)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
