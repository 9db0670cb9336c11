"""``hf-causal:FILE.gguf``: the real SmolLM2 GGUF read into torch through transformers, kept as a
float32 folder under the file's digest, generating and training (LoRA) like any hf-causal model.

The session's cache folder is fresh (conftest), so the first load here converts the file (tens of
seconds); the module shares one loaded backbone."""

import hashlib
import json
import time

import pytest

import ctrlkit
from helpers import NEWTS_CSV, run_ctrlkit, shared_file
from ctrlkit import ModelInput

pytest.importorskip("transformers", reason="hf-causal needs transformers (ctrlkit[hf])")
pytest.importorskip("gguf", reason="reading a GGUF into torch needs the gguf package (ctrlkit[hf])")

GREEDY = {"num_beams": 1, "max_new_tokens": 20}
TEXT = ("The city council voted on Tuesday to build a new park near the river, after years of debate about "
        "its cost. Work starts in May.")


def chat(document):
    return ModelInput(source=document, messages=({"role": "user", "content": f"Summarize in one sentence.\n\n"
                                                                             f"{document}"},))


@pytest.fixture(scope="module")
def smollm2_torch(smollm2_gguf):
    backbone = ctrlkit.get_backbone(f"hf-causal:{smollm2_gguf}", **GREEDY)
    backbone.load()
    return backbone


def test_it_loads_through_a_float32_folder_kept_under_the_files_digest(smollm2_torch, smollm2_gguf):
    from ctrlkit.cache import cache_dir

    digest = hashlib.sha256(smollm2_gguf.read_bytes()).hexdigest()
    folder = cache_dir() / "gguf-torch" / digest
    assert (folder / "ctrlkit-gguf-complete").is_file() and (folder / "model.safetensors").is_file()
    assert "quantization_config" not in json.loads((folder / "config.json").read_text())
    assert str(smollm2_torch.model.dtype) == "torch.float32"
    assert smollm2_torch.has_chat_template
    started = time.monotonic()
    again = ctrlkit.get_backbone(f"hf-causal:{smollm2_gguf}", **GREEDY)
    again.load()
    assert time.monotonic() - started < 20  # the kept folder, not a second conversion
    assert [folder for folder in (cache_dir() / "gguf-torch").iterdir()] == [folder]


def test_its_weights_are_the_files_dequantized(smollm2_torch, smollm2_gguf):
    """One tensor dequantized by the gguf package itself equals the loaded model's."""
    import numpy as np
    from gguf import GGUFReader
    from gguf.quants import dequantize

    tensor = next(t for t in GGUFReader(str(smollm2_gguf)).tensors if t.name == "blk.0.ffn_down.weight")
    expected = dequantize(tensor.data, tensor.tensor_type).reshape(tensor.shape[::-1])
    loaded = smollm2_torch.model.model.layers[0].mlp.down_proj.weight.detach().numpy()
    assert loaded.shape == expected.shape and np.allclose(loaded, expected, atol=1e-6)


def test_greedy_generation_is_the_same_twice_and_on_topic(smollm2_torch):
    inputs = [chat(TEXT), ModelInput(source=TEXT)]
    first = smollm2_torch.generate(inputs)
    assert first == smollm2_torch.generate(inputs)
    assert "park" in first[0].lower()


def test_identity_holds_the_files_digest_not_its_path(smollm2_torch, smollm2_gguf):
    identity = smollm2_torch.identity()
    assert identity["gguf_sha256"] == "sha256:" + hashlib.sha256(smollm2_gguf.read_bytes()).hexdigest()
    assert "model" not in identity["options"]


def test_the_chat_prompt_is_the_one_llamacpp_renders(smollm2_torch, smollm2_gguf):
    pytest.importorskip("xllamacpp", reason="compares with the llamacpp backbone")
    llama = ctrlkit.get_backbone(f"llamacpp:{smollm2_gguf}", threads=2)
    assert smollm2_torch.prompt(chat(TEXT)) == llama.prompt(chat(TEXT))


def test_a_run_on_real_newts_data_through_the_gguf_in_torch(smollm2_torch, smollm2_gguf, tmp_path):
    shared_file("newts/NEWTS_test_600.csv")
    result = run_ctrlkit("run", "-d", "newts", "--data", NEWTS_CSV, "-c", "prompt", "-b", f"hf-causal:{smollm2_gguf}",
                         "-m", "stas", "-m", "rouge", "--limit", "2", "--bootstrap", "0", "--no-baseline",
                         "--set", "hf-causal.num_beams=1", "--set", "hf-causal.max_new_tokens=16",
                         "--set", "hf-causal.max_input_tokens=256", "-o", tmp_path / "run")
    assert result.returncode == 0, result.stderr
    assert "2 of 2 inputs truncated to 256 tokens" in result.stderr  # NEWTS articles are longer
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 2 and all(sample["prediction"].strip() for sample in samples)
    assert all(0 <= sample["scores"]["stas"]["stas"] <= 1 for sample in samples)


