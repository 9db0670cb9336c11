"""Output folders: default names never collide, even between parallel processes, and a failed
command leaves no folder behind while keeping everything that was there before."""

import json
import os
import re
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

import ctrlkit
from ctrlkit.cli import cli
from ctrlkit.files import atomic_write_text
from ctrlkit.outputs import new_folder
from ctrlkit.sweeps.sweep import sweep

NOW = datetime(2026, 11, 25, 13, 41, 59, tzinfo=timezone.utc)


def test_parallel_processes_in_the_same_second_get_distinct_folders(tmp_path):
    """Six processes asking for a folder at the same (fixed) second: six folders, none shared."""
    code = ("import sys; from datetime import datetime; from ctrlkit.outputs import new_folder; "
            "print(new_folder('sample-tag', parent=sys.argv[1], now=datetime.fromisoformat(sys.argv[2])))")
    processes = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), NOW.isoformat()],
                                  stdout=subprocess.PIPE, text=True) for _ in range(6)]
    folders = [process.communicate(timeout=120)[0].strip() for process in processes]
    assert all(process.returncode == 0 for process in processes)
    base = tmp_path / "sample-tag-20261125-134159"
    assert sorted(folders) == sorted([str(base)] + [f"{base}-{n}" for n in range(2, 7)])
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(Path(folder).name for folder in folders)


def test_threads_racing_for_one_name_each_get_their_own_folder(tmp_path):
    folders, start = [], threading.Barrier(24)

    def claim():
        start.wait()
        folders.append(new_folder("sample-tag", parent=tmp_path, now=NOW))

    threads = [threading.Thread(target=claim) for _ in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(folders)) == 24 and all(folder.is_dir() for folder in folders)


def test_names_are_readable_and_sort_by_time(tmp_path):
    first = new_folder("sample-tag", parent=tmp_path, now=NOW)
    second = new_folder("sample-tag", parent=tmp_path, now=NOW)
    later = new_folder("sample-tag", parent=tmp_path, now=NOW + timedelta(seconds=1))
    assert [first.name, second.name, later.name] == ["sample-tag-20261125-134159", "sample-tag-20261125-134159-2",
                                                     "sample-tag-20261125-134200"]
    assert sorted([later.name, second.name, first.name]) == [first.name, second.name, later.name]
    assert new_folder("jsonl-a/b c", parent=tmp_path, now=NOW).name == "jsonl-a_b_c-20261125-134159"


# slow: four whole runs in four fresh processes; the folder each claims is checked fast by
# test_parallel_processes_in_the_same_second_get_distinct_folders and
# test_threads_racing_for_one_name_each_get_their_own_folder
@pytest.mark.slow
def test_parallel_runs_without_out_keep_every_result(tmp_path):
    command = [sys.executable, "-m", "ctrlkit", "run", "-m", "rouge", "--limit", "1", "--no-baseline"]
    processes = [subprocess.Popen(command + ["--seed", str(seed)], cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for seed in range(4)]
    said = [process.communicate(timeout=300)[1] for process in processes]
    assert all(process.returncode == 0 for process in processes), said
    written = [re.search(r"results in (\S+)/results.json", text).group(1) for text in said]
    assert len(set(written)) == 4
    seeds = sorted(json.loads((tmp_path / folder / "results.json").read_text())["config"]["seed"]
                   for folder in written)
    assert seeds == [0, 1, 2, 3]
    assert all(re.fullmatch(r"runs/sample-none-\d{8}-\d{6}(-\d+)?", folder) for folder in written)


def _failing(tmp_path: Path, out: Path) -> dict[str, list[str]]:
    """A command line per command that fails after its arguments are read, writing to ``out``."""
    missing = str(tmp_path / "missing.jsonl")
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"scores": {"rouge": 0.5}}) + "\n")
    (tmp_path / "empty").mkdir(exist_ok=True)
    return {
        "run": ["run", "-d", "jsonl", "--data", missing, "-m", "rouge", "-o", str(out)],
        "evaluate": ["evaluate", "-d", "jsonl", "--data", missing, "-p", missing, "-m", "rouge", "-o", str(out)],
        "sweep": ["sweep", "--controllers", "none", "--datasets", "jsonl", "--data", missing, "-o", str(out)],
        "train": ["train", "-b", "extractive", "-o", str(out)],
        "interference": ["analyze", "interference", "-d", "jsonl", "--data", missing, "-c", "length",
                         "--attributes", "length", "-m", "rouge", "-o", str(out)],
        "report": ["report", str(tmp_path / "empty"), "--out", str(out / "report.html")],
        "topic-mix": ["data", "topic-mix", "-d", "jsonl", "--data", missing, "-o", str(out / "mix.jsonl")],
        "meta-eval": ["meta-eval", str(samples), "--human", "given.human", "-o", str(out / "meta.json")],
    }


@pytest.mark.parametrize("command", ["run", "evaluate", "sweep", "train", "interference", "report", "topic-mix",
                                     "meta-eval"])
