"""Round 3 attacks on a sweep's folders: two cells whose labels map to one folder are refused in
one line naming both, and a sweep folder is claimed by one sweep's settings, atomically, so two
sweeps with other settings started at once cannot both fill it (the same settings still may)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ctrlkit.errors import CtrlkitError
from ctrlkit.sweeps.sweep import sweep


@pytest.mark.parametrize("names", [("tag-3", "tag-3_"), ("Tag3", "tag3"), ("tag.3", "tag.3_"), ("_tag3", "tag3"),
                                   ("tag3", "tag3" + "_" * 200), ("TAG_3", "tag_3__")])
def test_two_variants_mapping_to_one_folder_are_refused_naming_both(tmp_path, names):
    variants = {name: {"of": "tag", "options": {"top_n": n}} for name, n in zip(names, (3, 5))}
    with pytest.raises(CtrlkitError) as caught:
        sweep(out=str(tmp_path / "s"), controllers=list(names), metrics=["stas"], limit=2, variants=variants)
    message = str(caught.value)
    assert "\n" not in message and all(repr(name) in message or name in message for name in names)
    assert "folder" in message
    assert not (tmp_path / "s").exists()  # refused before any cell


def test_backbone_and_dataset_labels_that_collide_are_refused_too(tmp_path):
    variants = {"short": {"of": "extractive", "options": {"max_words": 20}},
                "Short": {"of": "extractive", "options": {"max_words": 30}}}
    with pytest.raises(CtrlkitError, match="short.*Short|Short.*short"):
        sweep(out=str(tmp_path / "s"), controllers=["none"], backbones=["short", "Short"], metrics=["stas"],
              limit=2, variants=variants)
    variants = {"sample--extractive": {"of": "sample", "options": {}}, "extractive--x": {"of": "extractive",
                                                                                       "options": {}}}
    # (sample--extractive, x) and (sample, extractive--x) would both be cells/sample--extractive--x--CONTROLLER
    with pytest.raises(CtrlkitError, match="one folder") as caught:
        sweep(out=str(tmp_path / "s"), controllers=["none"], backbones=["x", "extractive--x"],
              datasets=["sample--extractive", "sample"], metrics=["stas"], limit=2,
              variants={**variants, "x": {"of": "extractive", "options": {"max_words": 9}}})
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "s").exists()


SCRIPT = textwrap.dedent("""
    import os, sys, time
    from ctrlkit.errors import CtrlkitError
    from ctrlkit.sweeps.sweep import sweep
    out, top_n, start = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    while time.time() < start:
        time.sleep(0.001)
    try:
        sweep(out=out, controllers=["tag"], metrics=["stas"], limit=2, options={"tag": {"top_n": top_n}})
    except CtrlkitError as exc:
        print("REFUSED", exc)
        sys.exit(3)
