"""``ctrlkit train`` of the decoder-only backbone (hf-causal), on a tiny GPT-2 built offline."""

import json
import re
import shutil

import pytest

pytest.importorskip("torch", reason="the causal training tests need torch")
pytest.importorskip("transformers", reason="the causal training tests need transformers")

import torch  # noqa: E402
from click.testing import CliRunner  # noqa: E402

import ctrlkit  # noqa: E402
import ctrlkit.training.trainer  # noqa: E402
from ctrlkit import ModelInput  # noqa: E402
from ctrlkit.backbones.document_cut import without_demonstrations  # noqa: E402
from ctrlkit.cli import cli  # noqa: E402
from ctrlkit.controls import apply_control  # noqa: E402
from ctrlkit.engine.generation import fit_or_restore  # noqa: E402

from helpers import tiny_models  # noqa: E402
from helpers.prompt_cuts import cut_length, fed_prompts, judged_lines, ray_worker_counts  # noqa: E402

CHAT_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}{% endfor %}"
                 "{% if add_generation_prompt %}<assistant>{% endif %}")
GREEDY = {"max_new_tokens": 8, "num_beams": 1}


@pytest.fixture(scope="session")
def gpt2(tmp_path_factory):
    return tiny_models.build_gpt2(tmp_path_factory.mktemp("causal") / "gpt2")


@pytest.fixture(scope="session")
def chat_gpt2(gpt2, tmp_path_factory):
    """The same model, its tokenizer given a chat template."""
    from transformers import AutoTokenizer

    folder = shutil.copytree(gpt2, tmp_path_factory.mktemp("causal") / "chat")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    return folder


def invoke(*args):
    result = CliRunner().invoke(cli, [str(arg) for arg in args])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def with_bos(backbone):
    """Make the tokenizer add a BOS to plain text, as Llama's does, so that a prompt the chat
    template wrote (its own BOS) and a plain one are tokenized differently."""
    from tokenizers import processors

    bos = backbone.tokenizer.bos_token_id
    backbone.tokenizer._tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{backbone.tokenizer.bos_token} $A", special_tokens=[(backbone.tokenizer.bos_token, bos)])
    return bos


@pytest.mark.parametrize("chat", [False, True])
def test_the_labels_count_the_summary_and_eos_only_after_the_prompt_generation_feeds(gpt2, chat, monkeypatch):
    backbone = ctrlkit.get_backbone(f"hf-causal:{gpt2}")
    tokenizer = backbone.tokenizer
    bos = with_bos(backbone)
    document = ctrlkit.get_dataset("sample").load("test")[0].document  # longer than the 128-token limit
    limit = 256 - 128  # positions less the default max_new_tokens
    if chat:
        tokenizer.chat_template = CHAT_TEMPLATE
        inputs = [ModelInput(source="x", messages=({"role": "user", "content": "Summarize: the coach won."},)),
                  ModelInput(source=document, messages=({"role": "user", "content": f"Summarize:\n{document}"},))]
        around = ("<|endoftext|><user>Summarize:\n", "<assistant>")
        short = tokenizer("<|endoftext|><user>Summarize: the coach won.<assistant>", add_special_tokens=False)
        tokenize = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    else:
        inputs = [ModelInput(source="The coach won."), ModelInput(source=document)]
        around = ("", "\nTL;DR:")
        short = tokenizer("The coach won.\nTL;DR:")
        tokenize = lambda text: tokenizer(text)["input_ids"]  # noqa: E731
    targets = ["The team won the final.", "Investors bought shares of the bank on Monday."]
    eos = tokenizer.eos_token_id
    answers = [tokenizer(target, add_special_tokens=False)["input_ids"][:5] + [eos] for target in targets]

    batch = backbone.training_batch(inputs, targets, max_target_tokens=6)
    long = batch["input_ids"][1][batch["attention_mask"][1].bool()].tolist()[:-len(answers[1])]
    # the document's end is cut: the template's BOS and head, the tokenizer's BOS and the cue all stay
    assert (cut_length(long, around[0], document, around[1], tokenize, limit) or 0) > 0
    assert long[0] == bos  # the template's BOS, or the tokenizer's
    prompts = [short["input_ids"], long]
    width = max(len(p) + len(a) for p, a in zip(prompts, answers))
    pad = tokenizer.pad_token_id
    for row, (prompt, answer) in enumerate(zip(prompts, answers)):
        padding = width - len(prompt) - len(answer)
        assert batch["input_ids"][row].tolist() == [pad] * padding + prompt + answer
        assert batch["attention_mask"][row].tolist() == [0] * padding + [1] * (len(prompt) + len(answer))
        assert batch["labels"][row].tolist() == [-100] * (padding + len(prompt)) + answer
    assert (backbone.tokenized, backbone.truncated, backbone.truncated_to, backbone.truncated_head) == (2, 1, limit, 0)

    seen = fed_prompts(backbone, monkeypatch)  # each alone, so unpadded
    for model_input in inputs:
        backbone.generate([model_input])
    assert seen == prompts