def test_the_seq2seq_backbone_refuses_a_gguf_file_in_one_line(smollm2_gguf):
    with pytest.raises(ctrlkit.ConfigurationError, match=r"backbone 'hf' reads no GGUF file .*: a GGUF holds a "
                                                         r"decoder-only model; give it to hf-causal or llamacpp"):
        ctrlkit.get_backbone(f"hf:{smollm2_gguf}").load()


def test_a_cache_folder_that_cannot_be_written_is_one_line_naming_it(smollm2_gguf, tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("in the way")
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(blocked))
    backbone = ctrlkit.get_backbone(f"hf-causal:{smollm2_gguf}", **GREEDY)
    with pytest.raises(ctrlkit.ConfigurationError, match=r"cannot keep the float32 copy of .* in .*a-file/gguf-torch: "
                                                         r".*CTRLKIT_CACHE_DIR chooses the folder") as error:
        backbone.load()
    assert "\n" not in str(error.value)


@pytest.mark.slow
def test_lora_training_on_newts_lowers_the_loss_and_reloads_to_the_same_outputs(smollm2_gguf, tmp_path,
                                                                                 monkeypatch):
    shared_file("newts/NEWTS_test_600.csv")
    pytest.importorskip("peft", reason="LoRA needs peft (ctrlkit[peft])")
    from ctrlkit.backbones.hf_base import HFBackbone
    from ctrlkit.training.trainer import train

    caught = {}  # the in-memory model the training saved, caught as it saves
    original = HFBackbone.save
    monkeypatch.setattr(HFBackbone, "save", lambda self, folder: caught.setdefault("backbone", self) and
                        original(self, folder))
    out = tmp_path / "lora"
    record = train(backbone=f"hf-causal:{smollm2_gguf}", out=str(out), dataset="newts", data=str(NEWTS_CSV),
                   controller="prompt", limit=4, batch_size=4, max_steps=5, lr=2e-3, peft="lora",
                   max_target_tokens=48, options={"hf-causal": {"max_input_tokens": 192}})
    assert record["steps"] == 5 and record["losses"][-1] < record["losses"][0]
    assert json.loads((out / "adapter_config.json").read_text())["base_model_name_or_path"] == str(smollm2_gguf)
    in_memory = caught["backbone"]
    in_memory.options.update(GREEDY)
    reloaded = ctrlkit.get_backbone(f"hf-causal:{out}", **GREEDY)
    base = ctrlkit.get_backbone(f"hf-causal:{smollm2_gguf}", **GREEDY)
    inputs = [chat(TEXT)]
    assert reloaded.generate(inputs) == in_memory.generate(inputs)
    import torch

    batch = reloaded.training_batch(inputs, [TEXT], 48)
    with torch.no_grad():  # the adapter is loaded and in use: the loss is the trained model's, not the base's
        assert reloaded.model(**batch).loss == pytest.approx(in_memory.model(**batch).loss.item(), abs=1e-5)
        assert abs(reloaded.model(**batch).loss.item() - base.model(**batch).loss.item()) > 1e-4
    assert reloaded.identity()["base_gguf_sha256"] == "sha256:" + hashlib.sha256(smollm2_gguf.read_bytes()).hexdigest()


@pytest.mark.slow
def test_full_training_on_the_gguf_weights_saves_a_model_folder_that_reloads_to_the_same_outputs(smollm2_gguf,
                                                                                                  tmp_path,
                                                                                                  monkeypatch):
    """The float32 folder carries no GGUF quantization mark, so a fully trained model saves (transformers
    refuses to save a model it loaded as GGUF-quantized)."""
    shared_file("newts/NEWTS_test_600.csv")
    from ctrlkit.backbones.hf_base import HFBackbone
    from ctrlkit.training.trainer import train

    caught = {}
    original = HFBackbone.save
    monkeypatch.setattr(HFBackbone, "save", lambda self, folder: caught.setdefault("backbone", self) and
                        original(self, folder))
    out = tmp_path / "full"
    record = train(backbone=f"hf-causal:{smollm2_gguf}", out=str(out), dataset="newts", data=str(NEWTS_CSV),
                   controller="prompt", limit=2, batch_size=2, max_steps=2, lr=1e-5, max_target_tokens=32,
                   options={"hf-causal": {"max_input_tokens": 128}})
    assert record["steps"] == 2 and (out / "model.safetensors").is_file()
    assert "quantization_config" not in json.loads((out / "config.json").read_text())
    caught["backbone"].options.update(GREEDY)
    reloaded = ctrlkit.get_backbone(f"hf-causal:{out}", **GREEDY)
    assert reloaded.generate([chat(TEXT)]) == caught["backbone"].generate([chat(TEXT)])
