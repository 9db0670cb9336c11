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

import ctrlkit
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


def _killer(imports: str, patched: str, work: str) -> str:
    """A script run as ``python -c SCRIPT OUT KILL_AT TESTS``: it kills itself (no cleanup runs) at
    the KILL_AT-th call of the ``patched`` file operations while doing ``work`` on OUT, and prints
    how many calls the work made when nothing kills it."""
    return textwrap.dedent(f"""
        import os, shutil, sys
        sys.path[:0] = [sys.argv[3]]
        {imports}
        from pathlib import Path
        out, kill_at = Path(sys.argv[1]), int(sys.argv[2])
        calls = [0]
        def killing(real):
            def call(*args, **kwargs):
                calls[0] += 1
                if calls[0] == kill_at:
                    os._exit(9)
                return real(*args, **kwargs)
            return call
        {patched} = (killing(f) for f in ({patched},))
        {work}
        print("CALLS", calls[0])
    """)


KILLER = _killer("from test_checkpoint_files import _loop", "os.rename, os.replace, shutil.rmtree, os.unlink",
                 "_loop(out, 2).save_checkpoint()")

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


# ------------------------------------------------------------ the model train writes into --out (after round 3)

MODEL_FILES = ("config.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
               "model.safetensors.index.json", "tokenizer.json")


class _VersionedModel:
    """A model whose save writes five files, each saying which version it is, the way
    save_pretrained writes a sharded model: one file after the other. ``fail_after`` files, it
    fails as a full disk does."""

    def __init__(self, version, fail_after=None, same_tokenizer=True):
        self.version, self.fail_after, self.same_tokenizer = version, fail_after, same_tokenizer

    def save(self, directory):
        for count, name in enumerate(MODEL_FILES):
            if count == self.fail_after:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            shared = name in ("config.json", "tokenizer.json") and self.same_tokenizer
            (Path(directory) / name).write_text("same" if shared else f"version {self.version}")

    # what _evaluate calls
    def train_mode(self, on):
        pass

    def loss(self, inputs, targets, max_tokens):
        return SimpleNamespace(item=lambda: 1.0 / self.version)


def _model_version(out: Path):
    """The version of the model a loader would find in ``out``: None without config.json, else
    the one version every file holds (a mix fails the test: a half model that loads)."""
    if not (out / "config.json").exists():
        return None
    versions = {(out / name).read_text() for name in MODEL_FILES if name not in ("config.json", "tokenizer.json")}
    missing = [name for name in MODEL_FILES if not (out / name).exists()]
    assert len(versions) == 1 and not missing, (sorted(versions), missing)
    return versions.pop()


def test_a_failure_while_saving_the_best_model_keeps_the_old_one_whole(tmp_path):
    # before: save_pretrained wrote into --out directly, and a failure (or a kill) after two of its
    # files left version 2's config and first shard beside version 1's second shard: a model that loads
    out = tmp_path / "out"
    out.mkdir()
    state = {"eval_losses": [], "best_eval": None, "bad_evals": 0}
    pairs = [(None, "reference")]
    trainer._evaluate(_VersionedModel(1), pairs, 1, 8, state, 0, out)
    assert _model_version(out) == "version 1"
    with pytest.raises(CtrlkitError) as caught:
        trainer._evaluate(_VersionedModel(2, fail_after=3, same_tokenizer=False), pairs, 1, 8, state, 0, out)
    assert "\n" not in str(caught.value) and "No space left" in str(caught.value) and str(out) in str(caught.value)
    assert _model_version(out) == "version 1"
    assert sorted(path.name for path in out.iterdir()) == sorted(MODEL_FILES)  # no temporary folder left


def test_saving_a_model_again_swaps_only_what_changed_in_one_rename_each_reader_sees_one_version(tmp_path, monkeypatch):
    out = tmp_path / "out"
    files.replace_files(out, _VersionedModel(1).save)
    seen, renames = [], []
    real_rename, real_replace = os.rename, os.replace

    def watching(real):
        def call(source, target):
            real(source, target)
            renames.append(Path(target).name)
            seen.append(_model_version(out))  # a reader at this moment: one version, or no model
        return call

    monkeypatch.setattr(os, "rename", watching(real_rename))
    monkeypatch.setattr(os, "replace", watching(real_replace))
    files.replace_files(out, _VersionedModel(2).save)  # the weights changed: three files
    assert set(seen) <= {"version 1", "version 2", None} and seen[-1] == "version 2"
    moved = [name for name in renames if name in MODEL_FILES]
    assert moved[0] == "config.json" and moved[-1] == "config.json"  # out first, in last
    assert sorted(moved) == sorted(["config.json"] * 2 + [name for name in MODEL_FILES if "model" in name] * 2)
    seen.clear(), renames.clear()
    files.replace_files(out, _VersionedModel(2).save)  # nothing changed: nothing moves
    assert [name for name in renames if name in MODEL_FILES] == []

    def one_changed(directory):  # a model saved again whose weights are one file: one rename, atomic
        for name in MODEL_FILES:
            shutil.copy(out / name, Path(directory) / name)
        (Path(directory) / MODEL_FILES[1]).write_text("retrained")

    monkeypatch.undo()
    renames.clear()
    monkeypatch.setattr(os, "replace", lambda source, target: (renames.append(Path(target).name),
                                                               real_replace(source, target))[1])
    monkeypatch.setattr(os, "rename", lambda source, target: (renames.append(Path(target).name),
                                                              real_rename(source, target))[1])
    files.replace_files(out, one_changed)
    assert renames == [MODEL_FILES[1]]  # no aside folder, no journal: one atomic rename
    monkeypatch.undo()
    assert (out / MODEL_FILES[1]).read_text() == "retrained"
    assert sorted(path.name for path in out.iterdir()) == sorted(MODEL_FILES)


