"""LoRAHub-style composition (``ctrlkit train --set hf.combine=lorahub``) on a tiny BART built in
the fixture, with two LoRA adapters: one trained on the few examples, one of random weights.
The search weighs the trained one more, lowers the loss, records the weights (training.json,
and results.json of a run of the folder) and gives the same weights for the same seed; the
loss it records is the one the folder's merge gives, computed again here."""

import json

import pytest

pytest.importorskip("torch", reason="adapters need torch")
pytest.importorskip("transformers", reason="adapters need transformers")
pytest.importorskip("peft", reason="adapters need peft")

import peft  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

import ctrlkit  # noqa: E402
from ctrlkit import ModelInput  # noqa: E402
from ctrlkit.training.trainer import train  # noqa: E402
from ctrlkit.training.weight_search import minimise  # noqa: E402

from helpers import invoke_ctrlkit, tiny_models  # noqa: E402

pytestmark = pytest.mark.slow
DOCUMENTS = ["The coach praised the players after the match.", "Investors bought shares of the club on Monday.",
             "The minister said the new law takes effect next year.", "Rain flooded the streets of the old town."]
SUMMARIES = ["Coach praises players.", "Investors buy club shares.", "New law next year.", "Rain floods town."]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    root = tmp_path_factory.mktemp("lorahub")
    bart = tiny_models.build_bart(root / "bart")
    data = root / "few.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "document": document, "references": [summary]}) + "\n"
                            for i, (document, summary) in enumerate(zip(DOCUMENTS, SUMMARIES))))
    train(backbone=f"hf:{bart}", dataset="jsonl", data=str(data), peft="lora", lora_rank=4, lr=1e-2, max_steps=30,
          batch_size=4, out=str(root / "good"))
    torch.manual_seed(5)
    noisy = peft.get_peft_model(transformers.AutoModelForSeq2SeqLM.from_pretrained(bart),
                                peft.LoraConfig(task_type="SEQ_2_SEQ_LM", r=4, lora_alpha=8, init_lora_weights=False))
    with torch.no_grad():
        for name, parameter in noisy.named_parameters():
            if "lora_" in name:
                parameter.normal_(0, 1.0)
    noisy.save_pretrained(root / "noisy")
    return {"root": root, "bart": bart, "data": data, "spec": f"noisy={root / 'noisy'},good={root / 'good'}"}


def _search(hub, out, seed=0, budget=12):
    return train(backbone=f"hf:{hub['bart']}", dataset="jsonl", data=str(hub["data"]), seed=seed,
                 lorahub_budget=budget, options={"hf": {"adapters": hub["spec"], "combine": "lorahub"}}, out=str(out))


def test_the_search_weighs_the_adapter_that_fits_the_examples_more(hub, tmp_path):
    record = _search(hub, tmp_path / "a")
    found = record["lorahub"]
    assert found["adapters"] == ["noisy", "good"] and found["evaluations"] == 12
    assert found["weights"]["good"] > abs(found["weights"]["noisy"])
    assert found["loss"] < found["start_loss"]
    assert json.loads((tmp_path / "a" / "training.json").read_text())["lorahub"]["weights"] == found["weights"]
    # the same seed searches the same way; another seed tries other weightings
    assert _search(hub, tmp_path / "b")["lorahub"]["trace"] == found["trace"]
    assert _search(hub, tmp_path / "c", seed=1)["lorahub"]["trace"] != found["trace"]

    # the folder runs the merge found: its loss on the examples is the one recorded
    merged = ctrlkit.get_backbone(f"hf:{tmp_path / 'a'}")
    dataset = ctrlkit.get_dataset("jsonl", path=str(hub["data"]))
    examples = dataset.load(dataset.default_split)
    with torch.no_grad():
        loss = merged.loss([ModelInput(source=example.document) for example in examples],
                           [example.references[0] for example in examples], 128).item()
    assert loss == pytest.approx(found["loss"], rel=1e-5)
    weights = [found["weights"]["noisy"], found["weights"]["good"]]
    assert merged.recorded_options()["adapter_weights"] == ",".join(map(repr, weights))

    # a run of the folder records the weights in results.json
    done = invoke_ctrlkit("run", "-b", f"hf:{tmp_path / 'a'}", "-d", "jsonl", "--data", str(hub["data"]),
                          "-m", "rouge", "--no-baseline", "--set", "hf.max_new_tokens=4", "--set", "hf.num_beams=1",
                          "-o", str(tmp_path / "run"))
    assert done.returncode == 0, done.stderr
    options = json.loads((tmp_path / "run" / "results.json").read_text())["config"]["options"]["hf"]
    assert options["combine"] == "merge" and options["adapters"] == hub["spec"]
    assert [float(weight) for weight in options["adapter_weights"].split(",")] == weights


