"""Ctrl-C, resuming, progress lines off a terminal, and the libraries kept quiet (issue 15)."""

import io
import json
import logging
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from ctrlkit.progress import Progress
from ctrlkit.quiet import quiet_libraries
from ctrlkit.sweeps.sweep import sweep

from helpers.slow_backbone import cached_generations, slow_backbone


@pytest.fixture
def slow_env(tmp_path):
    return slow_backbone(tmp_path)


RUN = [sys.executable, "-m", "ctrlkit", "run", "-b", "slow", "-c", "tag", "-m", "stas", "--limit", "24",
       "--batch-size", "2", "--no-baseline"]


def test_ctrl_c_exits_130_with_one_line_and_the_rerun_says_how_much_it_resumes(slow_env, tmp_path):
    out = str(tmp_path / "run")
    process = subprocess.Popen([*RUN, "-o", out], env=slow_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.time() + 120
    while cached_generations(tmp_path / "cache") < 4 and time.time() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines() == ["Interrupted; rerun the same command to resume."], stderr
    done = cached_generations(tmp_path / "cache")
    assert 4 <= done < 24, "the interrupt must land midway"

    resumed = subprocess.run([*RUN, "-o", out], env={**slow_env, "CTRLKIT_PROGRESS_SECONDS": "0.2"},
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stderr.splitlines()
    assert lines[0] == f"ctrlkit: generate [tag]: resuming: {done} of 24 already done (cached)"
    assert json.loads((tmp_path / "run" / "results.json").read_text())["cache"] == {"hits": done,
                                                                                  "misses": 24 - done}
    # off a terminal: plain progress lines, counting up to the generations left, then the last one
    counts = [int(line.split(": ")[2].split("/")[0]) for line in lines if line.startswith("ctrlkit: generate [tag]: ")
              and "elapsed" in line]
    assert len(counts) >= 2 and counts == sorted(counts) and counts[-1] == 24 - done, resumed.stderr
    assert all(f"/{24 - done} examples, 0:" in line for line in lines if "elapsed" in line)


def test_a_resumed_sweep_says_how_many_cells_are_done(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    arguments = dict(out=str(tmp_path / "sweep"), metrics=["stas"], limit=3, progress=True)
    sweep(controllers=["none", "tag"], **arguments)
    first = capsys.readouterr().err
    assert "resuming" not in first
    assert "ctrlkit: sweep: cell 2 of 2: controller tag, backbone extractive, dataset sample" in first
    rows = sweep(controllers=["none", "tag", "prepend"], **arguments)
    again = capsys.readouterr().err.splitlines()
    assert again[0] == "ctrlkit: sweep: resuming: 2 of 3 cells already done"
    assert [line for line in again if "sweep: cell" in line] == [
        "ctrlkit: sweep: cell 3 of 3: controller prepend, backbone extractive, dataset sample"]
    assert [row["reused"] for row in rows] == [True, True, False]


def test_progress_lines_off_a_terminal(monkeypatch, capsys):
    monkeypatch.setenv("CTRLKIT_PROGRESS_SECONDS", "0.05")
    with Progress("work [x]", 3, "steps") as bar:
        time.sleep(0.2)
        bar.update(2, "loss 1.2500")
        time.sleep(0.2)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "ctrlkit: work [x]: 0/3 steps, 0:00 elapsed"
    assert lines[-1] == "ctrlkit: work [x]: 2/3 steps, loss 1.2500, 0:00 elapsed"
    assert len(lines) >= 4
    with Progress("quiet", 3, "steps", enabled=False):
        time.sleep(0.2)
    assert capsys.readouterr().err == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_warning_logged_while_a_bar_is_drawn_gets_a_line_of_its_own(monkeypatch):
    """On a terminal, with no logging set up (pytest's capture is kept out by not propagating),
    Python's last-resort handler wrote the warning after the bar's text, on the bar's line."""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    logger = logging.getLogger("ctrlkit")
    monkeypatch.setattr(logger, "propagate", False)
    with Progress("score", 3, "metrics") as outer:
        outer.update(1)
        with Progress("judge", 2, "prompts") as inner:
            inner.update(1)
            logger.warning("ctrlkit: judge prompts cut")
        logger.warning("ctrlkit: a second warning")
        outer.update(2)
    lines = re.split(r"[\r\n]", re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", terminal.getvalue()))  # tqdm's cursor moves
    assert "ctrlkit: judge prompts cut" in lines and "ctrlkit: a second warning" in lines
    assert not logger.handlers  # the bars leave no handler behind
    logger.warning("ctrlkit: after the bars")
    assert terminal.getvalue().endswith("ctrlkit: after the bars\n")


def test_a_users_own_logging_is_left_to_take_the_warnings_during_a_bar(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    logger = logging.getLogger("ctrlkit")
    monkeypatch.setattr(logger, "propagate", False)
    taken = []
    own = logging.Handler()
    own.emit = taken.append
    logger.addHandler(own)
    try:
        with Progress("score", 1, "metrics"):
            logger.warning("ctrlkit: one")
            assert logger.handlers == [own]
    finally:
        logger.removeHandler(own)
    assert [record.getMessage() for record in taken] == ["ctrlkit: one"]
    assert "ctrlkit: one" not in terminal.getvalue()


def test_quiet_libraries_restores_what_was_set_before():
    transformers_logging = pytest.importorskip("transformers.utils.logging")
    from huggingface_hub import utils as hub_utils

    transformers_logging.set_verbosity_info()
    transformers_logging.enable_progress_bar()
    try:
        with quiet_libraries():
            assert not transformers_logging.is_progress_bar_enabled()
            assert hub_utils.are_progress_bars_disabled()
            assert logging.getLogger("transformers").getEffectiveLevel() == logging.ERROR
            with quiet_libraries():  # nested (a sweep's run): the outer block restores
                pass
            assert not transformers_logging.is_progress_bar_enabled()
        assert transformers_logging.is_progress_bar_enabled() and not hub_utils.are_progress_bars_disabled()
        assert transformers_logging.get_verbosity() == logging.INFO
    finally:
        transformers_logging.set_verbosity_warning()


def test_under_verbose_quiet_libraries_leaves_the_libraries_as_they_are(monkeypatch):
    transformers_logging = pytest.importorskip("transformers.utils.logging")

    monkeypatch.setenv("CTRLKIT_VERBOSE", "1")  # what ctrlkit --verbose sets
    transformers_logging.set_verbosity_info()
    transformers_logging.enable_progress_bar()
    try:
        with quiet_libraries():
            assert transformers_logging.is_progress_bar_enabled()
            assert logging.getLogger("transformers").getEffectiveLevel() == logging.INFO
    finally:
        transformers_logging.set_verbosity_warning()


def test_a_library_first_imported_during_the_work_is_quieted_then_restored():
    pytest.importorskip("datasets")
    script = textwrap.dedent("""
        import os, sys
        from ctrlkit.quiet import quiet_libraries, quiet_new_imports
        assert "datasets" not in sys.modules
        with quiet_libraries():
            import datasets
            quiet_new_imports()
            inside = datasets.are_progress_bars_disabled(), os.environ.get("DATASETS_VERBOSITY")
        after = datasets.are_progress_bars_disabled(), os.environ.get("DATASETS_VERBOSITY")
        print(inside, after)
    """)
    env = {key: value for key, value in os.environ.items() if not key.endswith(("_VERBOSITY", "PROGRESS_BARS"))}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "(True, 'error') (False, None)"


def test_evaluate_shows_progress_while_a_slow_metric_scores(tmp_path, monkeypatch, capsys, throwaway_plugins):
    import ctrlkit
    from ctrlkit.evaluation import evaluate

    class Slow(ctrlkit.Metric):
        def compute(self, predictions, examples):
            time.sleep(0.3)
            return ctrlkit.MetricResult(per_example={"slow": [1.0] * len(predictions)}, corpus={"slow": 1.0})

    class Plugin:
        @ctrlkit.hookimpl
        def register_metrics(self, register):
            register("slow", Slow)

    throwaway_plugins(Plugin(), "slow-metric")
    rows = [{"id": str(i), "document": f"Document {i}.", "prediction": f"Summary {i}."} for i in range(3)]
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"id": r["id"], "prediction": r["prediction"]}) + "\n" for r in rows))
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": r["id"], "document": r["document"]}) + "\n" for r in rows))
    monkeypatch.setenv("CTRLKIT_PROGRESS_SECONDS", "0.05")
    evaluate(predictions=str(predictions), dataset="jsonl", data=str(data), metrics=["slow"], progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "ctrlkit: score 3 examples: 0/1 metrics, metric 'slow', 0:00 elapsed"
    assert lines[-1] == "ctrlkit: score 3 examples: 1/1 metrics, 0:00 elapsed"


class _InterruptingImport:
    """A meta-path finder that raises KeyboardInterrupt when ``name`` is imported: a Ctrl-C while it loads."""

    def __init__(self, name):
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name:
            raise KeyboardInterrupt
        return None


def test_ctrl_c_while_the_cli_modules_import_exits_130_with_the_one_line(monkeypatch, capsys):
    import ctrlkit.__main__ as entry

    monkeypatch.delitem(sys.modules, "ctrlkit.cli", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_InterruptingImport("ctrlkit.cli"), *sys.meta_path])
    with pytest.raises(SystemExit) as exited:
        entry.main()
    assert exited.value.code == 130
    assert capsys.readouterr().err.splitlines() == ["Interrupted; rerun the same command to resume."]


def test_ctrl_c_while_click_parses_the_arguments_exits_130_not_aborted(monkeypatch, capsys):
    import click

    from ctrlkit import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(click.Group, "make_context", interrupted)  # the group's parsing, under click's own handler
    monkeypatch.setattr(sys, "argv", ["ctrlkit", "list"])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 130
    assert capsys.readouterr().err.splitlines() == ["Interrupted; rerun the same command to resume."]


def test_the_ctrlkit_command_starts_where_python_m_ctrlkit_does():
    import tomllib

    from helpers import ROOT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"]["ctrlkit"] == "ctrlkit.__main__:main"


def test_importing_the_package_loads_none_of_its_modules():
    """``ctrlkit`` and ``python -m ctrlkit`` import the package before the command's own code can
    catch a Ctrl-C: the package loads its modules on first use, so that a Ctrl-C early in a loaded
    machine's start lands in the command's handling, not in a traceback."""
    probe = ("import sys, ctrlkit; "
             "print(sorted(m for m in sys.modules if m.startswith('ctrlkit.') or m in ('pluggy', 'click')))")
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"
