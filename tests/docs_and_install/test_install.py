"""Installing without make: the four distributions are built as wheels and installed with pip into
a fresh virtual environment without torch (dependencies from the package index), where the
embedded default, `ctrlkit run` on the bundled sample with the extractive backbone, gives the
numbers this environment gives. Slow (a pip install); pip's own cache makes a rerun quicker.
The table of extras in docs/installing.md lists what the pyproject files declare."""

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import ctrlkit

from helpers import ROOT

PLUGINS = ("plugins/controllers", "plugins/metrics", "plugins/datasets")
# what the root distribution (ctrlkit, the core) is built from
CORE_FILES = ("pyproject.toml", "README.md", "core")
COPY_IGNORING = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")


def _clean_env(**extra) -> dict:
    """The environment of a command in the fresh virtual environment: without PYTHONPATH, which
    would put this checkout's sources in place of the installed distributions."""
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    return {**env, **extra}


def _pip(python, *args, timeout=900):
    return subprocess.run([str(python), "-m", "pip", *args], capture_output=True, text=True, timeout=timeout,
                          env=_clean_env())


def _copy_sources(target: Path) -> list[Path]:
    """The four distributions' sources, copied so that building leaves no build/ or egg-info in the
    checkout (and no stale build/ of the checkout ends up in a wheel)."""
    target.mkdir()
    for name in CORE_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=COPY_IGNORING)
        else:
            shutil.copy2(source, target / name)
    for plugin in PLUGINS:
        shutil.copytree(ROOT / plugin, target / plugin, ignore=COPY_IGNORING)
    return [target, *(target / plugin for plugin in PLUGINS)]


def _builds_here(sources: list[Path]) -> bool:
    """Whether this environment has what each pyproject's ``[build-system] requires`` asks for
    (``NAME>=VERSION``). Then the wheels are built by its backend (``--no-build-isolation``): the
    same files an isolated build writes, without installing the backend anew into a build
    environment for each of the four (half a minute here); otherwise they are built in isolation."""
    for source in sources:
        requires = tomllib.loads((source / "pyproject.toml").read_text(encoding="utf-8"))["build-system"]["requires"]
        for requirement in requires:
            form = re.fullmatch(r"([\w.-]+)>=([\d.]+)", requirement)
            if not form:
                return False
            try:
                have = importlib.metadata.version(form[1])
            except importlib.metadata.PackageNotFoundError:
                return False
            if _release(have) < _release(form[2]):
                return False
    return True


def _release(version: str) -> tuple[int, ...]:
    """``"84.2.1"`` -> ``(84, 2, 1)``; a pre-release suffix (``"1rc1"``) counts as its number."""
    return tuple(int(re.match(r"\d*", part)[0] or 0) for part in version.split("."))


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    """A fresh virtual environment holding the four wheels and what they depend on, nothing else."""
    root = tmp_path_factory.mktemp("install")
    probe = _pip(sys.executable, "download", "--no-deps", "--dest", str(root / "probe"), "pluggy>=1.3", timeout=180)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"pip cannot reach a package index here, so a fresh install cannot be tested: {last}")
    sources = _copy_sources(root / "src")
    isolation = ["--no-build-isolation"] if _builds_here(sources) else []
    built = _pip(sys.executable, "wheel", "--no-deps", *isolation, "--wheel-dir", str(root / "wheels"),
                 *map(str, sources))
    assert built.returncode == 0, built.stderr[-3000:]
    wheels = sorted((root / "wheels").glob("*.whl"))
    assert [wheel.name.split("-")[0] for wheel in wheels] == [
        "ctrlkit", "ctrlkit_controllers", "ctrlkit_datasets", "ctrlkit_metrics"]
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=300, env=_clean_env())
    python = root / "venv" / "bin" / "python"
    installed = _pip(python, "install", *map(str, wheels))
    assert installed.returncode == 0, installed.stderr[-3000:]
    return python


