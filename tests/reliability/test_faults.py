"""Real faults injected into real runs: a chat server that hangs, drops the connection or answers
garbage mid-run; outputs that cannot be written; SIGINT and SIGKILL at seeded random moments.

Fault scenarios (see FAULT_SCENARIOS at the bottom for the count this file injects).
"""

import errno
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import ctrlkit
from ctrlkit import CtrlkitError
from ctrlkit.sweeps.sweep import sweep

from helpers import run_ctrlkit
from helpers.faulty_chat import OPENAI_FAULT, FaultyChat, start_chat
from helpers.slow_backbone import slow_backbone

# ---------------------------------------------------------------- a chat server that breaks (faulty_chat.py)


@pytest.fixture
def chat_factory():
    servers = []

    def make(fault, good):
        chat = FaultyChat(fault, good)
        start_chat(chat)
        servers.append(chat)
        return chat

    yield make
    for chat in servers:
        chat.http.shutdown()
        chat.http.server_close()


def _rows(cache_dir: Path, table: str) -> int:
    try:
        with sqlite3.connect(cache_dir / "cache.sqlite3", timeout=5) as connection:
            return connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    except sqlite3.Error:
        return 0


def _complete_or_absent(path: Path, jsonl: bool = False) -> None:
    """A results file is either absent or whole: every line / the whole text parses."""
    if not path.exists():
        return
    text = path.read_text(encoding="utf-8")
    if jsonl:
        assert text.endswith("\n") or not text, f"{path} is cut"
        for line in text.splitlines():
            json.loads(line)
    else:
        json.loads(text)


def _one_line(message: str) -> None:
    assert message and "\n" not in message.strip() and "Traceback" not in message


FAULTS = ["hang", "drop", "garbage"]


# ---------------------------------------------------------------- 1a. the openai backbone


@pytest.mark.parametrize("fault", FAULTS)
def test_a_backbone_server_fault_midrun_stops_cleanly_and_a_rerun_resumes(fault, chat_factory, private_cache,
                                                                          tmp_path):
    chat = chat_factory(fault, good=6)  # batches of 2, one request at a time: 3 batches done
    arguments = dict(controller="tag", backbone="openai:m", metrics=["rouge"], baseline=None, limit=12,
                     batch_size=2, options={"openai": {"base_url": chat.url, **OPENAI_FAULT}},
                     out=str(tmp_path / "run"))
    with pytest.raises(CtrlkitError) as failure:
        ctrlkit.run(**arguments)
    message = str(failure.value)
    _one_line(message)
    assert message.startswith("backbone 'openai': request for input ")
    assert {"hang": "no response within 0.3 s", "drop": "connection error",
            "garbage": "malformed response"}[fault] in message
    # both inputs of the batch in flight are tried: garbage once each, the others twice (one retry)
    assert chat.faulted == (2 if fault == "garbage" else 4)
    print(message)
    assert _rows(private_cache, "generations") == 6, "batches finished before the fault are cached"
    assert not (tmp_path / "run" / "results.json").exists()
    assert not list((tmp_path / "run").glob(".*.tmp"))

    chat.recovered = True
    resumed = ctrlkit.run(**arguments)
    assert resumed.results["cache"] == {"hits": 6, "misses": 6}
    assert json.loads((tmp_path / "run" / "results.json").read_text())["cache"] == {"hits": 6, "misses": 6}
    _complete_or_absent(tmp_path / "run" / "samples.jsonl", jsonl=True)
    assert _rows(private_cache, "generations") == 12


def test_a_fault_the_retry_absorbs_lets_the_run_finish(chat_factory, private_cache, tmp_path):
    chat = chat_factory("drop", good=3)

    def recover_after_first_fault():
        while not chat.faulted:
            time.sleep(0.005)
        chat.recovered = True

    threading.Thread(target=recover_after_first_fault, daemon=True).start()
    result = ctrlkit.run(controller="tag", backbone="openai:m", metrics=["rouge"], baseline=None, limit=6,
                         batch_size=2, options={"openai": {"base_url": chat.url, **OPENAI_FAULT, "backoff": 0.2}},
                         out=str(tmp_path / "run"))
    assert chat.faulted >= 1 and result.results["cache"] == {"hits": 0, "misses": 6}
    json.loads((tmp_path / "run" / "results.json").read_text())


# ---------------------------------------------------------------- 1b. an fm judge


