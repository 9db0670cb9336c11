"""The files a transformers backbone reads back from a model folder, damaged: JSON nested deeper
than any ctrlkit file (``ctrlkit_composition.json``, ``ctrlkit_prefixes.json``, an
``adapter_config.json``), cut short (``ctrlkit_controller.json``), and weights cut short (a
prefix's, a LoRA adapter's alone or in ``hf.adapters``, the base model's, the rows ctrlkit saves
beside them). Each is one line naming the file or its folder, never a RecursionError,
JSONDecodeError or safetensors traceback."""
import json
import shutil

import pytest

pytest.importorskip("torch", reason="model folders need torch")
pytest.importorskip("transformers", reason="model folders need transformers")
pytest.importorskip("peft", reason="adapters need peft")

import peft  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

import ctrlkit  # noqa: E402

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def folders(tiny_bart, tmp_path_factory):
    """A LoRA adapter and a folder of two per-value prefixes, made with peft on the tiny BART."""
    root = tmp_path_factory.mktemp("model-files")
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(tiny_bart)
    lora = peft.get_peft_model(model, peft.LoraConfig(task_type="SEQ_2_SEQ_LM", r=2, target_modules=["q_proj"]))
    lora.save_pretrained(root / "lora")
    model = transformers.AutoModelForSeq2SeqLM.from_pretrained(tiny_bart)
    prefix = peft.PrefixTuningConfig(task_type="SEQ_2_SEQ_LM", num_virtual_tokens=2)
    prefixes = peft.get_peft_model(model, prefix, adapter_name="value0")
    prefixes.add_adapter("value1", peft.PrefixTuningConfig(task_type="SEQ_2_SEQ_LM", num_virtual_tokens=2))
    prefixes.save_pretrained(root / "prefixes")
    (root / "prefixes" / "ctrlkit_prefixes.json").write_text(
        json.dumps({"prefixes": {"length=long": "value0", "length=short": "value1"}}))
    return root


def _copy(source, target):
    shutil.copytree(source, target)
    return target


def _one_line(call, *named):
    with pytest.raises(ctrlkit.CtrlkitError) as caught:
        call()
    message = str(caught.value)
    assert "\n" not in message and all(str(name) in message for name in named), message
    return message


def _loads(folder, **options):
    return lambda: ctrlkit.get_backbone(f"hf:{folder}", **options).load()


def test_the_model_folders_as_made_load(folders, tiny_bart):
    ctrlkit.get_backbone(f"hf:{folders / 'lora'}").load()
    ctrlkit.get_backbone(f"hf:{folders / 'prefixes'}").load()
    ctrlkit.get_backbone(f"hf:{tiny_bart}", adapters=f"a={folders / 'lora'}").load()


def test_deeply_nested_json_in_a_model_folder_is_one_line(folders, tiny_bart, tmp_path):
    composition = tmp_path / "composition"
    composition.mkdir()
    (composition / "ctrlkit_composition.json").write_text(DEEP)
    prefixes = _copy(folders / "prefixes", tmp_path / "prefixes")
    (prefixes / "ctrlkit_prefixes.json").write_text('{"prefixes": ' + DEEP + "}")
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(DEEP)
    second = _copy(folders / "prefixes", tmp_path / "second-prefix")  # a prefix's own config, which peft reads
    (second / "value1" / "adapter_config.json").write_text(DEEP)
    for folder, name in ((composition, "ctrlkit_composition.json"), (prefixes, "ctrlkit_prefixes.json"),
                         (adapter, "adapter_config.json"), (second, "value1/adapter_config.json")):
        message = _one_line(_loads(folder), folder / name)
        assert "nested over" in message
    _one_line(_loads(tiny_bart, adapters=f"a={adapter}"), adapter / "adapter_config.json")


@pytest.mark.parametrize("text", ['{"state": ', DEEP, "[]", '{"state": {}}'])
def test_a_damaged_saved_controller_state_is_one_line(tiny_bart, tmp_path, text):
    folder = _copy(tiny_bart, tmp_path / "bart")
    (folder / "ctrlkit_controller.json").write_text(text)
    _one_line(ctrlkit.get_backbone(f"hf:{folder}").saved_controller, folder / "ctrlkit_controller.json")


def _cut(path):
    path.write_bytes(path.read_bytes()[:100])


def test_cut_short_weights_are_one_line_naming_the_folder(folders, tiny_bart, tmp_path):
    prefixes = _copy(folders / "prefixes", tmp_path / "prefixes")
    _cut(prefixes / "value0" / "adapter_model.safetensors")
    _one_line(_loads(prefixes), prefixes / "value0", "weights")
    lora = _copy(folders / "lora", tmp_path / "lora")
    _cut(lora / "adapter_model.safetensors")
    _one_line(_loads(lora), lora, "weights")
    _one_line(_loads(tiny_bart, adapters=f"a={lora}"), lora, "weights")
    bart = _copy(tiny_bart, tmp_path / "bart")
    _cut(bart / "model.safetensors")
    _one_line(_loads(bart), bart, "weights")


@pytest.mark.parametrize("name", ["ctrlkit_input_embeddings.safetensors", "ctrlkit_added_tokens.safetensors"])
def test_cut_short_rows_ctrlkit_saves_beside_the_weights_are_one_line(folders, tiny_bart, tmp_path, name):
    folder = _copy(folders / "lora" if "added" in name else tiny_bart, tmp_path / "model")
    save_file({"input": torch.zeros(2, 4)}, str(folder / name))
    _cut(folder / name)
    _one_line(_loads(folder), folder / name)


@pytest.mark.parametrize("recorded, refused", [
    ({"base": "gpt2", "adapters": [["a", "/x/a"], ["b", "/x/b"]], "weights": []}, "field 'weights' must give"),
    ({"base": "gpt2", "adapters": [["a", "/x/a"], ["b", "/x/b"]], "weights": "12"}, "field 'weights' must give"),
    ({"base": "gpt2", "adapters": [["a", "/x/a"]], "weights": [True]}, "field 'weights' must give"),
    ({"base": "gpt2", "adapters": [["a", "/x/a"]], "weights": [1e400]}, "field 'weights' must give"),
    ({"base": "gpt2", "adapters": [], "weights": []}, "field 'adapters' must list"),
    ({"base": "gpt2", "adapters": ["ab"], "weights": [1.0]}, "field 'adapters' must list"),
    ({"base": "gpt2", "adapters": [["a", "/x,y/a"]], "weights": [1.0]}, "holds a comma"),
])
def test_a_composition_file_that_is_not_exactly_what_lorahub_records_is_one_line(tmp_path, recorded, refused):
    import json

    from ctrlkit.backbones.adapter_composition import COMPOSITION_FILE, read_composition
    from ctrlkit.errors import ConfigurationError

    (tmp_path / COMPOSITION_FILE).write_text(json.dumps(recorded))  # 1e400 is written as Infinity
    options = {"model": str(tmp_path), "adapters": "", "adapter_weights": "", "combine": "lorahub"}
    # before: no weights ran as an equal merge, and "12" as the weights 1 and 2, without a word
    with pytest.raises(ConfigurationError) as caught:
        read_composition(options, "hf")
    assert str(caught.value).startswith(f"{tmp_path / COMPOSITION_FILE}: ") and refused in str(caught.value)
    assert options["adapters"] == ""  # nothing taken from a file that was refused