def _in_venv(python: Path, *args, cache: Path):
    return subprocess.run([str(python), *args], capture_output=True, text=True, timeout=600,
                          env=_clean_env(CTRLKIT_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1"))


def _flat(values: dict, prefix: str = "") -> dict:
    """``{"rouge": {"rouge1": x}}`` -> ``{"rouge.rouge1": x}``."""
    flat = {}
    for key, value in values.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _same_numbers(fresh: dict, here: dict) -> None:
    """Equal up to the last bits of a float sum (another numpy or scipy release may add in
    another order); the summaries themselves are compared exactly."""
    assert _flat(fresh) == pytest.approx(_flat(here), rel=1e-9, abs=1e-12)


@pytest.mark.slow
def test_the_fresh_environment_holds_the_wheels_and_no_torch(venv, tmp_path):
    probe = _in_venv(venv, "-c", "import importlib.util, json, ctrlkit; print(json.dumps("
                     "[ctrlkit.__file__, [n for n in ('torch', 'transformers') if importlib.util.find_spec(n)]]))",
                     cache=tmp_path / "cache")
    assert probe.returncode == 0, probe.stderr
    location, heavy = json.loads(probe.stdout)
    assert Path(location).is_relative_to(venv.parent.parent), location  # the wheel, not this checkout
    assert heavy == []
    torch = _in_venv(venv, "-c", "import torch", cache=tmp_path / "cache")
    assert torch.returncode != 0 and "No module named 'torch'" in torch.stderr
    plugins = _in_venv(venv, "-m", "ctrlkit", "plugins", cache=tmp_path / "cache")
    assert plugins.returncode == 0, plugins.stderr
    for distribution in ("ctrlkit-controllers", "ctrlkit-metrics", "ctrlkit-datasets"):
        assert distribution in plugins.stdout
    recipes = _in_venv(venv, "-m", "ctrlkit", "recipes", cache=tmp_path / "cache")  # package data, installed
    assert recipes.returncode == 0, recipes.stderr
    assert [line.split()[0] for line in recipes.stdout.splitlines()] == [r.name for r in ctrlkit.recipes()]


@pytest.mark.slow
def test_the_default_run_gives_the_numbers_of_this_environment(venv, tmp_path):
    ctrlkit_command = venv.parent / "ctrlkit"
    out = tmp_path / "run"
    result = _in_venv(ctrlkit_command, "run", "--out", str(out), cache=tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    fresh = json.loads((out / "results.json").read_text(encoding="utf-8"))
    here = ctrlkit.run(cache=False)
    assert fresh["n_examples"] == here.results["n_examples"] == 120
    assert set(fresh["metrics"]) == {"rouge", "stas"}
    _same_numbers(fresh["metrics"], here.metrics)
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [sample["prediction"] for sample in samples] == [sample["prediction"] for sample in here.samples]


@pytest.mark.slow
def test_the_library_call_gives_the_numbers_of_this_environment(venv, tmp_path):
    script = ("import json, ctrlkit\n"
              "result = ctrlkit.run(controller='tag', metrics=['stas', 'rouge'], cache=False)\n"
              "print(json.dumps({'metrics': result.metrics, 'baseline': result.results['baseline']['metrics'],\n"
              "                  'predictions': [sample['prediction'] for sample in result.samples]}))\n")
    result = _in_venv(venv, "-c", script, cache=tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    fresh = json.loads(result.stdout)
    here = ctrlkit.run(controller="tag", metrics=["stas", "rouge"], cache=False)
    _same_numbers(fresh["metrics"], here.metrics)
    _same_numbers(fresh["baseline"], here.results["baseline"]["metrics"])
    assert fresh["predictions"] == [sample["prediction"] for sample in here.samples]
    assert fresh["metrics"]["stas"]["stas"] > fresh["baseline"]["stas"]["stas"]  # tag steers toward the topic


@pytest.mark.slow
@pytest.mark.parametrize("command", [
    ["run", "-b", "hf:facebook/bart-base", "--limit", "2"],
    ["train", "-b", "hf:facebook/bart-base", "--split", "test", "--max-steps", "1"],
])
def test_without_torch_the_transformers_commands_say_what_to_install_in_one_line(venv, tmp_path, command):
    result = _in_venv(venv.parent / "ctrlkit", *command, "--out", str(tmp_path / "out"), cache=tmp_path / "cache")
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "Traceback" not in result.stderr, result.stderr
    assert "needs torch and transformers: pip install 'ctrlkit[hf]'" in result.stderr


def _names(requirements) -> set[str]:
    return {re.match(r"[\w.-]+", requirement)[0].lower().replace("_", "-") for requirement in requirements}


def test_the_table_of_extras_in_the_install_guide_lists_what_each_distribution_brings():
    declared = {}
    for folder in (ROOT, *(ROOT / plugin for plugin in PLUGINS)):
        project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        brings = _names(project.get("dependencies", [])) - {"ctrlkit"}
        if brings:
            declared[(project["name"], "")] = brings
        for extra, requirements in project.get("optional-dependencies", {}).items():
            declared[(project["name"], extra)] = _names(requirements)
    text = (ROOT / "docs" / "installing.md").read_text(encoding="utf-8")
    section = text.split("\n## What each extra brings\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w-]+)`[^|]*\| (?:`(\w+)`)? *\| ([^|]+) \|", section, re.MULTILINE)
    documented = {(name, extra): {item.split()[0].lower() for item in re.sub(r"\([^)]*\)", "", brings).split(",")}
                  for name, extra, brings in rows}
    assert documented == declared