def test_a_plain_prompt_gets_the_tokenizers_bos_whatever_its_batch_holds(gpt2, monkeypatch):
    """A chat template writes its own BOS; a plain prompt (an example a controller left as it was)
    batched with templated ones gets the tokenizer's, as it does alone, in generation and training."""
    backbone = ctrlkit.get_backbone(f"hf-causal:{gpt2}", max_new_tokens=2, num_beams=1)
    tokenizer = backbone.tokenizer
    bos = with_bos(backbone)
    tokenizer.chat_template = CHAT_TEMPLATE
    chat = ModelInput(source="The coach won.", messages=({"role": "user", "content": "Summarize: The coach won."},))
    plain = ModelInput(source="Investors bought shares of the bank.")
    unspecial = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    expected = [unspecial("<|endoftext|><user>Summarize: The coach won.<assistant>"),
                [bos] + unspecial("Investors bought shares of the bank.\nTL;DR:")]
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([chat, plain])
    backbone.generate([plain])
    assert seen == [*expected, expected[1]]
    batch = backbone.training_batch([chat, plain], ["A win.", "Shares."], max_target_tokens=4)
    rows = [row[mask.bool()].tolist() for row, mask in zip(batch["input_ids"], batch["attention_mask"])]
    assert [row[:len(prompt)] for row, prompt in zip(rows, expected)] == expected


def test_a_long_prompt_is_cut_alike_alone_and_beside_prompts_of_the_other_kind(gpt2, monkeypatch):
    """The cut counts each prompt's tokens as they will be made: with the tokenizer's BOS for a
    plain prompt, without for a templated one, whatever the batch holds."""
    backbone = ctrlkit.get_backbone(f"hf-causal:{gpt2}", max_new_tokens=2, num_beams=1, max_input_tokens=40)
    with_bos(backbone)
    backbone.tokenizer.chat_template = CHAT_TEMPLATE
    document = ctrlkit.get_dataset("sample").load("test")[0].document
    inputs = [ModelInput(source=document, messages=({"role": "user", "content": f"Summarize: {document}"},)),
              ModelInput(source=document)] * 2
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate(inputs[:2])  # one of each kind
    backbone.generate(inputs[1:3])  # the other order
    for model_input in inputs[:2]:
        backbone.generate([model_input])
    together, reordered, alone = seen[:2], seen[2:4][::-1], seen[4:]
    assert together == reordered == alone
    tokenizer = backbone.tokenizer
    for (before, after), special, fed in zip([("<|endoftext|><user>Summarize: ", "<assistant>"), ("", "\nTL;DR:")],
                                             [False, True], alone):
        tokenize = lambda text: tokenizer(text, add_special_tokens=special)["input_ids"]  # noqa: E731
        kept = cut_length(fed, before, document, after, tokenize, 40)
        # as long as fits: one character more is over the limit
        assert kept and len(tokenize(before + document[:kept + 1] + after)) > 40
    assert backbone.truncated == backbone.tokenized == 6 and backbone.truncated_head == 0