def test_a_planted_link_as_the_aside_folder_is_not_written_through(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / files.FILES_ASIDE).symlink_to(elsewhere, target_is_directory=True)
    files.replace_files(out, _VersionedModel(1).save)
    files.replace_files(out, _VersionedModel(2, same_tokenizer=False).save)
    assert list(elsewhere.iterdir()) == [] and _model_version(out) == "version 2"


MODEL_KILLER = _killer("from test_checkpoint_files import _VersionedModel; from ctrlkit.files import replace_files",
                       "os.rename, os.replace, shutil.rmtree, os.unlink, os.mkdir",
                       "replace_files(out, _VersionedModel(2, same_tokenizer=False).save)")

@pytest.mark.slow
@pytest.mark.parametrize("first", [True, False], ids=["first-save", "saved-again"])
def test_a_kill_at_any_step_of_saving_the_model_leaves_the_old_or_the_new_never_half(tmp_path, first):
    script = tmp_path / "killer.py"
    script.write_text(MODEL_KILLER)
    out = tmp_path / "out"

    def killed_at(kill_at, folder):
        return subprocess.run([sys.executable, str(script), str(folder), str(kill_at), str(Path(__file__).parent)],
                              capture_output=True, text=True, timeout=120)

    def fresh():
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        (out / "training-notes.txt").write_text("not the model's")
        if not first:
            files.replace_files(out, _VersionedModel(1, same_tokenizer=False).save)

    fresh()
    whole = killed_at(10 ** 6, out)
    steps = int(whole.stdout.split()[-1])
    assert steps >= 6, whole.stderr
    for kill_at in range(1, steps + 1):
        fresh()
        killed = killed_at(kill_at, out)
        assert killed.returncode == 9, killed.stderr
        before = _model_version(out)  # a reader before anything recovers: no mix
        assert before in ({None, "version 2"} if first else {None, "version 1", "version 2"}), kill_at
        files.recover_files(out)  # what train does first
        after = _model_version(out)
        assert after in ((None, "version 2") if first else ("version 1", "version 2")), kill_at
        if before is not None:
            assert after == before, kill_at
        assert sorted(path.name for path in out.iterdir()) == sorted(
            ["training-notes.txt", *(MODEL_FILES if after else ())]), kill_at


def test_train_writes_its_final_model_through_a_temporary_folder_and_a_kill_there_leaves_no_half_model(
        tiny_bart, tmp_path, monkeypatch):
    from transformers import AutoModelForSeq2SeqLM

    out = tmp_path / "m"
    real_rename = os.rename

    def killed_moving_the_config_in(source, target):
        if Path(target) == out / "config.json" and ".files." in str(source):
            raise SystemExit("killed")  # the last step of the swap: every other file is in already
        return real_rename(source, target)

    monkeypatch.setattr(os, "rename", killed_moving_the_config_in)
    monkeypatch.setattr(files, "recover_files", lambda folder: False)  # a kill runs no clean-up
    with pytest.raises(SystemExit):
        trainer.train(backbone=f"hf:{tiny_bart}", out=str(out), split="test", limit=4, batch_size=2, max_steps=2)
    monkeypatch.undo()
    assert not (out / "config.json").exists()  # no model to load, rather than weights without their config
    assert (out / files.FILES_ASIDE).is_dir()
    record = trainer.train(backbone=f"hf:{tiny_bart}", out=str(out), split="test", limit=4, batch_size=2, max_steps=2)
    assert record["steps"] == 2 and not (out / files.FILES_ASIDE).exists()
    assert not [path.name for path in out.iterdir() if path.name.startswith(".files.")]
    AutoModelForSeq2SeqLM.from_pretrained(out)  # whole


def test_train_refuses_a_link_at_its_checkpoint_instead_of_starting_again_from_step_0(tmp_path):
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    _loop(elsewhere, 3).save_checkpoint()  # a whole checkpoint, moved to a bigger disk and linked back
    (out / trainer.CHECKPOINT).symlink_to(elsewhere / trainer.CHECKPOINT, target_is_directory=True)
    with pytest.raises(CtrlkitError) as caught:
        ctrlkit.train(backbone="hf:/nowhere", dataset="sample", controller="tag", out=str(out))
    assert str(caught.value) == (f"{out / trainer.CHECKPOINT} is a link; train keeps its checkpoint as a folder of its "
                                 "own and never follows a link there: move the folder it points to into its place, "
                                 "or remove the link")
    assert (out / trainer.CHECKPOINT).is_symlink() and _checkpoint_step(elsewhere) == 3  # nothing removed
