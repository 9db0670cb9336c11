"""One prefix per value of a control (``ctrlkit train --peft prefix -c soft-prefix``), on a tiny
BART built in the fixture and on MACSum's file: each prefix learns from its own examples only (a
training whose other examples differ leaves it bit for bit the same), and a run uses the input's
own prefix (the outputs of peft's own loader given that prefix alone)."""

import json

import pytest

pytest.importorskip("torch", reason="prefixes need torch")
pytest.importorskip("transformers", reason="prefixes need transformers")
pytest.importorskip("peft", reason="prefixes need peft")

from safetensors.torch import load_file  # noqa: E402

import ctrlkit  # noqa: E402
from ctrlkit import Example, ModelInput  # noqa: E402
from ctrlkit.training.trainer import train  # noqa: E402

from helpers import invoke_ctrlkit, shared_file, tiny_models  # noqa: E402

pytestmark = pytest.mark.slow
GREEDY = {"max_new_tokens": 8, "num_beams": 1}
DOCUMENTS = ["The coach praised the players after the match.", "Investors bought shares of the club on Monday.",
             "The minister said the new law takes effect next year.", "Rain flooded the streets of the old town."]
SHORT, LONG = "The players won.", "The coach praised the players after they won the match at home."


@pytest.fixture(scope="module")
def bart(tmp_path_factory):
    return tiny_models.build_bart(tmp_path_factory.mktemp("tiny-prefixes") / "bart", init_std=0.2)


