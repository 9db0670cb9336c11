"""The transformers backbones and `ctrlkit train`, on tiny models built in the fixtures."""

import json

import pytest

pytest.importorskip("torch", reason="the neural backbone tests need torch")
pytest.importorskip("transformers", reason="the neural backbone tests need transformers")

import torch  # noqa: E402
from click.testing import CliRunner  # noqa: E402

import ctrlkit  # noqa: E402
from ctrlkit import ModelInput  # noqa: E402
from ctrlkit.cli import cli  # noqa: E402
from ctrlkit.controls import apply_control  # noqa: E402
from ctrlkit.engine.generation import fit_or_restore  # noqa: E402
from ctrlkit.topics import TopicSpace  # noqa: E402

from helpers import tiny_models  # noqa: E402

FAST = ["--set", "hf.max_new_tokens=8", "--set", "hf.num_beams=1"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {"bart": tiny_models.build_bart(root / "bart"), "t5": tiny_models.build_t5(root / "t5"),
            "gpt2": tiny_models.build_gpt2(root / "gpt2")}


def invoke(*args):
    result = CliRunner().invoke(cli, [str(arg) for arg in args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


@pytest.mark.parametrize("kind, controller", [
    ("bart", "prepend"), ("bart", "tag"), ("bart", "prepend+tag"), ("bart", "embed"),
    ("t5", "prepend"), ("t5", "tag"), ("t5", "prepend+tag"), ("t5", "embed"),
])
def test_train_reload_and_run(models, tmp_path, kind, controller):
    out = tmp_path / "model"
    invoke("train", "-b", f"hf:{models[kind]}", "-c", controller, "--split", "test", "--limit", "8",
           "--max-steps", "3", "--batch-size", "4", "--lr", "1e-3", "-o", out)
    record = json.loads((out / "training.json").read_text())
    assert record["steps"] == 3 and len(record["losses"]) == 3 and record["config"]["controller"] == controller
    saved = json.loads((out / "ctrlkit_controller.json").read_text())
    assert saved["controller"] == controller
    assert not (out / "checkpoint").exists()

    invoke("run", "-b", f"hf:{out}", "-c", controller, "--limit", "4", "-m", "rouge", "--no-baseline",
           "-o", tmp_path / "run", *FAST)
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 4 and all(isinstance(s["prediction"], str) for s in samples)

    backbone = ctrlkit.get_backbone(f"hf:{out}")
    restored = ctrlkit.get_controller(controller)
    fit_or_restore(restored, backbone, ctrlkit.get_dataset("sample"), topic_space=None)  # no space: restored
    assert restored.state() == saved["state"]
    if "tag" in controller or "prepend" in controller:
        marker = "[TAG]" if "tag" in controller else "<sep>"
        assert backbone.tokenizer.tokenize(f"a {marker} b").count(marker) == 1  # one special token
    if controller == "embed":
        from safetensors.torch import load_file

        restored.prepare(backbone)
        table = load_file(str(out / "ctrlkit_input_embeddings.safetensors"))["topic"]
        assert table.shape == (6, 64)
        assert torch.equal(backbone.input_embeddings["topic"].weight.detach().cpu(), table)


def _space():
    return TopicSpace.fit(ctrlkit.get_dataset("sample").topic_documents(), "tfidf")


def _embedded(model_path, text, topic, layer):
    """Encoder input (as ``layer`` receives it) for ``text`` with the embed controller, plus the
    pieces to check it against: token ids, the model's weights, and the topic's row."""
    backbone = ctrlkit.get_backbone(f"hf:{model_path}")
    embed = ctrlkit.get_controller("embed")
    embed.fit([], _space())
    embed.prepare(backbone)
    model_input = embed.apply(ctrlkit.Example("x", text, controls={"topic": topic}), ModelInput(source=text))
    captured = {}
    handle = layer(backbone.model).register_forward_pre_hook(lambda _, args: captured.setdefault("x", args[0]))
    with torch.no_grad():
        backbone.model.get_encoder()(**backbone.encoder_inputs([model_input]))
    handle.remove()
    topic_row = backbone.input_embeddings["topic"].weight[embed.topics.index(topic)].detach()
    return captured["x"][0], backbone.tokenizer(text)["input_ids"], backbone.model, topic_row


def test_embed_adds_word_position_and_topic_embeddings_bart(models):
    got, ids, model, topic = _embedded(models["bart"], "The coach praised the players.", "sports",
                                       lambda m: m.model.encoder.layernorm_embedding)
    weights = model.state_dict()
    scale = model.config.d_model ** 0.5 if model.config.scale_embedding else 1.0
    word = weights["model.shared.weight"][ids] * scale
    position = weights["model.encoder.embed_positions.weight"][2 : 2 + len(ids)]  # BART offsets positions by 2
    torch.testing.assert_close(got, word + position + topic)
    assert not torch.allclose(got, word + position)  # the topic embedding is really there


def test_embed_adds_word_and_topic_embeddings_t5(models):
    """T5 has no absolute positions (relative attention bias), so its input is word + topic."""
    got, ids, model, topic = _embedded(models["t5"], "Investors bought shares.", "business",
                                       lambda m: m.encoder.block[0])
    torch.testing.assert_close(got, model.state_dict()["shared.weight"][ids] + topic)


def test_embed_refuses_an_unseen_topic_before_generating(models):
    embed = ctrlkit.get_controller("embed")
    embed.load_state({"topics": ["sports", "health"]})
    with pytest.raises(ctrlkit.CtrlkitError, match="no embedding for topic 'business' of example 'e'.*unseen topics"):
        embed.apply(ctrlkit.Example("e", "text", controls={"topic": "business"}), ModelInput(source="text"))


def test_mismatched_controller_and_backbone_are_refused_in_one_line():
    with pytest.raises(ctrlkit.ConfigurationError,
                       match="controller 'embed' needs backbone capability input_embeddings, which backbone "
                             "'extractive' lacks"):
        ctrlkit.run(controller="embed", metrics=["rouge"])


def test_training_resumes_from_its_checkpoint(models, tmp_path, monkeypatch, capsys):
    from ctrlkit.backbones.hf import HFSeq2Seq
    from ctrlkit.training.trainer import train

    args = dict(backbone=f"hf:{models['bart']}", controller="tag", split="test", limit=16, max_steps=4,
                batch_size=4, lr=1e-3, save_every=2)
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
    assert json.loads((tmp_path / "resumed" / "checkpoint" / "trainer_state.json").read_text())["step"] == 2
    monkeypatch.setattr(HFSeq2Seq, "loss", original)
    capsys.readouterr()
    monkeypatch.setenv("CTRLKIT_PROGRESS_SECONDS", "0.01")
    resumed = train(out=str(tmp_path / "resumed"), progress=True, **args)
    assert resumed["resumed"] and resumed["steps"] == 4
    said = capsys.readouterr().err.splitlines()
    assert said[0] == f"ctrlkit: train [tag]: resuming: 2 of 4 steps already done ({tmp_path / 'resumed' / 'checkpoint'})"
    share = f"{resumed['trainable_share']:.2%}"
    assert said[1] == (f"ctrlkit: train [tag]: {resumed['trainable_parameters']:,} of {resumed['total_parameters']:,} "
                       f"parameters trainable ({share})") and share == "100.00%"  # full fine-tuning
    # off a terminal, plain lines from step 2 on, the last one with the last loss
    assert said[2].startswith("ctrlkit: train [tag]: 2/4 steps, ") and said[-1].startswith(
        f"ctrlkit: train [tag]: 4/4 steps, loss {resumed['losses'][-1]:.4f}, 0:"), said
    assert resumed["losses"] == pytest.approx(whole["losses"], abs=1e-5)
    with pytest.raises(ctrlkit.CtrlkitError, match="already holds a trained model"):
        train(out=str(tmp_path / "resumed"), **args)


def test_eval_split_and_early_stopping_keep_the_best_model(models, tmp_path):
    from ctrlkit.training.trainer import train

    record = train(backbone=f"hf:{models['bart']}", out=str(tmp_path / "m"), split="test", eval_split="test",
                   limit=8, epochs=3, batch_size=8, lr=1e-3, patience=1)
    assert len(record["eval_losses"]) == record["steps"] <= 3
    assert record["best_eval_loss"] == pytest.approx(min(record["eval_losses"]), abs=1e-5)


def test_causal_backbone_returns_only_new_text_and_pads_left(models):
    backbone = ctrlkit.get_backbone(f"hf-causal:{models['gpt2']}", max_new_tokens=6, num_beams=1)
    short, long = ModelInput(source="The coach won."), ModelInput(source="Investors bought shares of the bank today.")
    together = backbone.generate([short, long])
    assert together == [backbone.generate([short])[0], backbone.generate([long])[0]]
    ids = backbone.tokenizer(backbone.prompt(short))["input_ids"]
    with torch.no_grad():
        full = backbone.model.generate(torch.tensor([ids]), max_new_tokens=6, num_beams=1, do_sample=False,
                                       pad_token_id=backbone.tokenizer.pad_token_id)
    assert together[0] == backbone.tokenizer.decode(full[0, len(ids):], skip_special_tokens=True).strip()


def test_truncation_is_counted(models):
    backbone = ctrlkit.get_backbone(f"hf:{models['bart']}", max_input_tokens=16, max_new_tokens=4, num_beams=1)
    backbone.generate([ModelInput(source="word " * 100), ModelInput(source="short")])
    assert (backbone.truncated, backbone.tokenized, backbone.truncated_to) == (1, 2, 16)


@pytest.mark.parametrize("spec", ["hf", "hf-causal"])
def test_truncation_is_reported_once_per_arm_not_once_per_batch(models, spec, caplog):
    """Four batches of two: one line for the run and one for the baseline, each with the total,
    which the tokenizer counts independently here."""
    kind = "bart" if spec == "hf" else "gpt2"
    limit = 24
    with caplog.at_level("WARNING", logger="ctrlkit"):
        result = ctrlkit.run(controller="prepend", backbone=f"{spec}:{models[kind]}", metrics=["rouge"], limit=8,
                             batch_size=2, cache=False,
                             options={spec: {"max_new_tokens": 2, "num_beams": 1, "max_input_tokens": limit}})
    lines = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert len(lines) == 2, lines
    backbone = ctrlkit.get_backbone(f"{spec}:{models[kind]}", max_new_tokens=2, max_input_tokens=limit)
    examples = ctrlkit.get_dataset("sample").load("test")[:8]
    for arm, line in zip(("prepend", "none"), lines):
        controller = ctrlkit.create_controller(arm, {})
        fit_or_restore(controller, backbone, ctrlkit.get_dataset("sample"), None)
        controller.prepare(backbone)
        texts = [backbone.texts([apply_control(controller, e, ModelInput(source=e.document))])[0] if spec == "hf"
                 else backbone.prompt(apply_control(controller, e, ModelInput(source=e.document))) for e in examples]
        long = sum(len(backbone.tokenizer(text)["input_ids"]) > limit for text in texts)
        assert 0 < long
        assert f"backbone '{spec}' (controller '{arm}'): {long} of 8 inputs truncated to {limit} tokens" in line
    assert len(result.samples) == 8


def test_a_neural_run_shows_no_library_progress_bars_or_warnings(models, tmp_path):
    """transformers draws "Loading weights" bars and logs advice; ctrlkit's own lines stay."""
    import transformers

    before = transformers.utils.logging.is_progress_bar_enabled()
    result = invoke("run", "-b", f"hf:{models['bart']}", "-c", "tag", "-m", "rouge", "--limit", 2, "--no-cache",
                    "-o", tmp_path / "run", *FAST)
    assert "Loading" not in result.stderr and "it/s]" not in result.stderr, result.stderr
    assert all(line.startswith("ctrlkit: ") or line.startswith("2 examples") or not line
               for line in result.stderr.splitlines()), result.stderr
    assert transformers.utils.logging.is_progress_bar_enabled() == before  # restored for a library user


def test_training_reports_truncation_once(models, tmp_path, caplog):
    from ctrlkit.training.trainer import train

    with caplog.at_level("WARNING", logger="ctrlkit"):
        train(backbone=f"hf:{models['bart']}", out=str(tmp_path / "m"), split="test", limit=4, epochs=2,
              batch_size=2, options={"hf": {"max_input_tokens": 8}})
    lines = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    # every sample document is longer than 8 tokens; 4 examples x 2 epochs, 4 batches
    assert lines == ["ctrlkit: backbone 'hf' (training; an input counts once per epoch): 8 of 8 inputs truncated "
                     "to 8 tokens (--set hf.max_input_tokens=N sets the limit)"]


def test_causal_backbone_uses_the_chat_template_when_the_tokenizer_has_one(models):
    backbone = ctrlkit.get_backbone(f"hf-causal:{models['gpt2']}", max_new_tokens=4, num_beams=1)
    messages = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Summarize: the coach won."})
    assert backbone.prompt(ModelInput(source="x", messages=messages)) == (
        "System: Be brief.\n\nUser: Summarize: the coach won.\n\nAssistant:")  # no template: flattened
    backbone.tokenizer.chat_template = (
        "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
        "{% if add_generation_prompt %}<assistant>{% endif %}")
    assert backbone.prompt(ModelInput(source="x", messages=messages)) == (
        "<system>Be brief.<user>Summarize: the coach won.<assistant>")


def test_hard_prompt_is_plain_text_on_a_base_causal_model_and_a_message_with_a_chat_template(models):
    backbone = ctrlkit.get_backbone(f"hf-causal:{models['gpt2']}", max_new_tokens=4, num_beams=1)
    example = ctrlkit.Example("x", "The coach won.", controls={"topic": "sport", "length": 20})
    hard = ctrlkit.get_controller("prompt", template="hard")
    lines = "Length: 20\nTopic: sport\nDocument: The coach won."
    assert backbone.flattens_messages  # a base model: no chat template
    hard.prepare(backbone)
    rendered = hard.apply(example, ModelInput(source=example.document))
    assert rendered.messages is None and backbone.prompt(rendered) == lines + "\nTL;DR:"
    backbone.tokenizer.chat_template = "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
    assert not backbone.flattens_messages
    hard.prepare(backbone)
    assert backbone.prompt(hard.apply(example, ModelInput(source=example.document))).endswith(f"<user>{lines}")


@pytest.mark.parametrize("kind, spec", [("gpt2", "hf-causal"), ("bart", "hf")])
def test_prompt_controller_runs_on_causal_and_seq2seq_models(models, kind, spec):
    result = ctrlkit.run(controller="prompt", backbone=f"{spec}:{models[kind]}", metrics=["rouge"], baseline=None,
                         limit=3, options={"prompt": {"template": "hard"}, spec: {"max_new_tokens": 4, "num_beams": 1}})
    assert len(result.samples) == 3
    if spec == "hf":
        backbone = ctrlkit.get_backbone(f"hf:{models[kind]}")
        example = ctrlkit.get_dataset("sample").load("test")[0]
        rendered = ctrlkit.get_controller("prompt", template="hard").apply(example, ModelInput(source=example.document))
        text = backbone.texts([rendered])[0]
        assert text.startswith("System: ") and "Topic: " in text and text.endswith("Assistant:")


@pytest.mark.parametrize("build", ["bart", "t5", "pegasus"])
def test_a_zero_topic_embedding_leaves_the_encoder_unchanged(models, tmp_path, build):
    """The embeddings path must equal the token-id path (PEGASUS scales in the encoder)."""
    path = models.get(build) or tiny_models.build_pegasus(tmp_path / build)
    backbone = ctrlkit.get_backbone(f"hf:{path}")
    backbone.add_input_embeddings("topic", 2)
    with torch.no_grad():
        backbone.input_embeddings["topic"].weight.zero_()
        plain = ModelInput(source="The coach praised the players.")
        embedded = plain.replace(features={"input_embeddings": {"topic": 1}})
        encoder = backbone.model.get_encoder()
        expected = encoder(**backbone.encoder_inputs([plain])).last_hidden_state
        got = encoder(**backbone.encoder_inputs([embedded])).last_hidden_state
    torch.testing.assert_close(got, expected)


def test_a_chat_template_is_not_given_a_second_bos(models, monkeypatch):
    from tokenizers import processors

    backbone = ctrlkit.get_backbone(f"hf-causal:{models['gpt2']}", max_new_tokens=2, num_beams=1)
    bos = backbone.tokenizer.bos_token_id
    backbone.tokenizer._tokenizer.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", bos)])  # this tokenizer adds a BOS itself
    backbone.tokenizer.chat_template = "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"
    seen = {}
    original = backbone.model.generate

    def spy(**kwargs):
        seen["ids"] = kwargs["input_ids"]
        return original(**kwargs)

    monkeypatch.setattr(backbone.model, "generate", spy)
    backbone.generate([ModelInput(source="x", messages=({"role": "user", "content": "Hello there"},))])
    assert seen["ids"][0, 0].item() == bos and seen["ids"][0, 1].item() != bos
    backbone.generate([ModelInput(source="Hello there")])  # no template: the tokenizer's own BOS stays
    assert seen["ids"][0, 0].item() == bos


def test_loading_errors_are_one_line(models, tmp_path):
    with pytest.raises(ctrlkit.ConfigurationError, match="no model folder at ./no/such/model"):
        ctrlkit.get_backbone("hf:./no/such/model").generate([ModelInput(source="x")])
    with pytest.raises(ctrlkit.ConfigurationError, match="cannot use device 'gpu'"):
        ctrlkit.get_backbone(f"hf:{models['bart']}", device="gpu").generate([ModelInput(source="x")])
    with pytest.raises(ctrlkit.OptionError, match="disagree; give one"):
        ctrlkit.get_backbone(f"hf:{models['bart']}", model="other")


def test_training_refuses_changed_settings_and_never_passes_max_steps(models, tmp_path, monkeypatch):
    import ctrlkit.training.trainer as training

    args = dict(backbone=f"hf:{models['bart']}", controller="tag", split="test", limit=8, max_steps=2,
                batch_size=4, lr=1e-3)
    original = training.atomic_write_json

    def no_record(path, data):
        if path.name == "training.json":
            raise KeyboardInterrupt  # stopped after the last checkpoint, before the record
        original(path, data)

    monkeypatch.setattr(training, "atomic_write_json", no_record)
    with pytest.raises(KeyboardInterrupt):
        training.train(out=str(tmp_path / "m"), **args)
    monkeypatch.setattr(training, "atomic_write_json", original)
    with pytest.raises(ctrlkit.CtrlkitError, match=r"different settings \(controller, lr\)"):
        training.train(out=str(tmp_path / "m"), **{**args, "controller": "embed", "lr": 1e-4})
    record = training.train(out=str(tmp_path / "m"), **args)
    assert record["resumed"] and record["steps"] == 2 and len(record["losses"]) == 2


def test_training_output_folder_is_checked_before_training(models, tmp_path):
    from ctrlkit.training.trainer import train

    (tmp_path / "a-file").write_text("")
    with pytest.raises(ctrlkit.CtrlkitError, match="cannot create output folder"):
        train(backbone=f"hf:{models['bart']}", out=str(tmp_path / "a-file" / "sub"), split="test", limit=4)


def test_training_leaves_examples_without_the_control_uncontrolled(models, tmp_path, caplog):
    from ctrlkit.training.trainer import _pairs, train

    data = tmp_path / "partial.jsonl"
    data.write_text("".join(json.dumps({"id": f"e{i}", "document": f"Article {i} about things.",
                                        "references": [f"Summary {i}."],
                                        "controls": {"topic": "sports"} if i % 3 == 0 else {}}) + "\n"
                            for i in range(6)))
    with caplog.at_level("WARNING", logger="ctrlkit"):
        record = train(backbone=f"hf:{models['bart']}", out=str(tmp_path / "m"), dataset="jsonl", data=str(data),
                       split=None, controller="prepend", max_steps=1, batch_size=2)
    assert record["uncontrolled"] == {"prepend": 4}
    assert "controller 'prepend' left 4 of 6 examples uncontrolled" in caplog.text
    examples = ctrlkit.get_dataset("jsonl", path=str(data)).load(None)
    sources = [model_input.source for model_input, _ in _pairs(ctrlkit.create_controller("prepend", {}), examples)]
    assert sources == [f"sports <sep> {e.document}" if e.controls else e.document for e in examples]
    with pytest.raises(ctrlkit.ConfigurationError, match="strict controls"):
        train(backbone=f"hf:{models['bart']}", out=str(tmp_path / "strict"), dataset="jsonl", data=str(data),
              split=None, controller="prepend", max_steps=1, strict_controls=True)


def test_training_reads_a_file_that_is_one_split_whole_and_refuses_a_missing_train_split(models, tmp_path):
    from helpers import shared_file
    from ctrlkit.training.trainer import train

    val_file = shared_file("macsum/macdoc_val.json")  # skips without ../shared/data
    record = train(backbone=f"hf:{models['bart']}", out=str(tmp_path / "m"), dataset="macsum", data=str(val_file),
                   controller="none", max_steps=1, batch_size=2, limit=6)
    assert record["config"]["split"] is None and record["n_pairs"] == 6
    with pytest.raises(ctrlkit.DatasetError, match="does not apply"):  # a split the file is not
        train(backbone=f"hf:{models['bart']}", out=str(tmp_path / "t"), dataset="macsum", data=str(val_file),
              split="test", controller="none", max_steps=1)
    with pytest.raises(ctrlkit.DatasetError, match=r"^dataset 'sample' has no 'train' split \(it has test\); "
                                                    r"training is made from one, so choose the split with --split$"):
        train(backbone=f"hf:{models['bart']}", out=str(tmp_path / "s"), dataset="sample", controller="none",
              max_steps=1)
    assert not (tmp_path / "s").exists() and not (tmp_path / "t").exists()
