"""Adapters (peft): ``ctrlkit train --peft lora|prefix`` and ``hf.adapters`` composition, on tiny
BART, T5 and GPT-2 models built in the fixture. Every number is checked against one computed here
from the saved files or the model's own modules."""

import json
import shutil

import pytest

pytest.importorskip("torch", reason="adapters need torch")
pytest.importorskip("transformers", reason="adapters need transformers")
pytest.importorskip("peft", reason="adapters need peft")

import peft  # noqa: E402
import torch  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

import ctrlkit  # noqa: E402
from ctrlkit import ModelInput  # noqa: E402
from ctrlkit.backbones import adapters  # noqa: E402
from ctrlkit.backbones.hf import HFSeq2Seq  # noqa: E402
from ctrlkit.backbones.hf_base import HFBackbone  # noqa: E402
from ctrlkit.cli import cli  # noqa: E402
from ctrlkit.controls import apply_control  # noqa: E402
from ctrlkit.engine.generation import fit_or_restore  # noqa: E402
from ctrlkit.training.trainer import train  # noqa: E402

from helpers import tiny_models  # noqa: E402

pytestmark = pytest.mark.slow
GREEDY = {"max_new_tokens": 8, "num_beams": 1}
TEXT = "The coach praised the players after the match, and investors bought shares of the club."


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-peft")
    return {"bart": tiny_models.build_bart(root / "bart"), "t5": tiny_models.build_t5(root / "t5"),
            "gpt2": tiny_models.build_gpt2(root / "gpt2")}


@pytest.fixture
def trained(monkeypatch):
    """The backbone object a training saved (the in-memory model), caught as it saves."""
    caught = {}
    original = HFBackbone.save

    def save(self, directory):
        caught["backbone"] = self
        return original(self, directory)

    monkeypatch.setattr(HFBackbone, "save", save)
    return caught