@pytest.mark.parametrize("name", ["prepend", "prompt"])
def test_the_control_reaches_the_model_when_a_documents_end_is_cut(chat_gpt2, name, monkeypatch):
    """The sample's documents are longer than the tiny model's 248 prompt tokens: each prompt fed
    (a batch of eight, padded) is the head the controller wrote, the start of the document and the
    cue, as many of the document's characters as fit."""
    backbone = ctrlkit.get_backbone(f"hf-causal:{chat_gpt2}", max_new_tokens=8, num_beams=1)
    tokenizer = backbone.tokenizer
    dataset = ctrlkit.get_dataset("sample")
    controller = ctrlkit.create_controller(name, {})
    fit_or_restore(controller, backbone, dataset, None)
    controller.prepare(backbone)
    inputs = [apply_control(controller, example, ModelInput(source=example.document))
              for example in dataset.load("test")[:8]]
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate(inputs)
    assert len(seen) == 8  # and cached left cuts are not served:
    assert backbone.identity()["cut"] == "document end, then earliest demonstrations"
    texts, special = backbone.prompts(inputs)
    assert special == [name == "prepend"] * 8  # plain text takes the tokenizer's special tokens, a template its own
    limit = backbone.input_limit()
    tokenize = lambda text: tokenizer(text, add_special_tokens=special[0])["input_ids"]  # noqa: E731
    for text, model_input, fed in zip(texts, inputs, seen):
        before, document, after = text.rpartition(model_input.source)
        # prepend's control (``sports <sep> ``) is the head of the input's source, the prompt's before it
        head = document[:document.index(" <sep> ") + 7] if name == "prepend" else before
        assert len(tokenize(text)) > limit and (head.startswith("<|endoftext|><system>") or len(head) < 20)
        assert (cut_length(fed, before, document, after, tokenize, limit) or 0) > len(head) - len(before)
    assert (backbone.truncated, backbone.tokenized, backbone.truncated_head) == (8, 8, 0)


@pytest.mark.parametrize("beside", [False, True])
def test_a_few_shot_prompt_whose_demonstration_crowds_out_its_document_shows_none(chat_gpt2, beside, monkeypatch):
    """A demonstration as long as the limit: the prompt was cut from the left, losing its system
    turn and instruction; now the demonstration is dropped, and the task's document is cut. Also
    after a plain prompt in its batch, which the tokenizer gives a BOS, as it does not this one."""
    backbone = ctrlkit.get_backbone(f"hf-causal:{chat_gpt2}", max_new_tokens=8, num_beams=1)
    tokenizer = backbone.tokenizer
    with_bos(backbone)
    example, other = list({e.document: e for e in ctrlkit.get_dataset("sample").load("test")}.values())[:2]
    controller = ctrlkit.get_controller("prompt", template="few-shot", shots=1)
    controller.fit([other], None)
    model_input = controller.apply(example, ModelInput(source=example.document))
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([ModelInput(source=other.document), model_input] if beside else [model_input])
    seen = seen[-1:]
    text = tokenizer.apply_chat_template(list(without_demonstrations(model_input.messages, 1)), tokenize=False,
                                         add_generation_prompt=True)
    before, document, after = text.rpartition(example.document)
    tokenize = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    assert other.document not in before and before.startswith("<|endoftext|><system>")
    limit = backbone.input_limit()
    kept = cut_length(seen[0], before, document, after, tokenize, limit)
    # as long as fits, counted without the BOS the tokenizer gives the plain prompt beside it
    assert kept and len(tokenize(before + document[:kept + 1] + after)) > limit
    assert (backbone.truncated, backbone.truncated_head, backbone.truncated_shots) == (1 + beside, 0, 1)


def test_a_short_document_is_cut_in_its_message_not_where_its_text_recurs_in_the_cue(chat_gpt2, monkeypatch):
    """``ant`` is also in ``<assistant>``; a long system message makes the prompt one token too long."""
    tokenizer = ctrlkit.get_backbone(f"hf-causal:{chat_gpt2}").tokenizer
    messages = ({"role": "system", "content": "Investors bought shares of the bank on Monday. " * 4},
                {"role": "user", "content": "Summarize: ant"})
    text = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
    assert text.endswith("Summarize: ant<assistant>")
    limit = len(tokenizer(text, add_special_tokens=False)["input_ids"]) - 1
    backbone = ctrlkit.get_backbone(f"hf-causal:{chat_gpt2}", max_input_tokens=limit)
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([ModelInput(source="ant", messages=messages)])
    cuts = [tokenizer(text.replace("ant<", f"{'ant'[:k]}<"), add_special_tokens=False)["input_ids"] for k in (0, 1, 2)]
    assert seen[0] in cuts and len(seen[0]) <= limit


