"""`ctrlkit plugin new`: the distribution it writes passes its own tests, before and after it is
installed, and is found through its entry point once installed."""

import importlib.util
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from ctrlkit.cli import cli
from ctrlkit.scaffold import plugin_names

from helpers import run_ctrlkit

FILES = ["README.md", "ctrlkit_my_plugin/__init__.py", "ctrlkit_my_plugin/controller.py",
         "ctrlkit_my_plugin/metric.py", "ctrlkit_my_plugin/plugin.py", "pyproject.toml", "tests/test_plugin.py"]


@pytest.fixture(scope="module")
def scaffolded(tmp_path_factory):
    """The folder `ctrlkit plugin new my_plugin` writes."""
    root = tmp_path_factory.mktemp("scaffold")
    result = CliRunner().invoke(cli, ["plugin", "new", "my_plugin", "--dir", str(root)])
    assert result.exit_code == 0, result.output
    folder = root / "ctrlkit-my-plugin"
    assert result.output == f"wrote {folder}; next: pip install -e '{folder}[test]' && python -m pytest {folder}\n"
    return folder


def _pytest(folder, pythonpath):
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(folder)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(map(str, pythonpath))})


def test_it_writes_a_distribution_with_every_placeholder_filled(scaffolded):
    written = sorted(str(path.relative_to(scaffolded)) for path in scaffolded.rglob("*") if path.is_file())
    assert written == FILES
    for name in FILES:
        text = (scaffolded / name).read_text(encoding="utf-8")
        assert "$" not in text, name
        if name.endswith(".py"):
            compile(text, name, "exec")
    pyproject = (scaffolded / "pyproject.toml").read_text()
    assert '[project.entry-points.ctrlkit]\nctrlkit-my-plugin = "ctrlkit_my_plugin.plugin"' in pyproject
    assert 'register("my-plugin-focus", "ctrlkit_my_plugin.controller:Focus")' in (
        scaffolded / "ctrlkit_my_plugin" / "plugin.py").read_text()


def test_its_tests_pass_before_it_is_installed(scaffolded):
    result = _pytest(scaffolded, [scaffolded])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "5 passed" in result.stdout


# slow: installs with pip and runs the plugin's tests in a fresh process; test_its_tests_pass_before_it_is_installed
# and test_example_plugin.py (an installed plugin found through its entry point) stay in make test-fast
@pytest.mark.slow
def test_installed_it_is_found_through_its_entry_point_and_its_tests_pass(scaffolded, tmp_path):
    # offline when this environment has the build backend (as tests/docs_and_install/test_example_plugin.py does)
    offline = ["--no-build-isolation", "--no-index"] if importlib.util.find_spec("setuptools") else []
    source = tmp_path / "source"
    source.mkdir()
    for name in FILES:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes((scaffolded / name).read_bytes())
    installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", *offline, "--no-cache-dir",
                                "--quiet", "--target", str(tmp_path / "site"), str(source)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listing = run_ctrlkit("list", env={"PYTHONPATH": str(tmp_path / "site")})
    assert "my-plugin-focus  (ctrlkit-my-plugin)" in listing.stdout
    assert "my-plugin-compression  (ctrlkit-my-plugin)" in listing.stdout
    result = _pytest(source / "tests", [tmp_path / "site"])
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_existing_folder_is_refused_in_one_line(scaffolded):
    result = run_ctrlkit("plugin", "new", "my-plugin", "--dir", str(scaffolded.parent))
    assert result.returncode == 1
    assert result.stderr == f"Error: {scaffolded} already exists: choose another name or --dir\n"


@pytest.mark.parametrize("name", ["my plugin", "1st", "_x", "a--b", "tag!", "é"])
def test_an_invalid_name_is_refused_in_one_line(name, tmp_path):
    result = run_ctrlkit("plugin", "new", name, "--dir", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr == (f"Error: invalid plugin name {name!r}: use letters, digits, '-' and '_', starting "
                             "with a letter (e.g. my-plugin)\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name, dist, package", [
    ("my_plugin", "ctrlkit-my-plugin", "ctrlkit_my_plugin"),
    ("Fancy-Lengths2", "ctrlkit-fancy-lengths2", "ctrlkit_fancy_lengths2"),
    ("ctrlkit-novelty", "ctrlkit-novelty", "ctrlkit_novelty"),
])
def test_names_are_normalised(name, dist, package):
    names = plugin_names(name)
    assert (names["dist"], names["package"]) == (dist, package)
    assert package.isidentifier()