@pytest.mark.parametrize("fault", FAULTS)
def test_a_judge_server_fault_midrun_stops_cleanly_and_a_rerun_asks_only_the_rest(fault, chat_factory,
                                                                                  private_cache, tmp_path):
    chat = chat_factory(fault, good=5)
    arguments = dict(controller="none", backbone="extractive", metrics=["fm"], baseline=None, limit=6,
                     judge="openai:m", options={"openai": {"base_url": chat.url, **OPENAI_FAULT}},
                     out=str(tmp_path / "run"))
    with pytest.raises(CtrlkitError) as failure:
        ctrlkit.run(**arguments)
    _one_line(str(failure.value))
    assert str(failure.value).startswith("backbone 'openai': request for input ")
    generated = _rows(private_cache, "generations")
    assert generated > 0  # the summaries were done and cached before judging began
    # the judge is asked in chunks of 4 x concurrency, each cached when done: the first chunk survived
    assert _rows(private_cache, "judge") == 4, "judge answers received before the fault are cached"
    assert not (tmp_path / "run" / "results.json").exists()

    chat.recovered = True
    asked_before = chat.answered
    result = ctrlkit.run(**arguments)
    assert result.results["cache"] == {"hits": 6, "misses": 0}
    assert result.metrics["fm"]["failed"] == 0
    total = _rows(private_cache, "judge")
    assert chat.answered - asked_before == total - 4, "the rerun asks only what was not answered"
    json.loads((tmp_path / "run" / "results.json").read_text())