@pytest.mark.parametrize("source", ["not in the prompt", "the whole prompt"])
def test_a_prompt_whose_document_cannot_be_cut_is_cut_from_the_left(gpt2, source, monkeypatch):
    """Where the input's document is not in its prompt, or cutting it all leaves the prompt too
    long, the tokenizer keeps the prompt's last tokens, the cue to answer among them."""
    backbone = ctrlkit.get_backbone(f"hf-causal:{gpt2}", max_input_tokens=24)
    tokenizer = backbone.tokenizer
    tokenizer.chat_template = CHAT_TEMPLATE
    content = "Investors bought shares of the bank on Monday. " * 8
    model_input = ModelInput(source="nowhere to be found", messages=({"role": "user", "content": content},))
    if source == "the whole prompt":  # the system message alone is longer than the limit
        model_input = ModelInput(source="the bank", messages=({"role": "system", "content": content},
                                                             {"role": "user", "content": "the bank"}))
    text = tokenizer.apply_chat_template(list(model_input.messages), tokenize=False, add_generation_prompt=True)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert len(ids) > 24
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([model_input])
    assert seen == [ids[-24:]] and (backbone.truncated, backbone.tokenized, backbone.truncated_head) == (1, 1, 1)


@pytest.mark.parametrize("system", [None, "Follow these rules. " * 80])
def test_the_run_says_how_many_prompts_lost_their_head(chat_gpt2, system, caplog):
    """The sample's documents are longer than the tiny model's 248 tokens: the prompts lose their
    documents' ends, unless a system message alone is longer: then they are cut from the left, and
    the run's line says so."""
    with caplog.at_level("WARNING", logger="ctrlkit"):
        ctrlkit.run(controller="prompt", backbone=f"hf-causal:{chat_gpt2}", metrics=["rouge"], limit=4, cache=False,
                    options={"prompt": {"system": system} if system else {},
                             "hf-causal": {"max_new_tokens": 8, "num_beams": 1}})
    [line] = [record.getMessage() for record in caplog.records if "(controller 'prompt')" in record.getMessage()]
    assert "4 of 4 inputs truncated to 248 tokens" in line
    assert ("4 of them from the left: their prompts lost the head" in line) == bool(system), line


def test_a_ray_worker_reports_the_prompts_that_lost_their_head(gpt2):
    """A long plain source is cut, and a prompt whose document is in none of its messages too (at its
    head on this backbone), in what a Ray worker returns."""
    counts = ray_worker_counts(f"hf-causal:{gpt2}")
    assert counts == {"tokenized": 3, "truncated": 2, "truncated_head": 1, "truncated_tail": 0,
                      "truncated_shots": 0}


def row_losses(backbone, batch):
    """Each row's mean token cross-entropy, from the model's logits."""
    with torch.no_grad():
        logits = backbone.model(**{k: v for k, v in batch.items() if k != "labels"}).logits
    labels = batch["labels"][:, 1:]
    losses = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), labels, reduction="none")
    return (losses * (labels != -100)).sum(1) / (labels != -100).sum(1)