def _write(path, long_documents):
    """Four short examples, then four long ones whose documents are ``long_documents``."""
    rows = [{"id": f"s{i}", "document": text, "references": [SHORT], "length": "short"}
            for i, text in enumerate(DOCUMENTS)]
    rows += [{"id": f"l{i}", "document": text, "references": [LONG], "length": "long"}
             for i, text in enumerate(long_documents)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _train(bart, data, out):
    return train(backbone=f"hf:{bart}", controller="soft-prefix", dataset="jsonl", data=str(data),
                 options={"jsonl": {"control_fields": "length"}}, peft="prefix", prefix_length=3, batch_size=4,
                 max_steps=4, lr=5e-2, seed=3, out=str(out))


def _prefix(out, key):
    index = json.loads((out / "ctrlkit_prefixes.json").read_text())["prefixes"]
    return out / index[key], load_file(str(out / index[key] / "adapter_model.safetensors"))


@pytest.fixture(scope="module")
def trained(bart, tmp_path_factory):
    root = tmp_path_factory.mktemp("prefix-runs")
    record = _train(bart, _write(root / "a.jsonl", DOCUMENTS), root / "a")
    other = _train(bart, _write(root / "b.jsonl", [text.upper() for text in DOCUMENTS]), root / "b")
    return root / "a", root / "b", record, other


def test_each_value_gets_a_prefix_trained_on_its_examples_only(trained):
    a, b, record, other = trained
    assert record["config"]["peft"] == {"method": "prefix", "prefix_length": 3,
                                        "values": ["length=long", "length=short"]}
    assert json.loads((a / "ctrlkit_prefixes.json").read_text())["prefixes"] == {"length=long": "value0",
                                                                                 "length=short": "value1"}
    # the long examples' documents differ between the two trainings, nothing else does
    (_, short_a), (_, short_b) = _prefix(a, "length=short"), _prefix(b, "length=short")
    (_, long_a), (_, long_b) = _prefix(a, "length=long"), _prefix(b, "length=long")
    assert short_a.keys() == short_b.keys() and all((short_a[k] == short_b[k]).all() for k in short_a)
    assert not all(long_a[k].allclose(long_b[k]) for k in long_a)
    assert record["losses"] != other["losses"]  # the batches' loss reads both values' examples


def test_a_run_uses_the_prefix_of_each_inputs_value(trained):
    a = trained[0]
    steering = ctrlkit.get_controller("soft-prefix")
    backbone = ctrlkit.get_backbone(f"hf:{a}", **GREEDY)
    inputs = [steering.apply(Example(id=str(i), document=DOCUMENTS[0], controls={"length": value}),
                             ModelInput(source=DOCUMENTS[0]))
              for i, value in enumerate(["short", "long", "short"])]
    made = backbone.generate(inputs)
    # peft's loader, given one prefix's folder alone, on the plain document
    alone = {key: ctrlkit.get_backbone(f"hf:{_prefix(a, key)[0]}", **GREEDY).generate([ModelInput(source=DOCUMENTS[0])])[0]
             for key in ("length=short", "length=long")}
    assert made == [alone["length=short"], alone["length=long"], alone["length=short"]]
    assert alone["length=short"] != alone["length=long"]  # swapping the prefix changes the summary


def test_a_prefix_steers_generation_as_it_steers_the_forward_pass(bart, tmp_path):
    """Greedy decoding by hand, one full forward pass of peft's model per token (where the prefix
    has always counted), gives what the backbone generates: the prefix reaches generation too."""
    import peft
    import torch
    import transformers

    torch.manual_seed(1)
    model = peft.get_peft_model(transformers.AutoModelForSeq2SeqLM.from_pretrained(bart),
                                peft.PrefixTuningConfig(task_type="SEQ_2_SEQ_LM", num_virtual_tokens=3))
    with torch.no_grad():
        for parameter in model.prompt_encoder.parameters():
            parameter.normal_(0, 5)
    model.save_pretrained(tmp_path / "prefix")
    backbone = ctrlkit.get_backbone(f"hf:{tmp_path / 'prefix'}", **GREEDY)
    plain = ctrlkit.get_backbone(f"hf:{bart}", **GREEDY).generate([ModelInput(source=DOCUMENTS[0])])
    tokenizer = backbone.tokenizer
    encoded = tokenizer([DOCUMENTS[0]], return_tensors="pt")
    config = model.get_base_model().config
    decoded = torch.tensor([[config.decoder_start_token_id]])
    model.eval()
    with torch.no_grad():
        for step in range(GREEDY["max_new_tokens"]):
            token = int(model(**encoded, decoder_input_ids=decoded).logits[0, -1].argmax())
            if step == GREEDY["max_new_tokens"] - 1:
                token = config.forced_eos_token_id  # as generate forces it at the last step
            decoded = torch.cat([decoded, torch.tensor([[token]])], dim=1)
            if token == config.eos_token_id:
                break
    by_hand = tokenizer.decode(decoded[0], skip_special_tokens=True).strip()
    assert backbone.generate([ModelInput(source=DOCUMENTS[0])]) == [by_hand]
    assert by_hand != plain[0]  # the prefix changes the summary


def test_a_causal_models_prefix_steers_generation_too(tmp_path):
    """The same check on a decoder-only model (hf-causal): greedy by hand, one forward pass of
    peft's model per token over the prompt the backbone feeds, gives what it generates."""
    import peft
    import torch
    import transformers

    gpt2 = tiny_models.build_gpt2(tmp_path / "gpt2")
    torch.manual_seed(1)
    model = peft.get_peft_model(transformers.AutoModelForCausalLM.from_pretrained(gpt2),
                                peft.PrefixTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=3))
    with torch.no_grad():
        for parameter in model.prompt_encoder.parameters():
            parameter.normal_(0, 5)
    model.save_pretrained(tmp_path / "prefix")
    backbone = ctrlkit.get_backbone(f"hf-causal:{tmp_path / 'prefix'}", **GREEDY)
    plain = ctrlkit.get_backbone(f"hf-causal:{gpt2}", **GREEDY).generate([ModelInput(source=DOCUMENTS[0])])
    ids = torch.tensor(backbone.fitted_ids([ModelInput(source=DOCUMENTS[0])], backbone.input_limit()))
    prompt_length = ids.shape[1]
    model.eval()
    with torch.no_grad():
        for _ in range(GREEDY["max_new_tokens"]):
            ids = torch.cat([ids, model(input_ids=ids).logits[:, -1].argmax(-1, keepdim=True)], dim=1)
            if int(ids[0, -1]) == backbone.tokenizer.eos_token_id:
                break
    by_hand = backbone.tokenizer.decode(ids[0, prompt_length:], skip_special_tokens=True).strip()
    assert backbone.generate([ModelInput(source=DOCUMENTS[0])]) == [by_hand]
    assert by_hand != plain[0]


