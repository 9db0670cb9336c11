"""Round 3 attacks on the files ``report`` reads and writes: a link planted as a figure's
``.partial`` file or as the figures folder is never written through, a full disk while writing
figures leaves whole files and no temporary ones, and a run folder whose results.json and
samples.jsonl come from two different writes is refused in one line, not reported."""

import errno
import json
import os
from pathlib import Path

import pytest

from ctrlkit import results as results_module
from ctrlkit.errors import CtrlkitError
from ctrlkit.report.load import load
from ctrlkit.report.write import write_report
from ctrlkit.results import write_run


def _results(value: float) -> dict:
    return {"config": {"dataset": "sample", "controller": "tag", "backbone": "extractive"}, "n_examples": 2,
            "metrics": {"rouge": {"rouge1": value}}}


def _samples(tag: str) -> list[dict]:
    return [{"id": f"ex-{i}", "controls": {"topic": "sports"}, "references": ["Ref"], "prediction": f"{tag} {i}",
             "scores": {"rouge": {"rouge1": 0.25}}} for i in range(2)]


def _run(folder: Path) -> Path:
    write_run(folder, _results(0.25), _samples("first"))
    return folder


def test_a_planted_partial_link_for_a_figure_is_not_written_through(tmp_path):
    folder, victim = _run(tmp_path / "run"), tmp_path / "victim"
    victim.write_text("keep")
    (folder / "figures").mkdir()
    for name in ("bar-rouge.rouge1.svg.partial", "distribution-rouge.rouge1.svg.partial"):
        (folder / "figures" / name).symlink_to(victim)
    written = write_report(folder, figures="svg")
    assert victim.read_text() == "keep"
    assert all(path.read_bytes().startswith(b"<?xml") for path in written[2:])


def test_a_planted_link_as_a_figure_is_replaced_not_followed(tmp_path):
    folder, victim = _run(tmp_path / "run"), tmp_path / "victim"
    victim.write_text("keep")
    (folder / "figures").mkdir()
    (folder / "figures" / "bar-rouge.rouge1.svg").symlink_to(victim)
    write_report(folder, figures="svg")
    assert victim.read_text() == "keep" and not (folder / "figures" / "bar-rouge.rouge1.svg").is_symlink()


def test_a_planted_link_as_the_figures_folder_is_refused_in_one_line(tmp_path):
    folder, elsewhere = _run(tmp_path / "run"), tmp_path / "elsewhere"
    elsewhere.mkdir()
    (folder / "figures").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(CtrlkitError, match="figures") as caught:
        write_report(folder, figures="svg")
    assert "\n" not in str(caught.value) and list(elsewhere.iterdir()) == []


def test_a_full_disk_while_writing_figures_leaves_whole_files_and_no_temporary_ones(tmp_path, monkeypatch):
    folder = _run(tmp_path / "run")
    before = {path.name: path.read_bytes() for path in write_report(folder, figures="png")[2:]}
    real_replace, calls = os.replace, []

    def full(source, target):
        calls.append(target)
        if len(calls) == 4:  # the page, the Markdown, one figure written; then the disk is full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(CtrlkitError, match="No space left") as caught:
        write_report(folder, figures="png")
    assert "\n" not in str(caught.value) and Path(calls[-1]).name in str(caught.value)
    monkeypatch.undo()
    left = sorted(path.name for path in (folder / "figures").iterdir())
    assert left == sorted(before) and all((folder / "figures" / name).read_bytes() == data
                                          for name, data in before.items())
    assert not [path for path in folder.rglob("*") if path.name.startswith(".")]


def test_a_results_json_and_samples_jsonl_from_two_writes_are_refused_in_one_line(tmp_path, monkeypatch):
    folder = _run(tmp_path / "run")
    assert json.loads((folder / "results.json").read_text())["samples_digest"].startswith("sha256:")

    def full(path, data):
        raise CtrlkitError(f"cannot write {path}: No space left on device")

    monkeypatch.setattr(results_module, "atomic_write_json", full)  # samples written, results.json not
    with pytest.raises(CtrlkitError):
        write_run(folder, _results(0.99), _samples("second"))
    monkeypatch.undo()
    with pytest.raises(CtrlkitError, match="samples.jsonl is not the samples.jsonl written with") as caught:
        load(folder)
    assert "\n" not in str(caught.value)


def test_a_samples_jsonl_replaced_by_hand_is_refused_too(tmp_path):
    folder = _run(tmp_path / "run")
    other = _run(tmp_path / "other")
    write_run(other, _results(0.3), _samples("other"))
    (folder / "samples.jsonl").write_bytes((other / "samples.jsonl").read_bytes())
    with pytest.raises(CtrlkitError, match="not the samples.jsonl written with"):
        write_report(folder)


def test_a_results_json_written_before_the_digest_is_still_reported(tmp_path):
    folder = _run(tmp_path / "run")
    data = json.loads((folder / "results.json").read_text())
    del data["samples_digest"]
    (folder / "results.json").write_text(json.dumps(data))
    assert load(folder).arms