def test_a_failed_command_leaves_no_folder_behind(tmp_path, command):
    out = tmp_path / "new" / "deeper" / "out"
    result = CliRunner().invoke(cli, _failing(tmp_path, out)[command])
    *progress, error = result.output.splitlines()  # a sweep names the cell it starts first
    assert result.exit_code == 1 and error.startswith("Error: "), result.output
    assert all(line.startswith("ctrlkit: ") for line in progress), result.output
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("command", ["run", "evaluate", "interference"])
def test_a_failed_command_without_out_leaves_no_runs_folder(tmp_path, monkeypatch, command):
    arguments = _failing(tmp_path, tmp_path / "unused")[command][:-2]  # without -o OUT
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, arguments)
    assert result.exit_code == 1 and result.output.startswith("Error: "), result.output
    assert not (tmp_path / "runs").exists()
    (tmp_path / "runs").mkdir()  # the user's, even empty, stays
    (tmp_path / "runs" / "old-run").mkdir()
    assert CliRunner().invoke(cli, arguments).exit_code == 1
    assert [path.name for path in (tmp_path / "runs").iterdir()] == ["old-run"]


@pytest.mark.parametrize("command", ["run", "sweep", "interference"])
def test_a_failed_command_keeps_a_folder_that_was_there(tmp_path, command):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "inner").mkdir()
    assert CliRunner().invoke(cli, _failing(tmp_path, out)[command]).exit_code == 1
    assert out.is_dir() and (out / "inner").is_dir()


def test_a_sweep_failing_at_a_later_cell_keeps_the_cells_it_finished(tmp_path):
    out = tmp_path / "sweep"
    with pytest.raises(ctrlkit.DatasetError, match="no such file"):
        sweep(out=str(out), controllers=["none"], metrics=["rouge"], datasets=["sample", "jsonl"],
                      data={"jsonl": str(tmp_path / "missing.jsonl")}, limit=2)
    assert (out / "cells" / "sample--extractive--none" / "results.json").is_file()
    assert not (out / "cells" / "jsonl--extractive--none").exists()


def test_a_file_that_cannot_be_written_leaves_no_folder_made_for_it(tmp_path, monkeypatch):
    def refuse(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(ctrlkit.CtrlkitError, match="cannot write .*: No space left on device"):
        atomic_write_text(tmp_path / "a" / "b" / "file.txt", "text")
    assert list(tmp_path.iterdir()) == []


def test_an_output_folder_under_a_file_is_refused_without_creating_anything(tmp_path):
    (tmp_path / "a-file").write_text("")
    blocked = CliRunner().invoke(cli, ["run", "-m", "rouge", "-o", str(tmp_path / "a-file" / "sub")])
    assert blocked.output == f"Error: cannot create output folder {tmp_path / 'a-file' / 'sub'}: " \
                             f"{tmp_path / 'a-file'} is not a folder\n"


@pytest.mark.parametrize("where", ["runs", "out"])
def test_a_link_to_nothing_on_the_way_is_one_line_before_any_work(tmp_path, monkeypatch, where):
    monkeypatch.chdir(tmp_path)
    (tmp_path / where).symlink_to(tmp_path / "unmounted")
    argv = ["run", "--limit", "2", "-m", "rouge", *(["-o", "out/deeper"] if where == "out" else [])]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 1
    assert result.output.endswith(f": {where} is a link to {tmp_path / 'unmounted'}, which does not exist\n")
    assert not (tmp_path / "unmounted").exists()


def test_an_output_that_is_the_commands_own_input_is_refused_before_any_work(tmp_path):
    import ctrlkit
    from ctrlkit.errors import CtrlkitError
    from helpers import invoke_ctrlkit

    examples = ctrlkit.get_dataset("sample").load("test")[:6]
    out = tmp_path / "out"
    out.mkdir()
    data = out / "samples.jsonl"  # a dataset saved under the name a run writes, in the folder given as -o
    data.write_text("".join(json.dumps({"id": e.id, "document": e.document, "references": e.references,
                                               "controls": e.controls}) + "\n" for e in examples))
    before = data.read_bytes()
    with pytest.raises(CtrlkitError) as caught:
        ctrlkit.run(dataset="jsonl", data=str(data), controller="none", backbone="extractive", metrics=["rouge"],
                    bootstrap=0, out=str(out))
    assert str(caught.value) == (f"--data {data} is the file this command writes ({data}): writing it would destroy "
                                 "it; choose another output")
    with pytest.raises(CtrlkitError, match="--predictions .* is the file this command writes"):
        ctrlkit.evaluate(predictions=str(data), dataset="jsonl", data=str(data), metrics=["rouge"], out=str(out))
    rated = tmp_path / "rated.jsonl"
    rated.write_text("".join(json.dumps({"a": i % 3, "b": i % 2, "given": {"human": i}}) + "\n" for i in range(9)))
    link = tmp_path / "same.jsonl"
    link.symlink_to(rated)  # another name for the same file
    for arguments in (["agreement", rated, "--field", "a", "--field", "b", "-o", link],
                      ["meta-eval", rated, "--human", "given.human", "--score", "a", "-o", rated]):
        result = invoke_ctrlkit(*arguments)
        assert result.returncode == 1 and "is the file this command writes" in result.stderr, result.stderr
    mixed = tmp_path / "mix.jsonl"
    mixed.write_text(data.read_text())
    result = invoke_ctrlkit("data", "topic-mix", "-d", "jsonl", "--data", mixed, "-o", mixed)
    assert result.returncode == 1 and "--data" in result.stderr and "is the file this command writes" in result.stderr
    assert data.read_bytes() == before and mixed.read_bytes() == before