def invoke(*args):
    result = CliRunner().invoke(cli, [str(arg) for arg in args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def _fresh(path, kind="seq2seq"):
    import transformers

    auto = transformers.AutoModelForSeq2SeqLM if kind == "seq2seq" else transformers.AutoModelForCausalLM
    return auto.from_pretrained(path)


def _unwrapped(name: str) -> str:
    """A base model's parameter name as it was before peft wrapped its module."""
    return name.replace(".base_layer", "").replace(".token_adapter", "")


def _controlled_inputs(out, controller, limit):
    """The sample's first ``limit`` examples as the run of ``out`` feeds them to the model."""
    dataset = ctrlkit.get_dataset("sample")
    examples = dataset.load(dataset.default_split)[:limit]
    steering = ctrlkit.get_controller(controller)
    fit_or_restore(steering, ctrlkit.get_backbone(f"hf:{out}"), dataset, topic_space=None)
    return examples, [apply_control(steering, example, ModelInput(source=example.document)) for example in examples]


@pytest.mark.parametrize("kind", ["bart", "t5"])
def test_lora_trains_only_the_adapter_saves_peft_format_and_reloads_to_the_same_outputs(models, tmp_path, trained,
                                                                                        kind):
    out = tmp_path / "adapter"
    args = ["train", "-b", f"hf:{models[kind]}", "-c", "tag", "--split", "test", "--limit", "4", "--batch-size", "4",
            "--max-steps", "6", "--lr", "3e-2", "--peft", "lora", "-o", out]
    said = invoke(*args).output
    record = json.loads((out / "training.json").read_text())
    losses = record["losses"]
    assert len(losses) == 6 and losses[-1] < losses[0] - 0.02, losses  # the same batch each step: it is learnt

    # peft's own format, and nothing of the base model's weights
    files = {path.name for path in out.iterdir()}
    assert {"adapter_config.json", "adapter_model.safetensors", "tokenizer.json", "ctrlkit_controller.json",
            "training.json", adapters.ADDED_TOKENS_FILE} <= files
    assert not files & {"model.safetensors", "pytorch_model.bin", "config.json"}
    saved = load_file(str(out / "adapter_model.safetensors"))
    assert saved and all("lora_" in key or "trainable_tokens_delta" in key for key in saved)
    assert all(saved[key].abs().sum() > 0 for key in saved if "lora_B" in key)  # trained: B starts at zero
    config = json.loads((out / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == str(models[kind].resolve())
    defaults = peft.utils.constants.TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING[kind]
    assert record["config"]["peft"] == {"method": "lora", "rank": 8, "alpha": 16.0, "dropout": 0.05,
                                        "targets": sorted(defaults), "trainable_token_indices": [800]}

    # only the adapter changed: every base weight is the one in the base model's folder
    backbone = trained["backbone"]
    original = _fresh(models[kind]).state_dict()
    base = {_unwrapped(name): value for name, value in backbone.model.get_base_model().state_dict().items()
            if "lora_" not in name and "trainable_tokens" not in name}
    assert set(base) == set(original)
    rows = load_file(str(out / adapters.ADDED_TOKENS_FILE))
    for name, value in base.items():
        if value.shape == original[name].shape:
            assert torch.equal(value, original[name]), name
            continue
        # one token longer for [TAG] (embeddings, BART's final_logits_bias): the old part unchanged
        grown = next(d for d in range(value.dim()) if value.shape[d] != original[name].shape[d])
        assert torch.equal(value.narrow(grown, 0, original[name].shape[grown]), original[name]), name
        if value.dim() == 2 and grown == 0:  # and the new row as ctrlkit saved it
            assert torch.equal(value[-1:], rows["input"]), name

    # the count: LoRA's A and B in every adapted module, and [TAG]'s row; the total adds the base model's
    model = backbone.model
    lora = sum(module.r["default"] * (module.in_features + module.out_features) for module in model.modules()
               if isinstance(module, peft.tuners.lora.LoraLayer))
    width = model.get_input_embeddings().weight.shape[1]
    assert record["trainable_parameters"] == lora + width == sum(
        p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in _fresh(models[kind]).parameters()) + width + lora + width
    assert record["total_parameters"] == total
    assert record["trainable_share"] == round(record["trainable_parameters"] / total, 6)
    assert (f"train [tag]: {record['trainable_parameters']:,} of {total:,} parameters trainable "
            f"({record['trainable_parameters'] / total:.2%})") in said

    # ctrlkit run -b hf:OUT restores base plus adapter: the in-memory model's greedy outputs
    invoke("run", "-b", f"hf:{out}", "-c", "tag", "--limit", "3", "-m", "rouge", "--no-baseline", "-o",
           tmp_path / "run", "--set", "hf.max_new_tokens=8", "--set", "hf.num_beams=1")
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    examples, inputs = _controlled_inputs(out, "tag", 3)
    assert any("[TAG]" in model_input.source for model_input in inputs)
    backbone.options.update(GREEDY)
    in_memory = dict(zip([example.id for example in examples], backbone.generate(inputs)))
    assert {sample["id"]: sample["prediction"] for sample in samples} == in_memory and all(in_memory.values())
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["config"]["options"]["hf"]["model"] == str(out)
    _same_loss_and_not_the_base_models(ctrlkit.get_backbone(f"hf:{out}"), backbone, inputs[:1])
    # a sweep reuses the adapter's outputs only while its base model's files are the same too
    base_files = [(path.name, path.stat().st_size, path.stat().st_mtime_ns) for path in models[kind].iterdir()]
    assert ctrlkit.get_backbone(f"hf:{out}").identity()["base_files"] == sorted(base_files)


def _same_loss_and_not_the_base_models(reloaded, in_memory, inputs):
    """The reloaded model's loss on a pair is the in-memory model's, and not the base model's."""
    batch = reloaded.encoder_inputs(inputs)
    labels = reloaded.tokenizer(text_target=["The coach praised the players."], return_tensors="pt")["input_ids"]
    with torch.no_grad():
        again = reloaded.model(**batch, labels=labels).loss
        before = in_memory.model(**batch, labels=labels).loss
        with reloaded.model.disable_adapter():
            without = reloaded.model(**batch, labels=labels).loss
    assert again == before and abs(again - without) > 1e-4


@pytest.mark.parametrize("kind", ["bart", "t5"])
def test_prefix_tuning_trains_the_prefix_only_and_reloads(models, tmp_path, trained, kind):
    out = tmp_path / "prefix"
    record = train(backbone=f"hf:{models[kind]}", out=str(out), controller="prepend", split="test", limit=4,
                   batch_size=4, max_steps=4, lr=5e-2, peft="prefix", prefix_length=5)
    assert record["losses"][-1] < record["losses"][0]
    assert set(load_file(str(out / "adapter_model.safetensors"))) == {"prompt_embeddings"}
    model = trained["backbone"].model
    counted = sum(p.numel() for p in model.parameters() if p.requires_grad)
    config = model.peft_config["default"]
    assert record["trainable_parameters"] == counted == 5 * config.num_layers * 2 * config.token_dim
    assert record["config"]["peft"] == {"method": "prefix", "prefix_length": 5}

    # the <sep> row prepend added stays as drawn (prefix tuning trains the prefix only) and comes back
    reloaded = ctrlkit.get_backbone(f"hf:{out}", **GREEDY)
    inputs = [ModelInput(source=f"sports <sep> {TEXT}"), ModelInput(source="health <sep> Doctors said.")]
    trained["backbone"].options.update(GREEDY)
    assert reloaded.generate(inputs) == trained["backbone"].generate(inputs)
    _same_loss_and_not_the_base_models(reloaded, trained["backbone"], inputs[:1])  # the prefix is there, in use


def test_an_adapter_training_resumes_from_its_checkpoint_and_refuses_changed_settings(models, tmp_path, monkeypatch):
    args = dict(backbone=f"hf:{models['bart']}", controller="tag", split="test", limit=16, max_steps=4,
                batch_size=4, lr=1e-2, save_every=2, peft="lora", lora_dropout=0.0)  # no dropout: same losses
    whole = train(out=str(tmp_path / "whole"), **args)
    calls = {"n": 0}
    original = HFSeq2Seq.loss

    def interrupted(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return original(self, *a, **k)

    monkeypatch.setattr(HFSeq2Seq, "loss", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(out=str(tmp_path / "resumed"), **args)
    checkpoint = tmp_path / "resumed" / "checkpoint"
    assert (checkpoint / "adapter_config.json").is_file() and not (checkpoint / "model.safetensors").exists()
    monkeypatch.setattr(HFSeq2Seq, "loss", original)
    with pytest.raises(ctrlkit.CtrlkitError, match=r"different settings \(peft\)"):
        train(out=str(tmp_path / "resumed"), **{**args, "lora_rank": 4})
    resumed = train(out=str(tmp_path / "resumed"), **args)
    assert resumed["resumed"] and resumed["steps"] == 4
    assert resumed["losses"] == pytest.approx(whole["losses"], abs=1e-5)
    assert resumed["trainable_parameters"] == whole["trainable_parameters"]
    final, straight = (load_file(str(tmp_path / name / "adapter_model.safetensors")) for name in ("resumed", "whole"))
    assert set(final) == set(straight)
    for key in final:
        torch.testing.assert_close(final[key], straight[key], atol=1e-5, rtol=1e-4)


def test_full_fine_tuning_counts_every_parameter(models, tmp_path):
    record = train(backbone=f"hf:{models['t5']}", out=str(tmp_path / "full"), controller="tag", split="test",
                   limit=4, batch_size=4, max_steps=1)
    width = 64  # the tiny T5's d_model: one row for [TAG], in the tied input and output embeddings
    total = sum(p.numel() for p in _fresh(models["t5"]).parameters()) + width
    assert record["trainable_parameters"] == record["total_parameters"] == total
    assert record["trainable_share"] == 1.0 and record["config"]["peft"] is None


def test_the_embed_controllers_tables_train_and_save_beside_a_lora_adapter(models, tmp_path, trained, monkeypatch):
    drawn = {}
    original = HFSeq2Seq.add_input_embeddings

    def add(self, key, count):
        table = original(self, key, count)
        drawn.setdefault(key, table.weight.detach().clone())
        return table

    monkeypatch.setattr(HFSeq2Seq, "add_input_embeddings", add)
    out = tmp_path / "embed"
    record = train(backbone=f"hf:{models['bart']}", out=str(out), controller="embed", split="test", limit=4,
                   batch_size=4, max_steps=2, lr=1e-2, peft="lora")
    table = load_file(str(out / "ctrlkit_input_embeddings.safetensors"))["topic"]
    assert table.shape == (6, 64) and not torch.equal(table, drawn["topic"])  # trained
    lora = sum(p.numel() for name, p in trained["backbone"].model.named_parameters() if "lora_" in name)
    assert record["trainable_parameters"] == lora + table.numel()
    reloaded = ctrlkit.get_backbone(f"hf:{out}")
    embed = ctrlkit.get_controller("embed")
    fit_or_restore(embed, reloaded, ctrlkit.get_dataset("sample"), topic_space=None)
    embed.prepare(reloaded)
    assert torch.equal(reloaded.input_embeddings["topic"].weight.detach(), table)


@pytest.mark.parametrize("method", ["lora", "prefix"])
def test_a_gpt2_adapter_made_with_peft_generates_through_hf_causal(models, tmp_path, method):
    """Made with peft directly: ctrlkit trains causal models with the decoder-only loss (another change)."""
    torch.manual_seed(0)
    config = (peft.LoraConfig(task_type="CAUSAL_LM", r=4, init_lora_weights=False) if method == "lora"
              else peft.PrefixTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=4))
    model = peft.get_peft_model(_fresh(models["gpt2"], "causal"), config).eval()
    model.save_pretrained(tmp_path / "adapter")
    backbone = ctrlkit.get_backbone(f"hf-causal:{tmp_path / 'adapter'}", **GREEDY)
    inputs = [ModelInput(source="The coach praised the players."), ModelInput(source=TEXT)]
    got = backbone.generate(inputs)
    assert backbone.has_adapter
    tokenizer = backbone.tokenizer  # the base model's: the adapter folder holds none
    expected = []
    for model_input in inputs:
        ids = torch.tensor([tokenizer(backbone.prompt(model_input))["input_ids"]])
        with torch.no_grad():
            output = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=8,
                                    num_beams=1, do_sample=False, pad_token_id=tokenizer.pad_token_id)
        expected.append(tokenizer.decode(output[0, ids.shape[1]:], skip_special_tokens=True).strip())
    assert got == expected and any(got)
    plain = ctrlkit.get_backbone(f"hf-causal:{models['gpt2']}", **GREEDY).generate(inputs)
    assert plain != got  # the adapter is in use


def test_the_base_model_is_recorded_absolute_and_a_moved_one_is_one_line(models, tmp_path, monkeypatch):
    shutil.copytree(models["bart"], tmp_path / "base")
    monkeypatch.chdir(tmp_path)
    train(backbone="hf:./base", out="adapter", split="test", limit=4, batch_size=4, max_steps=1, peft="lora")
    recorded = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())["base_model_name_or_path"]
    assert recorded == str((tmp_path / "base").resolve())
    (tmp_path / "base").rename(tmp_path / "elsewhere")
    with pytest.raises(ctrlkit.ConfigurationError) as caught:
        ctrlkit.get_backbone(f"hf:{tmp_path / 'adapter'}").generate([ModelInput(source="x")])
    message = str(caught.value)
    assert "\n" not in message and str(tmp_path / "adapter") in message and recorded in message, message


def test_an_adapter_that_does_not_fit_its_base_model_is_one_line(models, tmp_path):
    peft.get_peft_model(_fresh(models["t5"]), peft.LoraConfig(task_type="SEQ_2_SEQ_LM")).save_pretrained(tmp_path / "a")
    config = json.loads((tmp_path / "a" / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = str(models["bart"])  # T5's modules q, v: BART has none
    (tmp_path / "a" / "adapter_config.json").write_text(json.dumps(config))
    _refused(lambda: ctrlkit.get_backbone(f"hf:{tmp_path / 'a'}").generate([ModelInput(source="x")]),
             rf"^backbone 'hf': the adapter in {tmp_path / 'a'} does not fit its base model: .*not found")


@pytest.fixture(scope="session")
def two_adapters(models, tmp_path_factory):
    """Two LoRA adapters of the tiny BART trained with the tag controller (so each trained [TAG]'s
    row), of different ranks, scales and seeds."""
    root = tmp_path_factory.mktemp("two-adapters")
    for name, rank, alpha, seed in (("length", 4, 8.0, 0), ("focus", 8, 4.0, 1)):
        train(backbone=f"hf:{models['bart']}", out=str(root / name), controller="tag", split="test", limit=4,
              batch_size=4, max_steps=2, lr=5e-2, seed=seed, peft="lora", lora_rank=rank, lora_alpha=alpha)
    return root


def _deltas(folder):
    """Each adapted module's weight change B @ A * alpha / r, and each added token's row, from the saved files."""
    config = json.loads((folder / "adapter_config.json").read_text())
    saved = load_file(str(folder / "adapter_model.safetensors"))
    scale = config["lora_alpha"] / config["r"]
    deltas = {key[:-len(".lora_A.weight")]: saved[key.replace("lora_A", "lora_B")] @ saved[key] * scale
              for key in saved if key.endswith("lora_A.weight")}
    rows = saved["base_model.model.model.shared.token_adapter.trainable_tokens_delta"]
    return deltas, rows


def test_merge_is_the_weighted_sum_of_the_adapters_weight_changes(models, two_adapters, tmp_path):
    spec = f"length={two_adapters / 'length'},focus={two_adapters / 'focus'}"
    backbone = ctrlkit.get_backbone(f"hf:{models['bart']}", adapters=spec, adapter_weights="0.7,0.3", **GREEDY)
    assert backbone.generate([ModelInput(source=TEXT)])
    (length, length_rows), (focus, focus_rows) = _deltas(two_adapters / "length"), _deltas(two_adapters / "focus")
    merged = {name: module for name, module in backbone.model.named_modules()
              if isinstance(module, peft.tuners.lora.LoraLayer)}
    assert set(merged) == set(length) == set(focus) and len(merged) == 12
    for name, module in merged.items():
        torch.testing.assert_close(module.get_delta_weight("combined"), 0.7 * length[name] + 0.3 * focus[name])
    assert backbone.model.active_adapters == ["combined"]
    shared = backbone.model.get_base_model().model.shared.token_adapter.trainable_tokens_delta
    torch.testing.assert_close(shared["combined"], 0.7 * length_rows + 0.3 * focus_rows)

    # results.json records the adapters and the weights used; without weights, equal ones
    invoke("run", "-b", f"hf:{models['bart']}", "-c", "tag", "--limit", "2", "-m", "rouge", "--no-baseline",
           "-o", tmp_path / "run", "--set", f"hf.adapters={spec}", "--set", "hf.max_new_tokens=4",
           "--set", "hf.num_beams=1")
    options = json.loads((tmp_path / "run" / "results.json").read_text())["config"]["options"]["hf"]
    assert options["adapters"] == spec and options["combine"] == "merge" and options["adapter_weights"] == "0.5,0.5"
    plain = ctrlkit.get_backbone(f"hf:{models['bart']}").identity()["options"]
    assert not {"adapters", "combine", "adapter_weights"} & set(plain)  # earlier runs' cache keys unchanged
    assert set(backbone.identity()["adapter_files"]) == {"length", "focus"}


def test_peft_cat_merge_is_the_weighted_sum_and_linear_is_not(models):
    """Why merge uses combination_type="cat": "linear" multiplies the summed B's by the summed A's."""
    model = _fresh(models["bart"])
    torch.manual_seed(0)
    model = peft.get_peft_model(model, peft.LoraConfig(task_type="SEQ_2_SEQ_LM", r=4, lora_alpha=8,
                                                       init_lora_weights=False), adapter_name="one")
    model.add_adapter("two", peft.LoraConfig(task_type="SEQ_2_SEQ_LM", r=4, lora_alpha=2, init_lora_weights=False))
    for kind in ("cat", "linear"):
        model.add_weighted_adapter(["one", "two"], [0.7, 0.3], kind, combination_type=kind)
    layers = [module for module in model.modules() if isinstance(module, peft.tuners.lora.LoraLayer)]
    for layer in layers:
        weighted = 0.7 * layer.get_delta_weight("one") + 0.3 * layer.get_delta_weight("two")
        torch.testing.assert_close(layer.get_delta_weight("cat"), weighted)
    assert not any(torch.allclose(layer.get_delta_weight("linear"), 0.7 * layer.get_delta_weight("one")
                                  + 0.3 * layer.get_delta_weight("two"), atol=1e-4) for layer in layers)


def test_sequence_feeds_the_first_adapters_summary_to_the_second(models, two_adapters):
    spec = f"length={two_adapters / 'length'},focus={two_adapters / 'focus'}"
    backbone = ctrlkit.get_backbone(f"hf:{models['bart']}", adapters=spec, combine="sequence", max_new_tokens=12,
                                    num_beams=1, no_repeat_ngram_size=1)
    stages = []
    texts = backbone.texts

    def recorded(inputs):
        made = texts(inputs)
        stages.append((backbone.model.active_adapter, made))
        return made

    backbone.texts = recorded
    inputs = [ModelInput(source=TEXT), ModelInput(source="Doctors said the vaccine works.")]
    final = backbone.generate(inputs)
    alone = ctrlkit.get_backbone(f"hf:{two_adapters / 'length'}", max_new_tokens=12, num_beams=1,
                                 no_repeat_ngram_size=1).generate(inputs)
    assert [adapter for adapter, _ in stages] == ["length", "focus"]
    assert stages[0][1] == [TEXT, "Doctors said the vaccine works."]
    assert stages[1][1] == alone and all(alone)  # the second stage reads what the first adapter wrote
    focus = ctrlkit.get_backbone(f"hf:{two_adapters / 'focus'}", max_new_tokens=12, num_beams=1,
                                 no_repeat_ngram_size=1)
    assert final == focus.generate([ModelInput(source=summary) for summary in alone])


def test_adapters_compose_on_a_causal_model_too(models, tmp_path):
    for seed, name in enumerate(("a", "b")):
        torch.manual_seed(seed)
        config = peft.LoraConfig(task_type="CAUSAL_LM", r=4, lora_alpha=4 * (seed + 1), init_lora_weights=False)
        peft.get_peft_model(_fresh(models["gpt2"], "causal"), config).save_pretrained(tmp_path / name)
    spec = f"a={tmp_path / 'a'},b={tmp_path / 'b'}"
    merged = ctrlkit.get_backbone(f"hf-causal:{models['gpt2']}", adapters=spec, **GREEDY)
    assert merged.generate([ModelInput(source=TEXT)])
    layers = [module for module in merged.model.modules() if isinstance(module, peft.tuners.lora.LoraLayer)]
    assert layers
    for layer in layers:  # GPT-2's Conv1D stores weights transposed: peft's delta handles it for every adapter
        torch.testing.assert_close(layer.get_delta_weight("combined"),
                                   0.5 * layer.get_delta_weight("a") + 0.5 * layer.get_delta_weight("b"))
    staged = ctrlkit.get_backbone(f"hf-causal:{models['gpt2']}", adapters=spec, combine="sequence", **GREEDY)
    first = ctrlkit.get_backbone(f"hf-causal:{tmp_path / 'a'}", **GREEDY).generate([ModelInput(source=TEXT)])
    second = ctrlkit.get_backbone(f"hf-causal:{tmp_path / 'b'}", **GREEDY).generate([ModelInput(source=first[0])])
    assert staged.generate([ModelInput(source=TEXT)]) == second and first[0]


def _refused(call, match):
    with pytest.raises(ctrlkit.CtrlkitError, match=match) as caught:
        call()
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("given, match", [
    ({"peft": "ia3"}, r"--peft must be one of lora, prefix; got 'ia3'"),
    ({"peft": "lora", "lora_rank": 0}, r"--lora-rank must be a whole number of at least 1; got 0"),
    ({"peft": "lora", "lora_alpha": float("nan")}, r"--lora-alpha must be a finite number above 0"),
    ({"peft": "lora", "lora_dropout": 1.0}, r"--lora-dropout must be at least 0 and below 1; got 1.0"),
    ({"peft": "lora", "lora_targets": "q_proj,"}, r"--lora-targets names an empty module"),
    ({"peft": "lora", "prefix_length": 5}, r"--prefix-length does not apply to --peft lora"),
    ({"peft": "prefix", "lora_rank": 4}, r"--lora-rank does not apply to --peft prefix"),
    ({"peft": "prefix", "prefix_length": 0}, r"--prefix-length must be a whole number of at least 1"),
    ({"lora_rank": 4}, r"--lora-rank needs --peft lora or --peft prefix"),
    ({"peft": "lora", "lora_targets": "no_such_module"}, r"backbone 'hf' cannot take a lora adapter: .*no_such_module"),
])
def test_bad_peft_settings_are_refused_in_one_line(models, tmp_path, given, match):
    _refused(lambda: train(backbone=f"hf:{models['bart']}", out=str(tmp_path / "m"), split="test", limit=4,
                           max_steps=1, **given), match)
    assert not (tmp_path / "m").exists()


def test_bad_peft_flags_are_one_line_on_the_command_line(models, tmp_path):
    result = CliRunner().invoke(cli, ["train", "-b", f"hf:{models['bart']}", "-o", str(tmp_path / "m"), "--split",
                                      "test", "--peft", "prefix", "--lora-targets", "q_proj"])
    assert result.exit_code == 1 and result.output == "Error: --lora-targets does not apply to --peft prefix\n"


def test_missing_peft_is_one_line_naming_the_install(models, tmp_path, monkeypatch):
    monkeypatch.setattr(adapters, "find_spec", lambda name: None)
    _refused(lambda: train(backbone=f"hf:{models['bart']}", out=str(tmp_path / "m"), split="test", peft="lora"),
             r"^--peft lora needs peft: pip install 'ctrlkit\[peft\]'$")


def test_bad_compositions_are_refused_in_one_line(models, two_adapters, tmp_path):
    prefix = tmp_path / "prefix"
    peft.get_peft_model(_fresh(models["bart"]), peft.PrefixTuningConfig(task_type="SEQ_2_SEQ_LM",
                                                                        num_virtual_tokens=2)).save_pretrained(prefix)
    other_base = tmp_path / "t5-adapter"
    peft.get_peft_model(_fresh(models["t5"]), peft.LoraConfig(task_type="SEQ_2_SEQ_LM")).save_pretrained(other_base)
    length, focus = two_adapters / "length", two_adapters / "focus"
    bart = f"hf:{models['bart']}"
    cases = [
        (dict(adapters=f"a={length}", combine="blend"), r"option 'hf.combine' must be one of merge, sequence"),
        (dict(adapters=f"a={length},b={focus}", adapter_weights="0.5"), r"gives 1 weights for 2 adapters"),
        (dict(adapters=f"a={length},b={focus}", adapter_weights="1,x"), r"expects numbers, e.g. 0.7,0.3"),
        (dict(adapters=f"a={length},b={prefix}"), rf"merge merges LoRA adapters; 'b' \({prefix}\) is PREFIX_TUNING"),
        (dict(adapters=f"a={length},b={other_base}"),
         rf"adapter 'b' \({other_base}\) was trained on the base model {models['t5'].resolve()}, not on "
         rf"{models['bart'].resolve()}"),
        (dict(adapters=f"a={length},b={focus}", combine="sequence", adapter_weights="1,1"),
         r"'hf.adapter_weights' applies to hf.combine=merge"),
        (dict(adapters=f"a={length},b={models['t5']}"), r"holds no adapter_config.json"),
        (dict(adapters=f"a={length},a={focus}"), r"the name 'a' is repeated"),
        (dict(adapters=f"{length}"), r"is not NAME=DIR"),
        (dict(adapter_weights="1"), r"'hf.adapter_weights' needs hf.adapters"),
    ]
    for options, match in cases:
        _refused(lambda: ctrlkit.get_backbone(bart, **options).identity(), match)
    _refused(lambda: ctrlkit.get_backbone(f"hf:{length}", adapters=f"b={focus}").identity(), r"is itself an adapter")
    _refused(lambda: train(backbone=bart, out=str(tmp_path / "m"), split="test", limit=4, max_steps=1,
                           options={"hf": {"adapters": f"a={length}"}}), r"ctrlkit train takes one model")
