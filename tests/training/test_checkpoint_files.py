"""Round 3 attacks on a training checkpoint's files: a kill at any step of saving it leaves a whole
checkpoint to resume from, a link planted where the temporary folder goes is not written through,
and a full disk leaves the old checkpoint and no temporary folder."""

import errno
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from ctrlkit.errors import CtrlkitError
from ctrlkit import files
from ctrlkit.files import recover_folder
from ctrlkit.training import trainer


class _Stateful:
    def __init__(self, value):
        self.value = value

    def state_dict(self):
        return {"value": self.value}


class _Model:
    def save(self, directory):
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / "model.bin").write_bytes(b"w" * 1000)


def _loop(out: Path, step: int):
    loop = object.__new__(trainer.TrainingLoop)
    loop.settings = SimpleNamespace(out=str(out), holdout_topics=None)
    loop.model = _Model()
    loop.steering = SimpleNamespace(name="tag", state=lambda: {"step": step})
    loop.optimizer, loop.scheduler = _Stateful(step), _Stateful(step)
    loop.state = {"step": step}
    return loop


WHOLE = {"model.bin", trainer.CONTROLLER_FILE, "optimizer.pt", "scheduler.pt", "trainer_state.json"}


def _checkpoint_step(out: Path) -> int:
    checkpoint = out / trainer.CHECKPOINT
    assert {path.name for path in checkpoint.iterdir()} >= WHOLE, sorted(checkpoint.iterdir())
    return json.loads((checkpoint / "trainer_state.json").read_text())["step"]


KILLER = textwrap.dedent("""
    import os, shutil, sys
    sys.path[:0] = [sys.argv[3]]
    from test_checkpoint_files import _loop
    from pathlib import Path
    out, kill_at = Path(sys.argv[1]), int(sys.argv[2])
    calls = [0]
    def killing(real):
        def call(*args, **kwargs):
            calls[0] += 1
            if calls[0] == kill_at:
                os._exit(9)  # a kill: no cleanup runs
            return real(*args, **kwargs)
        return call
    os.rename, os.replace, shutil.rmtree, os.unlink = (killing(f) for f in (os.rename, os.replace, shutil.rmtree,
                                                                            os.unlink))
    _loop(out, 2).save_checkpoint()
    print("CALLS", calls[0])
""")


def _save_killed(tmp_path: Path, out: Path, kill_at: int) -> subprocess.CompletedProcess:
    script = tmp_path / "killer.py"
    script.write_text(KILLER)
    return subprocess.run([sys.executable, str(script), str(out), str(kill_at), str(Path(__file__).parent)],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_a_kill_at_any_step_of_saving_leaves_a_whole_checkpoint_to_resume_from(tmp_path):
    out = tmp_path / "out"
    _loop(out, 1).save_checkpoint()
    whole = _save_killed(tmp_path, tmp_path / "count", 10 ** 6)
    steps = int(whole.stdout.split()[-1])
    assert steps >= 2, whole.stderr
    for kill_at in range(1, steps + 1):
        shutil.rmtree(out)
        _loop(out, 1).save_checkpoint()
        killed = _save_killed(tmp_path, out, kill_at)
        assert killed.returncode == 9, killed.stderr
        recover_folder(out / trainer.CHECKPOINT)  # what train does first
        assert _checkpoint_step(out) in (1, 2), kill_at
        assert not [p.name for p in out.iterdir() if p.name != trainer.CHECKPOINT], kill_at  # nothing left over


def test_a_kill_between_setting_the_old_checkpoint_aside_and_moving_the_new_in_resumes(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _loop(out, 1).save_checkpoint()
    real_rename = os.rename

    def rename(source, target):
        real_rename(source, target)
        if Path(target).name.endswith(".old"):
            raise SystemExit("killed")  # the moment the old code deleted the checkpoint

    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(files, "recover_folder", lambda folder: False)  # a kill runs no clean-up
    monkeypatch.setattr(shutil, "rmtree", lambda *a, **k: None)  # a kill runs no clean-up
    with pytest.raises(SystemExit):
        _loop(out, 2).save_checkpoint()
    monkeypatch.undo()
    assert not (out / trainer.CHECKPOINT).exists()
    assert recover_folder(out / trainer.CHECKPOINT)
    assert _checkpoint_step(out) == 1


def test_a_planted_link_for_the_temporary_folder_is_not_written_through(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    for name in (f".{trainer.CHECKPOINT}.tmp", f".{trainer.CHECKPOINT}.old"):
        (out / name).symlink_to(elsewhere, target_is_directory=True)
    _loop(out, 1).save_checkpoint()
    _loop(out, 2).save_checkpoint()
    assert list(elsewhere.iterdir()) == []
    assert _checkpoint_step(out) == 2


def test_a_planted_link_in_place_of_the_checkpoint_is_replaced_not_followed(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("mine")
    (out / trainer.CHECKPOINT).symlink_to(elsewhere, target_is_directory=True)
    _loop(out, 1).save_checkpoint()
    assert [p.name for p in elsewhere.iterdir()] == ["keep"]
    assert not (out / trainer.CHECKPOINT).is_symlink() and _checkpoint_step(out) == 1


def test_a_full_disk_while_saving_keeps_the_old_checkpoint_and_leaves_no_temporary_folder(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _loop(out, 1).save_checkpoint()
    real_replace = os.replace

    def full(source, target):
        if Path(target).name == "scheduler.pt":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_replace(source, target)

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(CtrlkitError) as caught:
        _loop(out, 2).save_checkpoint()
    assert "\n" not in str(caught.value) and "scheduler.pt" in str(caught.value)
    assert "No space left" in str(caught.value)
    monkeypatch.undo()
    assert _checkpoint_step(out) == 1
    assert sorted(p.name for p in out.iterdir()) == [trainer.CHECKPOINT]


class _ArrayStateController:
    """A plugin controller whose learned state holds numpy values (found by the attack after round 3:
    an array made every checkpoint of ``train`` a traceback after the work)."""

    name = "arrays"

    def __init__(self, state):
        self._state = state

    def state(self):
        return self._state


def test_a_controller_state_of_numpy_scalars_is_saved_plain_and_an_array_is_one_line(tmp_path):
    import numpy as np

    from ctrlkit.errors import ConfigurationError
    from ctrlkit.training.trainer import CONTROLLER_FILE, controller_state, save_controller

    save_controller(tmp_path, _ArrayStateController({"weight": np.float32(0.5), "steps": np.int64(3)}))
    assert json.loads((tmp_path / CONTROLLER_FILE).read_text())["state"] == {"weight": 0.5, "steps": 3}
    with pytest.raises(ConfigurationError, match=r"controller 'arrays': state\.vector is a ndarray") as caught:
        controller_state(_ArrayStateController({"vector": np.zeros(3)}))
    assert "\n" not in str(caught.value)
    with pytest.raises(ConfigurationError):
        save_controller(tmp_path / "other", _ArrayStateController({"vector": np.zeros(3)}))
    assert not (tmp_path / "other" / CONTROLLER_FILE).exists()
