"""The documented way to try `ctrlkit train` without internet: the commands of the training guide's
"Without a model hub" section (docs/training.md: build a tiny BART from the bundled sample, train,
run, and a training interrupted then resumed) run as written, in a fresh process each."""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import pytest

from helpers import ROOT

pytest.importorskip("torch", reason="training needs torch")
pytest.importorskip("transformers", reason="training needs transformers")
pytest.importorskip("tokenizers", reason="the tiny model's tokenizer is trained with tokenizers")

pytestmark = pytest.mark.slow


def _documented_commands() -> list[str]:
    """The command lines of the block under "Without a model hub" in docs/training.md."""
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    section = text.split("\n## Without a model hub\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    assert block, "docs/training.md has no command block under '## Without a model hub'"
    return block.group(1).splitlines()


def _argv(line: str) -> list[str]:
    """A documented line as this interpreter runs it (the example script from this checkout)."""
    words = shlex.split(line)
    if words[0] == "python":
        return [sys.executable, str(ROOT / words[1]), *words[2:]]
    assert words[0] == "ctrlkit", line
    return [sys.executable, "-m", "ctrlkit", *words[1:]]


# one torch thread: on a machine whose few cores other processes share, torch's threads wait on
# each other (a run of the tiny model took 60 s with them, 24 s with one)
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def _run(argv, cwd):
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, env=ENV)


@pytest.fixture
def start():
    """``start(argv, cwd)``: a command run beside another (two one-thread processes on the two cores);
    one still running when the test ends is killed."""
    started = []

    def begin(argv, cwd) -> subprocess.Popen:
        started.append(subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=ENV))
        return started[-1]

    yield begin
    for process in started:
        if process.poll() is None:
            process.kill()
            process.communicate()


def _finish(process: subprocess.Popen) -> subprocess.CompletedProcess:
    stdout, stderr = process.communicate(timeout=600)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _out(argv: list[str]) -> str:
    return argv[argv.index("-o") + 1]


def test_the_documented_commands_build_train_run_and_resume_offline(tmp_path, start):
    build, train, run = (_argv(line) for line in _documented_commands())
    assert build[1].endswith("examples/tiny_model.py") and train[3:4] == ["train"] and run[3:4] == ["run"]

    built = _run(build, tmp_path)
    assert built.returncode == 0, built.stderr
    model = tmp_path / build[2]
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {path.name for path in model.iterdir()}
    again = _run(build, tmp_path)
    assert again.returncode != 0 and "already exists" in again.stderr  # never written over

    # the training as written and, beside it, the same training into another folder, stopped with Ctrl-C
    # after its first checkpoint
    interrupted = [*train]
    interrupted[interrupted.index("-o") + 1] = "models/pt-interrupted"
    checkpoint = tmp_path / "models" / "pt-interrupted" / "checkpoint"
    training = start(train, tmp_path)
    process = start(interrupted, tmp_path)
    deadline = time.monotonic() + 300
    while not (checkpoint / "trainer_state.json").is_file() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode != 0, stderr  # stopped before its 20 steps
    assert not (tmp_path / "models" / "pt-interrupted" / "training.json").exists()
    step = json.loads((checkpoint / "trainer_state.json").read_text(encoding="utf-8"))["step"]
    assert step in (5, 10, 15)

    trained = _finish(training)
    assert trained.returncode == 0, trained.stderr
    assert "20 steps on 120 pairs" in trained.stdout
    whole = json.loads((tmp_path / _out(train) / "training.json").read_text(encoding="utf-8"))
    assert whole["steps"] == 20 and not whole["resumed"] and whole["config"]["split"] == "test"

    # the run of the trained model and, beside it, the interrupted training run again
    running = start(run, tmp_path)
    resumed = _run(interrupted, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert (f"ctrlkit: train [prepend+tag]: resuming: {step} of 20 steps already done "
            f"(models/pt-interrupted/checkpoint)") in resumed.stderr
    assert resumed.stderr.count("resuming") == 1
    record = json.loads((tmp_path / "models" / "pt-interrupted" / "training.json").read_text(encoding="utf-8"))
    assert record["resumed"] and record["steps"] == 20
    assert record["losses"] == pytest.approx(whole["losses"], abs=1e-5)
    assert not checkpoint.exists()

    ran = _finish(running)
    assert ran.returncode == 0, ran.stderr
    out = next((tmp_path / "runs").iterdir())  # the default output folder
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["n_examples"] == 10 and set(results["metrics"]) == {"rouge", "stas"}
    assert results["config"]["options"]["hf"]["model"] == _out(train)


def test_the_folders_the_commands_write_are_ignored_by_git():
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of ctrlkit")
    written = [_argv(line)[2] for line in _documented_commands() if line.startswith("python")]
    written += [_out(_argv(line)) for line in _documented_commands() if " -o " in line]
    written += ["runs/sample-tag-20260101-000000", "runs/demo"]  # `ctrlkit run`'s default, `make demo`
    assert len(written) == 4
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *(f"{path}/results.json" for path in written)],
                             cwd=ROOT, capture_output=True, text=True)
    assert sorted(ignored.stdout.split()) == sorted(f"{path}/results.json" for path in written), ignored.stderr