@pytest.mark.parametrize("adapter", [None, "lora"])
def test_a_rows_loss_does_not_change_with_the_padding_a_longer_row_adds(gpt2, adapter):
    """Also behind a LoRA adapter, whose wrapper's forward does not name ``position_ids``."""
    backbone = ctrlkit.get_backbone(f"hf-causal:{gpt2}")
    if adapter:
        pytest.importorskip("peft", reason="the LoRA case needs peft")
        from ctrlkit.backbones.adapters import peft_settings

        backbone.attach_adapter(peft_settings(adapter))
    short, long = ModelInput(source="The coach won."), ModelInput(source="Investors bought shares of the bank " * 6)
    targets = ["A win.", "Shares rose sharply on Monday after the results."]
    with torch.no_grad():
        alone = backbone.loss([short], targets[:1], 32)
    batch = backbone.training_batch([short, long], targets, 32)
    assert batch["attention_mask"][0].tolist().count(0) > 20  # the short row is padded well
    together = row_losses(backbone, batch)
    torch.testing.assert_close(together[0], alone)
    torch.testing.assert_close(together[1], backbone.loss([long], targets[1:], 32).detach())
    # the check can fail: with positions counted from the padding, the short row's loss moves
    shifted = row_losses(backbone, {key: value for key, value in batch.items() if key != "position_ids"})
    assert abs(shifted[0].item() - alone.item()) > 1e-3


def test_trained_causal_model_lowers_its_loss_and_reloads_to_the_same_outputs(gpt2, tmp_path, monkeypatch):
    """Python API: tag (its special token too) trained on the sample; ``run -b hf-causal:DIR``
    gives what the trained model in memory gives."""
    trained = []
    original = ctrlkit.training.trainer.get_backbone
    monkeypatch.setattr(ctrlkit.training.trainer, "get_backbone", lambda *a, **kw: trained.append(original(*a, **kw))
                        or trained[-1])
    out = tmp_path / "model"
    record = ctrlkit.training.trainer.train(backbone=f"hf-causal:{gpt2}", out=str(out), controller="tag", split="test",
                                    limit=8, max_steps=30, batch_size=4, lr=1e-3, max_target_tokens=32,
                                    options={"hf-causal": GREEDY})
    losses = record["losses"]
    assert len(losses) == 30
    assert sum(losses[-5:]) / 5 < 0.85 * sum(losses[:5]) / 5, losses

    invoke("run", "-b", f"hf-causal:{out}", "-c", "tag", "--limit", 4, "-m", "rouge", "--no-baseline", "--no-cache",
           "--batch-size", 1, "-o", tmp_path / "run", "--set", "hf-causal.max_new_tokens=8",
           "--set", "hf-causal.num_beams=1")
    predictions = [json.loads(line)["prediction"] for line in (tmp_path / "run" / "samples.jsonl").open()]

    model = trained[0]
    tag = ctrlkit.get_controller("tag")
    tag.load_state(json.loads((out / "ctrlkit_controller.json").read_text())["state"])
    examples = ctrlkit.get_dataset("sample").load("test")[:4]
    expected = [model.generate([apply_control(tag, e, ModelInput(source=e.document))])[0] for e in examples]
    assert predictions == expected and any(expected)

    reloaded = ctrlkit.get_backbone(f"hf-causal:{out}")
    restored = ctrlkit.get_controller("tag")
    fit_or_restore(restored, reloaded, ctrlkit.get_dataset("sample"), topic_space=None)  # no space: restored
    assert restored.state() == tag.state()
    assert reloaded.tokenizer.tokenize("a [TAG] b").count("[TAG]") == 1
    assert reloaded.model.get_output_embeddings().weight.shape[0] == len(reloaded.tokenizer) == len(model.tokenizer)
    assert reloaded.tokenizer.padding_side == "left" and reloaded.tokenizer.pad_token_id is not None


def test_the_cli_trains_a_chat_model_with_the_prompt_controller(chat_gpt2, tmp_path):
    out = tmp_path / "model"
    invoke("train", "-b", f"hf-causal:{chat_gpt2}", "-c", "prompt", "--split", "test", "--limit", 8,
           "--max-steps", 30, "--batch-size", 4, "--lr", "1e-3", "--max-target-tokens", 32, "-o", out)
    losses = json.loads((out / "training.json").read_text())["losses"]
    assert sum(losses[-5:]) / 5 < 0.85 * sum(losses[:5]) / 5, losses
    assert json.loads((out / "ctrlkit_controller.json").read_text())["controller"] == "prompt"
    reloaded = ctrlkit.get_backbone(f"hf-causal:{out}")
    assert reloaded.tokenizer.chat_template == CHAT_TEMPLATE
    prompt = ctrlkit.get_controller("prompt")
    prompt.prepare(reloaded)
    example = ctrlkit.get_dataset("sample").load("test")[0]
    assert reloaded.prompts([prompt.apply(example, ModelInput(source=example.document))])[0][0].startswith(
        "<|endoftext|><system>")


