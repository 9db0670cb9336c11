"""A Ray worker (a sweep cell's task, a run's generation actor) works only with the driver's ctrlkit
install: ctrlkit's and the plugins' versions, and the checkout's commit where both sides know it. The
worker's code runs here, in this process, as a worker would run it; no cluster is needed."""

import functools
import shutil
import subprocess

import pytest

from ctrlkit import ModelInput
from ctrlkit.errors import ConfigurationError
from ctrlkit.executors.ray_generation import GenerationWorker
from ctrlkit.executors.ray_support import check_installed, installed
from ctrlkit.executors.ray_cells import run_on_worker


def test_the_install_names_ctrlkit_and_each_plugin_and_what_one_side_lacks_is_not_compared():
    here = installed()
    assert {"ctrlkit", "git commit", "plugin ctrlkit-controllers", "plugin ctrlkit-metrics"} <= set(here)
    check_installed(here)
    check_installed({**here, "git commit": None})  # a wheel on the driver, or no git there
    check_installed({**here, "plugin ctrlkit-zoo": "1.0"})  # the worker lacks it: a cell naming it fails
    # the driver lacks it as a distribution (it may have registered it in its process)
    check_installed({name: value for name, value in here.items() if name != "plugin ctrlkit-datasets"})


@pytest.mark.parametrize("change", ["ctrlkit", "plugin", "commit"])
def test_another_install_is_refused_in_one_line_that_names_what_differs(change):
    here = installed()
    if change == "commit" and here["git commit"] is None:
        pytest.skip("ctrlkit does not run from a git checkout here")
    driver = {"ctrlkit": {**here, "ctrlkit": "0.0.9"}, "plugin": {**here, "plugin ctrlkit-metrics": "2.0"},
              "commit": {**here, "git commit": "0" * 40}}[change]
    with pytest.raises(ConfigurationError) as refused:
        check_installed(driver)
    message = str(refused.value)
    assert "\n" not in message and message.startswith("--executor ray: node ")
    shown = {"ctrlkit": f"ctrlkit {here['ctrlkit']} (the driver: 0.0.9)",
             "plugin": f"plugin ctrlkit-metrics {here['plugin ctrlkit-metrics']} (the driver: 2.0)",
             "commit": f"git commit {here['git commit']} (the driver: {'0' * 40})"}[change]
    assert f"the driver: {shown}; install the same ctrlkit" in message


def test_a_sweep_cell_and_a_generation_worker_refuse_another_install_before_any_work():
    driver = {**installed(), "ctrlkit": "0.0.9"}
    with pytest.raises(ConfigurationError, match="another ctrlkit install than the driver"):
        run_on_worker({}, {}, False, driver)  # refused before the cell's arguments are read
    worker = GenerationWorker("extractive", {}, False, ".", driver)
    worker.warm_up()
    assert worker.backbone is None
    with pytest.raises(ConfigurationError, match="another ctrlkit install than the driver"):
        worker.generate([], [ModelInput(source="The coach won the final.")], [])
    same = GenerationWorker("extractive", {}, False, ".", installed())
    assert same.generate([], [ModelInput(source="The coach won the final.")], [])["generated"]


def test_plugin_names_are_compared_as_pip_normalizes_them(monkeypatch):
    import ctrlkit.results
    from ctrlkit.executors import ray_support

    monkeypatch.setattr(ctrlkit.results, "versions", lambda: {"ctrlkit": "0.1.0", "git": None, "python": "3",
                                                              "plugins": {"Ctrlkit_Zoo.Extra": "1.0"}})
    monkeypatch.setattr(ray_support, "_installed", functools.cache(ray_support._installed.__wrapped__))
    assert installed() == {"ctrlkit": "0.1.0", "git commit": None, "plugin ctrlkit-zoo-extra": "1.0"}


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_commit_is_ctrlkits_only_where_git_tracks_ctrlkits_files(tmp_path, monkeypatch):
    """A wheel installed in a project's .venv lies inside the project's repository, whose commit
    is not ctrlkit's: results.json and the workers' check would have recorded and compared it."""
    import ctrlkit.results

    def git(*arguments):
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *arguments],
                              capture_output=True, text=True, check=True).stdout.strip()

    git("init", "-q")
    git("commit", "-q", "--allow-empty", "-m", "the project")
    package = tmp_path / ".venv" / "site-packages" / "ctrlkit"
    package.mkdir(parents=True)
    (package / "results.py").write_text("")
    monkeypatch.setattr(ctrlkit.results, "__file__", str(package / "results.py"))
    assert ctrlkit.results._git_commit() is None
    git("add", "-f", ".venv")
    git("commit", "-q", "-m", "ctrlkit itself")
    assert ctrlkit.results._git_commit() == git("rev-parse", "HEAD")