def test_prefix_errors_are_one_line(trained, bart, tmp_path):
    a = trained[0]
    steering = ctrlkit.get_controller("soft-prefix")
    asking = steering.apply(Example(id="x", document="text", controls={"length": "medium"}), ModelInput(source="text"))
    cases = [
        (lambda: ctrlkit.get_backbone(f"hf:{a}", **GREEDY).generate([asking]),
         r"^backbone 'hf' has no prefix for length=medium; it was trained for length=long, length=short$"),
        (lambda: ctrlkit.get_backbone(f"hf:{a}", **GREEDY).generate([ModelInput(source="text")]),
         r"^backbone 'hf' holds one prefix per value \(length=long, length=short\); an input names none"),
        (lambda: ctrlkit.get_backbone(f"hf:{bart}", **GREEDY).generate([asking]),
         r"^backbone 'hf' holds no per-value prefixes, but inputs ask for length=medium"),
        (lambda: ctrlkit.get_controller("soft-prefix", control=" "), r"^option 'soft-prefix.control' names no control$"),
    ]
    data = _write(tmp_path / "d.jsonl", DOCUMENTS)
    for peft in (None, "lora"):
        cases.append((lambda peft=peft: train(
            backbone=f"hf:{bart}", controller="soft-prefix", dataset="jsonl", data=str(data), peft=peft,
            options={"jsonl": {"control_fields": "length"}}, max_steps=1, out=str(tmp_path / "m")),
            r"^the inputs ask for one prefix per value \(length=long, length=short\): train them with --peft prefix$"))
    for call, match in cases:
        with pytest.raises(ctrlkit.CtrlkitError, match=match) as caught:
            call()
        assert "\n" not in str(caught.value)
    assert not (tmp_path / "m").exists()


def test_macsum_trains_one_prefix_per_length_and_runs_with_them(bart, tmp_path):
    """On MACSum-Doc's file: short, normal and long prefixes, trained and used by a run."""
    data = shared_file("macsum/macdoc_val.json")
    done = invoke_ctrlkit("train", "-b", f"hf:{bart}", "-c", "soft-prefix", "-d", "macsum", "--data",
                          str(data), "--peft", "prefix", "--prefix-length", "2", "--max-steps", "1",
                          "--batch-size", "8", "-o", str(tmp_path / "sp"))
    assert done.returncode == 0, done.stderr
    prefixes = json.loads((tmp_path / "sp" / "ctrlkit_prefixes.json").read_text())["prefixes"]
    assert sorted(prefixes) == ["length=long", "length=normal", "length=short"]
    done = invoke_ctrlkit("run", "-b", f"hf:{tmp_path / 'sp'}", "-c", "soft-prefix", "-d", "macsum",
                          "--data", str(data), "--limit", "3", "-m", "rouge", "--no-baseline", "--set",
                          "hf.max_new_tokens=4", "--set", "hf.num_beams=1", "-o", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == 3 and all(sample["prediction"] for sample in samples)


def test_a_prefix_training_resumes_with_every_prefix(bart, tmp_path, monkeypatch):
    """Stopped after its checkpoint, it resumes with each value's prefix where it was, and ends as
    an uninterrupted training does."""
    from ctrlkit.backbones.hf import HFSeq2Seq

    data = _write(tmp_path / "d.jsonl", DOCUMENTS)
    args = dict(backbone=f"hf:{bart}", controller="soft-prefix", dataset="jsonl", data=str(data),
                options={"jsonl": {"control_fields": "length"}}, peft="prefix", prefix_length=3, batch_size=4,
                max_steps=4, save_every=2, lr=5e-2, seed=3)
    whole = train(out=str(tmp_path / "whole"), **args)
    calls = {"n": 0}
    original = HFSeq2Seq.loss

    def interrupted(self, *given, **named):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return original(self, *given, **named)

    monkeypatch.setattr(HFSeq2Seq, "loss", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(out=str(tmp_path / "resumed"), **args)
    assert (tmp_path / "resumed" / "checkpoint" / "ctrlkit_prefixes.json").is_file()
    monkeypatch.setattr(HFSeq2Seq, "loss", original)
    resumed = train(out=str(tmp_path / "resumed"), **args)
    assert resumed["resumed"] and resumed["losses"] == pytest.approx(whole["losses"], abs=1e-5)
    for key in ("length=short", "length=long"):
        final, straight = _prefix(tmp_path / "resumed", key)[1], _prefix(tmp_path / "whole", key)[1]
        assert all(final[name].allclose(straight[name], atol=1e-5) for name in straight)


def test_a_damaged_prefix_index_is_one_line_naming_it(trained, tmp_path):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(trained[0], folder)
    (folder / "ctrlkit_prefixes.json").write_text('{"prefixes": {"length=short": "value9"}}')
    with pytest.raises(ctrlkit.CtrlkitError, match=rf"^{folder / 'ctrlkit_prefixes.json'}: field 'prefixes' must "
                                                    r"map each control=value to a subfolder holding an adapter$"):
        ctrlkit.get_backbone(f"hf:{folder}").load()