@pytest.mark.parametrize("controller, lacks", [("guidance", "guidance"), ("embed", "input_embeddings")])
def test_a_controller_needing_what_hf_causal_lacks_is_refused_in_one_line(gpt2, tmp_path, controller, lacks):
    with pytest.raises(ctrlkit.ConfigurationError) as refused:
        ctrlkit.training.trainer.train(backbone=f"hf-causal:{gpt2}", out=str(tmp_path / "model"),
                                       controller=controller, split="test", limit=4, max_steps=1)
    assert str(refused.value) == (f"controller '{controller}' needs backbone capability {lacks}, which backbone "
                                  f"'hf-causal:{gpt2}' lacks")  # the words run and interference use
    assert not (tmp_path / "model").exists()


def test_a_target_as_long_as_the_model_is_refused_in_one_line(gpt2):
    backbone = ctrlkit.get_backbone(f"hf-causal:{gpt2}")
    with pytest.raises(ctrlkit.ConfigurationError, match="--max-target-tokens 256 leaves no room for the prompt "
                                                         "in the model's 256 positions"):
        backbone.loss([ModelInput(source="The coach won.")], ["A win."], 256)
    assert backbone.training_prompt_limit(200) == 56  # below the 128 generation leaves
    assert backbone.training_prompt_limit(100) == 128


def test_lora_trains_a_causal_model_and_its_adapter_reloads_to_the_same_outputs(gpt2, tmp_path, monkeypatch):
    pytest.importorskip("peft", reason="LoRA needs peft")
    trained = []
    original = ctrlkit.training.trainer.get_backbone
    monkeypatch.setattr(ctrlkit.training.trainer, "get_backbone", lambda *a, **kw: trained.append(original(*a, **kw))
                        or trained[-1])
    out = tmp_path / "adapter"
    record = ctrlkit.training.trainer.train(backbone=f"hf-causal:{gpt2}", out=str(out), split="test", limit=8,
                                    max_steps=30, batch_size=4, lr=1e-2, max_target_tokens=32, peft="lora",
                                    lora_targets="c_attn,c_proj,c_fc", options={"hf-causal": GREEDY})
    losses = record["losses"]
    # a random tiny GPT-2 learns slowly through rank-8 updates: 6.58 to 6.17 over 30 steps when measured
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 - 0.2, losses
    assert 0 < record["trainable_parameters"] < 0.2 * record["total_parameters"]
    assert (out / "adapter_config.json").is_file() and not (out / "model.safetensors").exists()

    examples = ctrlkit.get_dataset("sample").load("test")[:3]
    inputs = [ModelInput(source=example.document) for example in examples]
    expected = trained[0].generate(inputs)
    reloaded = ctrlkit.get_backbone(f"hf-causal:{out}", **GREEDY)
    assert reloaded.generate(inputs) == expected and any(expected)


def test_a_judges_cut_prompts_are_reported_for_each_metric_and_arm_that_asked(gpt2, tmp_path, caplog):
    """A judge is a backbone too: its prompts, which hold no document, are cut from the left."""
    lines = judged_lines(tmp_path, f"hf-causal:{gpt2}", {"max_new_tokens": 2, "num_beams": 1}, caplog)
    asking = ["controller 'prepend'", "controller 'none'", "the given predictions"]
    assert len(lines) == 3, lines
    for line, scoring in zip(lines, asking):
        cut = re.search(rf"\(judge of metric 'focus', {scoring}\): (\d+) of (\d+) inputs truncated to 16 tokens, from "
                        r"the left \(a judge's prompt holds no document", line)
        assert cut and int(cut[1]) == int(cut[2]) >= 3, line  # a prompt asked again (a retry) is counted again
