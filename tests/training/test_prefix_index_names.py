"""A soft-prefix model folder's ``ctrlkit_prefixes.json`` names each prefix's subfolder: an entry
that is a path (absolute, ``..``, a separator, NUL, empty, '.' alone) would be read from outside
the folder, and a training resumed from it saved that prefix back where the entry pointed,
outside ``--out``. Every entry must be a plain subfolder name (also a name peft takes: no '.'),
refused in one line naming the file and the entry before anything is read or written, and the
names ctrlkit writes are checked the same way before peft saves into them."""
import json
import os
import shutil

import pytest

pytest.importorskip("torch", reason="prefixes need torch")
pytest.importorskip("transformers", reason="prefixes need transformers")
pytest.importorskip("peft", reason="prefixes need peft")

import ctrlkit  # noqa: E402
from ctrlkit.backbones import value_prefixes  # noqa: E402
from ctrlkit.training.trainer import train  # noqa: E402

from helpers import invoke_ctrlkit, tiny_models  # noqa: E402

OPTIONS = {"jsonl": {"control_fields": "length"}}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("prefix-names")
    bart = tiny_models.build_bart(root / "bart", init_std=0.2)
    rows = [{"id": f"s{i}", "document": f"The coach praised player {i}.", "references": ["Won."], "length": "short"}
            for i in range(4)]
    rows += [{"id": f"l{i}", "document": f"Rain flooded street {i} of the town.",
              "references": ["Rain flooded the streets of the old town today."], "length": "long"} for i in range(4)]
    data = root / "d.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    _train(bart, data, root / "a")
    return root, data


def _train(backbone, data, out):
    return train(backbone=f"hf:{backbone}", controller="soft-prefix", dataset="jsonl", data=str(data),
                 options=OPTIONS, peft="prefix", prefix_length=3, batch_size=4, max_steps=1, lr=5e-2, seed=3,
                 out=str(out))


def _snapshot(root):
    return {path: (path.stat().st_mtime_ns, path.read_bytes()) for path in root.rglob("*") if path.is_file()}


def test_a_resumed_training_refuses_an_index_entry_outside_its_folder_and_writes_nothing_there(trained, tmp_path):
    root, data = trained
    index = json.loads((root / "a" / "ctrlkit_prefixes.json").read_text())["prefixes"]
    assert all(value_prefixes.NAME.fullmatch(name) for name in index.values())  # the names ctrlkit writes
    hostile = shutil.copytree(root / "a", tmp_path / "m" / "n" / "hostile")
    (tmp_path / "outside").mkdir()
    for entry in (str(tmp_path / "outside" / "value1"), "../../../outside/value1"):
        shutil.rmtree(tmp_path / "outside" / "value1", ignore_errors=True)
        shutil.copytree(root / "a" / "value1", tmp_path / "outside" / "value1")
        shutil.rmtree(hostile / "value1", ignore_errors=True)
        key = next(key for key, name in index.items() if name == "value1")
        (hostile / "ctrlkit_prefixes.json").write_text(json.dumps({"prefixes": {**index, key: entry}}))
        before = _snapshot(tmp_path / "outside")
        with pytest.raises(ctrlkit.CtrlkitError) as caught:
            _train(hostile, data, tmp_path / "c" / "d" / "e")
        message = str(caught.value)
        assert "\n" not in message and str(hostile / "ctrlkit_prefixes.json") in message and repr(key) in message
        assert _snapshot(tmp_path / "outside") == before
        assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("entry", ["/etc", "..", ".", "", "../value0", "value0/../value1", "a\\b", "value\x00",
                                   "value.1", " value0", "x" * 101])
def test_every_index_entry_that_is_not_a_plain_subfolder_name_is_one_line(trained, tmp_path, entry):
    root, _ = trained
    folder = shutil.copytree(root / "a", tmp_path / "model")
    index = json.loads((folder / "ctrlkit_prefixes.json").read_text())["prefixes"]
    key = next(iter(index))
    (folder / "ctrlkit_prefixes.json").write_text(json.dumps({"prefixes": {**index, key: entry}}))
    with pytest.raises(ctrlkit.CtrlkitError) as caught:
        value_prefixes.read_index(folder)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{folder / 'ctrlkit_prefixes.json'}: entry {key!r}")


def test_an_entry_named_twice_or_default_is_one_line(trained, tmp_path):
    root, _ = trained
    folder = shutil.copytree(root / "a", tmp_path / "model")
    index = json.loads((folder / "ctrlkit_prefixes.json").read_text())["prefixes"]
    os.rename(folder / "value1", folder / "default")
    for names in (["value0", "value0"], ["value0", "default"]):
        (folder / "ctrlkit_prefixes.json").write_text(json.dumps({"prefixes": dict(zip(index, names))}))
        with pytest.raises(ctrlkit.CtrlkitError, match="is named twice|is reserved"):
            value_prefixes.read_index(folder)


def test_a_run_on_a_subfolder_named_with_a_dot_is_one_line(trained, tmp_path):
    root, data = trained
    folder = shutil.copytree(root / "a", tmp_path / "dotname")
    os.rename(folder / "value1", folder / "value.1")
    text = (folder / "ctrlkit_prefixes.json").read_text()
    (folder / "ctrlkit_prefixes.json").write_text(text.replace('"value1"', '"value.1"'))
    done = invoke_ctrlkit("run", "-b", f"hf:{folder}", "-c", "soft-prefix", "-d", "jsonl", "--data", str(data),
                          "--set", "jsonl.control_fields=length", "--limit", "1", "-o", str(tmp_path / "out"))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith(f"Error: {folder / 'ctrlkit_prefixes.json'}: entry ")
    assert "'value.1' is not a subfolder name" in done.stderr


def test_saving_checks_the_prefix_names_before_peft_writes_into_them(trained, tmp_path):
    root, _ = trained
    backbone = ctrlkit.get_backbone(f"hf:{root / 'a'}")
    backbone.load()
    key = next(iter(backbone.value_prefixes))
    backbone.value_prefixes[key] = str(tmp_path / "outside")
    with pytest.raises(ctrlkit.CtrlkitError, match="is not a subfolder name"):
        backbone.save(tmp_path / "saved")
    assert not (tmp_path / "outside").exists() and not (tmp_path / "saved").exists()