def test_the_search_finds_a_known_minimum():
    """On a quadratic bowl whose minimum is known, the seeded search gets close to it."""
    target = [0.8, -0.3]
    result = minimise(lambda w: sum((a - b) ** 2 for a, b in zip(w, target)), [0.0, 0.0], 200, seed=0, bound=1.5)
    assert result.best == pytest.approx(target, abs=0.02) and len(result.history) == 200
    assert minimise(lambda w: (w[0] - 3) ** 2, [0.0], 50, seed=0, bound=1.5).best == [1.5]  # held to the bound


def test_lorahub_settings_are_refused_in_one_line(hub, tmp_path):
    bart, spec = f"hf:{hub['bart']}", hub["spec"]
    lorahub = {"hf": {"adapters": spec, "combine": "lorahub"}}
    cases = [
        (dict(lorahub_budget=5), r"^--lorahub-budget needs --set hf.adapters=... --set hf.combine=lorahub$"),
        (dict(options=lorahub, peft="lora"), r"^--peft trains a new adapter; hf.combine=lorahub weighs trained ones$"),
        (dict(options=lorahub, eval_split="test"), r"^--eval-split does not apply to hf.combine=lorahub"),
        (dict(options={"hf": {**lorahub["hf"], "adapter_weights": "1,1"}}),
         r"^option 'hf.adapter_weights' applies to hf.combine=merge; hf.combine=lorahub searches them$"),
        (dict(lorahub_budget=0), r"^lorahub_budget must be a whole number of at least 1, not 0$"),
        (dict(lorahub_l1=-1.0), r"^lorahub_l1 must be a finite number, 0 or more, not -1.0$"),
    ]
    for given, match in cases:
        with pytest.raises(ctrlkit.CtrlkitError, match=match) as caught:
            train(backbone=bart, dataset="jsonl", data=str(hub["data"]), out=str(tmp_path / "m"), **given)
        assert "\n" not in str(caught.value)
    assert not (tmp_path / "m").exists()
    with pytest.raises(ctrlkit.CtrlkitError, match=r"^option 'hf.combine=lorahub' searches the merge weights in "
                                                    r"ctrlkit train; run the folder it writes"):
        ctrlkit.get_backbone(bart, adapters=spec, combine="lorahub").generate([ModelInput(source="text")])


def test_lorahub_on_macsum(hub, tmp_path):
    """On MACSum-Doc's file: two adapters trained on it, weighed on its first few examples."""
    from helpers import shared_file

    data = str(shared_file("macsum/macdoc_val.json"))
    bart = f"hf:{hub['bart']}"
    for seed in (0, 1):
        train(backbone=bart, dataset="macsum", data=data, peft="lora", lora_rank=2, max_steps=1, batch_size=2,
              limit=4, seed=seed, out=str(tmp_path / f"a{seed}"))
    done = invoke_ctrlkit("train", "-b", bart, "-d", "macsum", "--data", data, "--limit", "4", "--lorahub-budget", "3",
                          "--set", f"hf.adapters=a={tmp_path / 'a0'},b={tmp_path / 'a1'}", "--set", "hf.combine=lorahub",
                          "-o", str(tmp_path / "hub"))
    assert done.returncode == 0, done.stderr
    found = json.loads((tmp_path / "hub" / "training.json").read_text())["lorahub"]
    assert set(found["weights"]) == {"a", "b"} and found["evaluations"] == 3
    assert done.stdout.startswith("lorahub: weights a ")


def test_a_damaged_composition_file_is_one_line_naming_it(hub, tmp_path):
    folder = tmp_path / "hub"
    folder.mkdir()
    (folder / "ctrlkit_composition.json").write_text('{"base": "x", "adapters": [["a"]]}')
    with pytest.raises(ctrlkit.CtrlkitError, match=rf"^{folder / 'ctrlkit_composition.json'}: field 'adapters' "
                                                    r"must list \[name, folder\] pairs") as caught:
        ctrlkit.get_backbone(f"hf:{folder}").identity()
    assert "\n" not in str(caught.value)