# ---------------------------------------------------------------- 2. outputs that cannot be written


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_leaves_the_previous_results_intact_and_no_temporary_files(private_cache, tmp_path,
                                                                               monkeypatch):
    out = tmp_path / "run"
    arguments = dict(controller="tag", metrics=["stas"], baseline=None, limit=6, out=str(out))
    ctrlkit.run(**arguments)
    before = {name: (out / name).read_bytes() for name in ("results.json", "samples.jsonl")}
    from ctrlkit import files

    monkeypatch.setattr(files.os, "fsync", _enospc)  # the injected fault: the disk is full
    with pytest.raises(CtrlkitError) as failure:
        ctrlkit.run(**{**arguments, "seed": 1})
    _one_line(str(failure.value))
    assert "No space left on device" in str(failure.value) and str(out) in str(failure.value)
    assert {name: (out / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "samples.jsonl"]

    from ctrlkit.cli import cli  # the command says it in one line too

    outcome = CliRunner().invoke(cli, ["run", "-c", "tag", "-m", "stas", "--limit", "6", "--no-baseline",
                                       "--seed", "2", "-o", str(out)])
    assert outcome.exit_code == 1 and not isinstance(outcome.exception, OSError), outcome.output
    errors = [line for line in outcome.output.strip().splitlines() if not line.startswith("ctrlkit: ")]
    assert len(errors) == 1 and "No space left" in errors[0], outcome.output  # beside ctrlkit's progress lines
    assert {name: (out / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "samples.jsonl"]


class _FullDisk:
    """A file on a disk that fills after ``room`` bytes: a write past it fails, and so does the flush
    that closing the file tries again (where the error of the write was once lost)."""

    def __init__(self, handle, room, fdopen):
        self.file, self.room = fdopen(handle, "wb", buffering=0), room

    def write(self, data):
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.file.write(data)

    def flush(self):
        if self.room <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def fileno(self):
        return self.file.fileno()

    def close(self):
        self.file.close()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_disk_that_fills_while_samples_are_streamed_is_one_line_naming_the_file(private_cache, tmp_path,
                                                                                  monkeypatch):
    from ctrlkit import files
    from ctrlkit.engine import scored_chunks

    out = tmp_path / "eval"
    examples = ctrlkit.get_dataset("sample").load("test")[:20]
    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps({"id": e.id, "prediction": e.references[0]}) + "\n" for e in examples))
    arguments = dict(predictions=str(predictions), metrics=["rouge"], limit=20, bootstrap=0, out=str(out))
    ctrlkit.evaluate(**arguments)
    before = {name: (out / name).read_bytes() for name in ("results.json", "samples.jsonl")}
    monkeypatch.setattr(scored_chunks, "CHUNK_EXAMPLES", 7)
    fdopen = os.fdopen
    monkeypatch.setattr(files.os, "fdopen", lambda handle, mode: _FullDisk(handle, 3000, fdopen))
    with pytest.raises(CtrlkitError) as failure:
        ctrlkit.evaluate(**arguments)
    _one_line(str(failure.value))
    assert str(failure.value) == f"cannot write {out / 'samples.jsonl'}: No space left on device"
    assert {name: (out / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "samples.jsonl"]


def test_results_json_that_cannot_be_replaced_is_one_line_and_leaves_no_temporary_files(private_cache, tmp_path):
    out = tmp_path / "run"
    (out / "results.json").mkdir(parents=True)  # a folder in the way: os.replace fails, root or not
    (out / "results.json" / "keep").write_text("x")
    result = run_ctrlkit("run", "-c", "tag", "-m", "stas", "--limit", "4", "--no-baseline", "-o", str(out))
    assert result.returncode == 1
    _one_line(result.stderr)
    assert "results.json" in result.stderr
    assert (out / "results.json" / "keep").read_text() == "x"
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_an_output_path_under_a_file_is_one_line(command, private_cache, tmp_path):
    (tmp_path / "file").write_text("not a folder")
    out = tmp_path / "file" / "out"
    arguments = (["run", "-c", "tag", "-m", "stas", "--limit", "4", "--no-baseline"] if command == "run" else
                 ["sweep", "--controllers", "none", "--metrics", "stas", "--limit", "4"])
    result = run_ctrlkit(*arguments, "-o", str(out))
    assert result.returncode == 1
    _one_line(result.stderr)
    assert result.stderr == f"Error: cannot create output folder {out}: {tmp_path / 'file'} is not a folder\n"
    assert (tmp_path / "file").read_text() == "not a folder"


# ---------------------------------------------------------------- 3. SIGINT and SIGKILL at random moments

KILLS_PER_SIGNAL = 3


def _command(kind: str, out: Path) -> list[str]:
    base = [sys.executable, "-m", "ctrlkit"]
    if kind == "run":
        return [*base, "run", "-b", "slow", "-c", "tag", "-m", "stas", "-m", "rouge", "--limit", "24",
                "--batch-size", "2", "--no-baseline", "-o", str(out)]
    return [*base, "sweep", "--backbones", "slow", "--controllers", "none,tag", "--metrics", "stas,rouge",
            "--limit", "12", "--batch-size", "2", "-o", str(out)]


def _outputs(out: Path) -> list[Path]:
    return [p for name in ("results.json", "samples.jsonl", "table.json", "sweep.json") for p in out.rglob(name)]


def _metrics(kind: str, out: Path):
    if kind == "run":
        return json.loads((out / "results.json").read_text())["metrics"]
    return [row["metrics"] for row in json.loads((out / "table.json").read_text())["rows"]]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """``uninterrupted(kind)``: the metrics of what the command computes, by the library in this
    process on the extractive backbone (the slow one is it plus a sleep), uncached; computed at
    the first ask and shared by the SIGINT and SIGKILL tests."""
    metrics = {}

    def of(kind: str):
        if kind not in metrics:
            out = str(tmp_path_factory.mktemp(f"uninterrupted-{kind}") / "out")
            if kind == "run":
                metrics[kind] = ctrlkit.run(backbone="extractive", controller="tag", metrics=["stas", "rouge"],
                                            limit=24, batch_size=2, baseline=None, cache=False, out=out).metrics
            else:
                rows = sweep(backbones=["extractive"], controllers=["none", "tag"], metrics=["stas", "rouge"],
                             limit=12, batch_size=2, cache=False, out=out)
                metrics[kind] = [row["metrics"] for row in rows]
        return metrics[kind]

    return of


# slow: KILLS_PER_SIGNAL kills in each of 4 cases; one SIGKILL then resume (test_sweep.py) and one Ctrl-C
# then resume (test_interrupt_and_progress.py) stay in make test-fast
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["run", "sweep"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_killed_at_random_moments_then_resumed_gives_the_uninterrupted_metrics(kind, signum, uninterrupted, tmp_path):
    env = slow_backbone(tmp_path)
    rng = random.Random(f"{kind}-{int(signum)}")
    out = tmp_path / "out"
    landed = 0
    for _ in range(KILLS_PER_SIGNAL):
        process = subprocess.Popen(_command(kind, out), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True)
        # startup (imports, plugins) takes about a second; generation about 3 s more
        time.sleep(rng.uniform(0.2, 3.5))
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=120)
        if process.returncode != 0:
            landed += 1
        if signum == signal.SIGINT and process.returncode != 0:
            assert "Traceback" not in stderr, stderr
            # ctrlkit's progress lines, then at most one line more: how to resume, or (an interrupt that lands
            # once the work is written) the run's last line, after a blank one
            lines = stderr.strip().splitlines()
            assert len([line for line in lines if line and not line.startswith("ctrlkit: ")]) <= 1, stderr
            # exit 130 with one line saying how to resume (not click's "Aborted!" and 1); an interrupt that
            # lands while the interpreter shuts down, after the work is written, ends the process by the signal
            assert process.returncode in (130, -signal.SIGINT), stderr
            assert "Aborted" not in stderr, stderr
        for path in _outputs(out):
            _complete_or_absent(path, jsonl=path.suffix == ".jsonl")
        for leftover in out.rglob(".*.tmp") if out.exists() else []:
            # SIGKILL may strand a temporary file (nothing runs after it); it must never be mistaken for output
            assert signum == signal.SIGKILL, leftover
    assert landed >= 2, "most kills must land before the command finishes"
    resumed = subprocess.run(_command(kind, out), env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert _metrics(kind, out) == uninterrupted(kind)


FAULT_SCENARIOS = {
    "openai backbone server: hang / drop / garbage mid-run": 3,
    "openai backbone server: drop absorbed by a retry": 1,
    "fm judge server: hang / drop / garbage mid-run": 3,
    "disk full (ENOSPC at fsync) over a previous results.json, library and CLI": 1,
    "results.json replaced by a folder": 1,
    "output path under a file, run and sweep": 2,
    "SIGINT / SIGKILL of run and sweep": 4,
}
KILL_POINTS = 4 * KILLS_PER_SIGNAL
