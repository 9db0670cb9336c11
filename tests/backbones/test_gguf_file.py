"""ctrlkit's GGUF header reader (:mod:`ctrlkit.backbones.gguf_file`) against the ``gguf`` package, an
independent reader and writer: files the package writes, damaged and hostile files, and the real
SmolLM2 file; and the file digest taken once per file."""

import json
import os
import struct

import pytest

from ctrlkit.backbones.gguf_file import (DIGESTS_FILE, GGUFError, check_gguf_path, gguf_sha256, model_facts,
                                         read_metadata)

gguf = pytest.importorskip("gguf", reason="the gguf package (ctrlkit[hf]) writes the files these tests read")
np = pytest.importorskip("numpy")


def written(path, architecture="llama", context=4096, template="{{ messages }}", name="tiny"):
    """A GGUF file the gguf package writes: metadata of every kind, string and number arrays, a tensor."""
    writer = gguf.GGUFWriter(str(path), architecture)
    if context is not None:
        writer.add_context_length(context)
    if template is not None:
        writer.add_string("tokenizer.chat_template", template)
    writer.add_array("tokenizer.ggml.tokens", ["a", "bb", "ccc", "ünï"])
    writer.add_array("tokenizer.ggml.scores", [0.5, -1.0, 2.0, 0.0])
    writer.add_bool("tokenizer.ggml.add_bos_token", False)
    writer.add_float32("test.float", 1.5)
    writer.add_uint64("test.big", 2 ** 40)
    writer.add_int8("test.small", -3)
    writer.add_name(name)
    writer.add_tensor("x", np.arange(6, dtype=np.float32).reshape(2, 3))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def expected_by_gguf(path) -> dict:
    """The gguf package's reading, in ctrlkit's shape: arrays as their length."""
    fields = gguf.GGUFReader(str(path)).fields
    out = {}
    for key, field in fields.items():
        if key.startswith("GGUF."):
            continue
        value = field.contents()
        out[key] = len(value) if field.types[0] == gguf.GGUFValueType.ARRAY else value
    return out


def test_metadata_equals_the_gguf_packages_reading_of_a_file_it_wrote(tmp_path):
    path = written(tmp_path / "m.gguf")
    found = read_metadata(path)
    expected = expected_by_gguf(path)
    assert found.keys() == expected.keys()
    for key, value in expected.items():
        assert found[key] == pytest.approx(value) if isinstance(value, float) else found[key] == value, key
    assert model_facts(path) == {"architecture": "llama", "context_length": 4096, "chat_template": "{{ messages }}",
                                 "name": "tiny"}


def test_a_base_model_has_no_template_and_a_file_without_a_context_says_none(tmp_path):
    facts = model_facts(written(tmp_path / "base.gguf", architecture="gpt2", context=None, template=None))
    assert facts["chat_template"] is None and facts["context_length"] is None and facts["architecture"] == "gpt2"
    assert model_facts(written(tmp_path / "blank.gguf", template="  \n"))["chat_template"] is None


def test_the_real_smollm2_files_metadata_equals_the_gguf_packages(smollm2_gguf):
    found = read_metadata(smollm2_gguf)
    expected = expected_by_gguf(smollm2_gguf)
    assert found.keys() == expected.keys()
    assert all(found[key] == pytest.approx(value) for key, value in expected.items() if not isinstance(value, str))
    assert all(found[key] == value for key, value in expected.items() if isinstance(value, str))
    facts = model_facts(smollm2_gguf)
    assert (facts["architecture"], facts["context_length"]) == ("llama", 8192)
    assert facts["chat_template"].startswith("{% for message in messages %}")


@pytest.mark.parametrize("damage, message", [
    (lambda data: b"GGML" + data[4:], "does not start with 'GGUF'"),
    (lambda data: data[:4] + struct.pack("<I", 1) + data[8:], "GGUF version 1"),
    (lambda data: data[:40], "ends inside its header"),
    # the metadata count claims 2**62 entries: refused as larger than the file, not looped over
    (lambda data: data[:16] + struct.pack("<Q", 2 ** 62) + data[24:], "a metadata count of"),
])
def test_a_damaged_or_hostile_header_is_one_error_naming_the_file(tmp_path, damage, message):
    path = written(tmp_path / "m.gguf")
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(GGUFError, match=message) as error:
        read_metadata(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_a_string_length_past_the_end_of_the_file_is_refused(tmp_path):
    path = written(tmp_path / "m.gguf")
    data = bytearray(path.read_bytes())
    first_key_length = 24  # after magic, version, tensor count, metadata count
    data[first_key_length:first_key_length + 8] = struct.pack("<Q", len(data) * 10)
    path.write_bytes(bytes(data))
    with pytest.raises(GGUFError, match="string length"):
        read_metadata(path)


def test_check_gguf_path_names_what_is_wrong(tmp_path):
    with pytest.raises(GGUFError, match="no GGUF file at"):
        check_gguf_path(str(tmp_path / "absent.gguf"), "backbone 'llamacpp'")
    with pytest.raises(GGUFError, match="it is a folder"):
        check_gguf_path(str(tmp_path), "backbone 'llamacpp'")
    text = tmp_path / "model.gguf"
    text.write_text("not a model")
    with pytest.raises(GGUFError, match="is not a GGUF file"):
        check_gguf_path(str(text), "backbone 'llamacpp'")
    with pytest.raises(GGUFError, match="needs a GGUF file"):
        check_gguf_path("", "backbone 'llamacpp'")
    assert check_gguf_path(str(written(tmp_path / "m.gguf")), "x") == tmp_path / "m.gguf"


def test_the_digest_is_taken_once_per_file_and_again_when_the_file_changes(tmp_path, monkeypatch):
    import hashlib

    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    path = written(tmp_path / "m.gguf")
    first = gguf_sha256(path)
    assert first == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    record_path = tmp_path / "cache" / DIGESTS_FILE
    record = json.loads(record_path.read_text())
    assert record[str(path.resolve())]["sha256"] == first
    # a later run (another process: nothing in memory) believes the record while the file's
    # size, times and inode are as recorded: shown by a record planted with another digest
    record[str(path.resolve())]["sha256"] = "sha256:" + "0" * 64
    record_path.write_text(json.dumps(record))
    code = ("import sys; from ctrlkit.backbones.gguf_file import gguf_sha256; print(gguf_sha256(sys.argv[1]))")
    import subprocess
    import sys

    fresh = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert fresh.stdout.strip() == "sha256:" + "0" * 64
    with path.open("ab") as handle:  # another file under the same name: hashed again, recorded again
        handle.write(b"\0")
    fresh = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    assert fresh.stdout.strip() == "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert json.loads(record_path.read_text())[str(path.resolve())]["sha256"] == fresh.stdout.strip()


def test_a_damaged_or_unwritable_digest_record_only_costs_the_hashing(tmp_path, monkeypatch):
    import hashlib

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / DIGESTS_FILE).write_text("{not json")
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(cache))
    path = written(tmp_path / "m.gguf")
    expected = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert gguf_sha256(path) == expected
    if os.geteuid() != 0:  # root writes through a read-only folder
        os.chmod(cache, 0o500)
        try:
            (cache / DIGESTS_FILE).unlink(missing_ok=True)
        except PermissionError:
            pass
        assert gguf_sha256(path) == expected