""")


def _race(tmp_path: Path, top_ns, attempt: int) -> list[subprocess.CompletedProcess]:
    import os
    import time

    out = tmp_path / f"s{attempt}"
    script = tmp_path / "race.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "CTRLKIT_CACHE_DIR": str(tmp_path / "cache")}
    start = time.time() + 1.5  # both import ctrlkit, then start the sweep at the same moment
    processes = [subprocess.Popen([sys.executable, str(script), str(out), str(n), str(start)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in top_ns]
    return [(process, *process.communicate(timeout=300)) for process in processes], out


@pytest.mark.slow
def test_two_sweeps_with_other_settings_started_at_once_do_not_both_fill_one_folder(tmp_path):
    for attempt in range(3):
        finished, out = _race(tmp_path, (3, 7), attempt)
        codes = sorted(process.returncode for process, _, _ in finished)
        assert codes == [0, 3], [(process.returncode, stdout, stderr[-2000:]) for process, stdout, stderr in finished]
        refused = next(stdout for process, stdout, _ in finished if process.returncode == 3)
        assert refused.count("\n") == 1 and "other settings" in refused
        settings = json.loads((out / "sweep.json").read_text())["settings"]
        results = json.loads((out / "cells/sample--extractive--tag/results.json").read_text())
        assert results["config"]["options"]["tag"]["top_n"] == settings["options"]["tag"]["top_n"]


@pytest.mark.slow
def test_the_same_sweep_started_twice_at_once_both_succeed(tmp_path):
    for attempt in range(2):
        finished, out = _race(tmp_path, (3, 3), attempt)
        assert [process.returncode for process, _, _ in finished] == [0, 0], [
            stderr[-2000:] for _, _, stderr in finished]
        assert (out / "table.json").is_file()


def test_a_claim_left_by_a_killed_sweep_does_not_hold_the_folder(tmp_path, private_cache):
    out = tmp_path / "s"
    out.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    import socket
    claim = {"settings": {"controllers": ["tag"], "options": {"tag": {"top_n": 99}}}, "digests": {},
             "holders": [[socket.gethostname(), int(dead.stdout)]]}
    (out / ".sweep.claim").write_text(json.dumps(claim))
    rows = sweep(out=str(out), controllers=["tag"], metrics=["stas"], limit=2)
    assert len(rows) == 1 and not (out / ".sweep.claim").exists()


def test_a_live_claim_with_other_settings_refuses_and_the_same_settings_join(tmp_path, private_cache):
    out = tmp_path / "s"
    out.mkdir()
    import os
    import socket
    claim = {"settings": {"controllers": ["tag"], "metrics": ["stas"], "options": {"tag": {"top_n": 99}}},
             "digests": {}, "holders": [[socket.gethostname(), os.getppid()]]}
    (out / ".sweep.claim").write_text(json.dumps(claim))
    with pytest.raises(CtrlkitError, match="claimed by another sweep with other settings") as caught:
        sweep(out=str(out), controllers=["tag"], metrics=["stas"], limit=2)
    assert "\n" not in str(caught.value) and sorted(p.name for p in out.iterdir()) == [".sweep.claim"]


def test_overwrite_refuses_a_folder_a_running_sweep_holds_and_removes_nothing(tmp_path, private_cache):
    """--overwrite while another sweep still runs there would delete its finished cells under it and
    leave a folder of two sweeps (found by the attack after round 3): refused, nothing removed."""
    import os
    import socket

    out = tmp_path / "s"
    first = sweep(out=str(out), controllers=["none", "tag"], metrics=["stas"], limit=2)
    claim = {"settings": {"controllers": ["none", "tag"], "metrics": ["stas"]}, "digests": {},
             "holders": [[socket.gethostname(), os.getppid()]]}  # a live process: the sweep still running
    (out / ".sweep.claim").write_text(json.dumps(claim))
    kept = sorted(path.name for path in out.rglob("*"))
    with pytest.raises(CtrlkitError, match="still running") as caught:
        sweep(out=str(out), controllers=["tag"], metrics=["stas"], limit=2, options={"tag": {"top_n": 7}},
              overwrite=True)
    assert "\n" not in str(caught.value) and sorted(path.name for path in out.rglob("*")) == kept
    assert len(first) == 2
    # once that sweep is gone (its process dead), --overwrite replaces the folder
    claim["holders"] = [[socket.gethostname(), 2**22 + 12345]]
    (out / ".sweep.claim").write_text(json.dumps(claim))
    rows = sweep(out=str(out), controllers=["tag"], metrics=["stas"], limit=2, options={"tag": {"top_n": 7}},
                 overwrite=True)
    assert [row["controller"] for row in rows] == ["tag"] and not (out / ".sweep.claim").exists()


def test_a_link_planted_as_the_claim_is_refused_not_followed(tmp_path, private_cache):
    out, elsewhere = tmp_path / "s", tmp_path / "victim"
    out.mkdir()
    elsewhere.write_text("keep")
    (out / ".sweep.claim").symlink_to(elsewhere)
    with pytest.raises(CtrlkitError, match=r"\.sweep\.claim") as caught:
        sweep(out=str(out), controllers=["tag"], metrics=["stas"], limit=2)
    assert "\n" not in str(caught.value) and elsewhere.read_text() == "keep"


def test_a_cell_whose_samples_are_not_those_of_its_results_runs_again(tmp_path, private_cache, caplog):
    import logging

    out = tmp_path / "s"
    first = sweep(out=str(out), controllers=["tag"], metrics=["stas"], limit=3)
    samples = out / first[0]["run"] / "samples.jsonl"
    lines = samples.read_text().splitlines()
    samples.write_text("\n".join(lines[:-1]) + "\n")  # another write's samples beside this results.json
    caplog.set_level(logging.WARNING, logger="ctrlkit")
    again = sweep(out=str(out), controllers=["tag"], metrics=["stas"], limit=3)
    assert again[0]["reused"] is False and "is not the samples.jsonl written with" in caplog.text
    assert samples.read_text().splitlines() == lines


@pytest.mark.parametrize("planted", ["cells", "cells/sample--extractive--none"])
def test_a_link_planted_as_a_cell_folder_is_refused_and_nothing_is_written_through_it(tmp_path, private_cache,
                                                                                      planted):
    out, victim = tmp_path / "s", tmp_path / "victim"
    victim.mkdir()
    (victim / "results.json").write_text("precious")
    (out / planted).parent.mkdir(parents=True, exist_ok=True)
    (out / planted).symlink_to(victim)
    with pytest.raises(CtrlkitError) as caught:
        sweep(out=str(out), controllers=["none"], backbones=["extractive"], metrics=["stas"], limit=2)
    assert str(caught.value) == (f"{out / 'cells'} is a link; a sweep writes only into folders it makes: remove the "
                                 "link, or sweep into another folder" if planted == "cells" else
                                 f"{out / planted} is a link; a sweep writes only into folders it makes: remove the "
                                 "link, or sweep into another folder")
    assert sorted(p.name for p in victim.iterdir()) == ["results.json"]
    assert (victim / "results.json").read_text() == "precious"


def test_a_label_too_long_for_a_folder_name_gets_a_shortened_folder_of_its_own(tmp_path, private_cache):
    long_a, long_b = "a" * 250, "a" * 249 + "b"  # alike for their first 183 characters
    variants = {name: {"of": "tag", "options": {"top_n": n}} for name, n in ((long_a, 3), (long_b, 5))}
    rows = sweep(out=str(tmp_path / "s"), controllers=[long_a, long_b], metrics=["stas"], limit=2, variants=variants)
    folders = sorted(p.name for p in (tmp_path / "s" / "cells").iterdir())
    assert len(rows) == 2 and len(folders) == 2 and all(len(name) <= 200 for name in folders)
    assert folders[0] != folders[1] and all(name.startswith("sample--extractive--aaaa") for name in folders)


def test_a_pipe_planted_as_a_cells_samples_makes_the_cell_run_again_and_never_hangs(tmp_path, private_cache):
    import os
    import signal

    out = tmp_path / "s"
    settings = dict(out=str(out), controllers=["none"], backbones=["extractive"], metrics=["stas"], limit=2)
    sweep(**settings)
    [cell] = (out / "cells").iterdir()
    (cell / "samples.jsonl").unlink()
    os.mkfifo(cell / "samples.jsonl")  # reading it would wait for a writer forever
    signal.alarm(120)  # a hang fails the test instead of the suite
    try:
        rows = sweep(**settings)
    finally:
        signal.alarm(0)
    assert [row["reused"] for row in rows] == [False] and (cell / "samples.jsonl").is_file()


def test_a_pipe_planted_as_the_claim_is_one_line(tmp_path, private_cache):
    import os

    out = tmp_path / "s"
    out.mkdir()
    os.mkfifo(out / ".sweep.claim")
    with pytest.raises(CtrlkitError) as caught:
        sweep(out=str(out), controllers=["none"], backbones=["extractive"], metrics=["stas"], limit=2)
    assert str(caught.value) == f"{out / '.sweep.claim'} is not a regular file; remove it, or choose another --out"
