"""`ctrlkit train`'s optimizer options on a tiny BART: a resumed training follows the same learning
rates as an uninterrupted one, gradients are clipped to max_grad_norm on a real step, weight decay
reaches AdamW (its effect on the weights computed here), bad values and changed values are refused
in one line, and --bf16 is refused where CUDA with bfloat16 is absent."""

import contextlib
import json
import math
import re
import warnings

import pytest

pytest.importorskip("torch", reason="training needs torch")
pytest.importorskip("transformers", reason="training needs transformers")

import torch  # noqa: E402
from click.testing import CliRunner  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from torch.optim.optimizer import register_optimizer_step_pre_hook  # noqa: E402

import ctrlkit  # noqa: E402
from ctrlkit.backbones.hf import HFSeq2Seq  # noqa: E402
from ctrlkit.cli import cli  # noqa: E402
from ctrlkit.training.trainer import autocast, train  # noqa: E402

RUN = dict(split="test", limit=8, batch_size=2)


@contextlib.contextmanager
def optimizer_steps():
    """What each optimizer step starts from: its param group's lr and weight decay, and a copy of
    every gradient it is about to apply."""
    seen = []

    def hook(optimizer, args, kwargs):
        group = optimizer.param_groups[0]
        seen.append({"lr": group["lr"], "weight_decay": group["weight_decay"],
                     "grads": [p.grad.detach().clone() for p in group["params"] if p.grad is not None]})

    handle = register_optimizer_step_pre_hook(hook)
    try:
        yield seen
    finally:
        handle.remove()


def norm(grads) -> float:
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()


def test_a_resumed_training_follows_the_same_learning_rates(tiny_bart, tmp_path, monkeypatch):
    args = dict(backbone=f"hf:{tiny_bart}", **RUN, max_steps=6, lr=1e-3, schedule="linear", warmup_steps=2,
                save_every=2, max_grad_norm=1.0, weight_decay=0.1)
    whole = train(out=str(tmp_path / "whole"), **args)
    expected = [1e-3 * s / 2 for s in range(2)] + [1e-3 * (6 - s) / 4 for s in range(2, 6)]
    assert whole["learning_rates"] == pytest.approx(expected, rel=1e-12)

    calls = {"n": 0}
    original = HFSeq2Seq.loss

    def interrupted(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt  # in step 4, after the checkpoint of step 2
        return original(self, *a, **k)

    resumed_out = tmp_path / "resumed"
    monkeypatch.setattr(HFSeq2Seq, "loss", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(out=str(resumed_out), **args)
    monkeypatch.setattr(HFSeq2Seq, "loss", original)
    state = json.loads((resumed_out / "checkpoint" / "trainer_state.json").read_text(encoding="utf-8"))
    assert state["step"] == 2 and state["learning_rates"] == whole["learning_rates"][:2]
    assert (resumed_out / "checkpoint" / "scheduler.pt").is_file()

    for changed, value in [("schedule", "cosine"), ("warmup_steps", 1), ("weight_decay", 0.0),
                           ("max_grad_norm", 0.5)]:
        with pytest.raises(ctrlkit.CtrlkitError, match=rf"made with different settings \({changed}\); rerun the same"):
            train(out=str(resumed_out), **{**args, changed: value})
    with pytest.raises(ctrlkit.CtrlkitError, match=r"different settings \(warmup_ratio, warmup_steps\)"):
        train(out=str(resumed_out), **{**args, "warmup_steps": None, "warmup_ratio": 0.3})

    with optimizer_steps() as seen:
        resumed = train(out=str(resumed_out), **args)
    assert resumed["resumed"] and resumed["steps"] == 6
    assert resumed["learning_rates"] == whole["learning_rates"]
    assert [step["lr"] for step in seen] == pytest.approx(expected[2:], rel=1e-12)  # the 4 steps run after resuming
    assert resumed["losses"] == pytest.approx(whole["losses"], abs=1e-5)


@pytest.mark.parametrize("grad_accum", [1, 2])
def test_clipping_scales_the_accumulated_gradient_to_max_grad_norm(tiny_bart, tmp_path, grad_accum):
    """The first step's gradients of two trainings from the same weights on the same batches: the
    clipped ones are the unclipped ones scaled to max_grad_norm."""
    args = dict(backbone=f"hf:{tiny_bart}", **RUN, max_steps=1, grad_accum=grad_accum, lr=1e-3)
    with optimizer_steps() as free:
        train(out=str(tmp_path / "free"), **args)
    limit = 0.05
    with optimizer_steps() as clipped:
        record = train(out=str(tmp_path / "clipped"), max_grad_norm=limit, **args)
    unclipped = norm(free[0]["grads"])
    assert unclipped > 4 * limit  # else this test would show nothing
    assert norm(clipped[0]["grads"]) <= limit * (1 + 1e-5)
    assert norm(clipped[0]["grads"]) == pytest.approx(limit, rel=1e-5)
    for mine, theirs in zip(clipped[0]["grads"], free[0]["grads"], strict=True):
        torch.testing.assert_close(mine, theirs * (limit / unclipped), rtol=1e-4, atol=1e-9)
    assert record["config"]["max_grad_norm"] == limit

    with optimizer_steps() as loose:
        train(out=str(tmp_path / "loose"), max_grad_norm=10 * unclipped, **args)  # above the norm: left alone
    for mine, theirs in zip(loose[0]["grads"], free[0]["grads"], strict=True):
        torch.testing.assert_close(mine, theirs, rtol=1e-6, atol=0)


def test_weight_decay_reaches_adamw(tiny_bart, tmp_path):
    """One step of AdamW from the same weights and gradients: decay W moves every weight p0 by
    -lr W p0 more than no decay does (decoupled weight decay)."""
    lr, decay = 1e-2, 0.5
    args = dict(backbone=f"hf:{tiny_bart}", **RUN, max_steps=1, lr=lr)
    with optimizer_steps() as default:
        train(out=str(tmp_path / "default"), **args)
    with optimizer_steps() as none:
        train(out=str(tmp_path / "none"), weight_decay=0.0, **args)
    with optimizer_steps() as some:
        record = train(out=str(tmp_path / "some"), weight_decay=decay, **args)
    assert [default[0]["weight_decay"], none[0]["weight_decay"], some[0]["weight_decay"]] == [0.01, 0.0, decay]
    assert record["config"]["weight_decay"] == decay

    start = load_file(str(tiny_bart / "model.safetensors"))
    without = load_file(str(tmp_path / "none" / "model.safetensors"))
    with_decay = load_file(str(tmp_path / "some" / "model.safetensors"))
    assert set(without) == set(with_decay) and set(without) <= set(start)
    moved = 0
    for name, weight in start.items():
        if name in without:
            torch.testing.assert_close(with_decay[name] - without[name], -lr * decay * weight, rtol=1e-3, atol=1e-8)
            moved += bool(weight.abs().max() > 0)
    assert moved > 10


@pytest.mark.parametrize("given, says", [
    ({"weight_decay": -0.1}, "weight_decay must be a finite number, 0 or more, not -0.1"),
    ({"weight_decay": float("nan")}, "weight_decay must be a finite number, 0 or more, not nan"),
    ({"max_grad_norm": -1.0}, "max_grad_norm must be a finite number, 0 or more, not -1.0"),
    ({"max_grad_norm": float("inf")}, "max_grad_norm must be a finite number, 0 or more, not inf"),
    ({"max_grad_norm": "1"}, "max_grad_norm must be a finite number, 0 or more, not '1'"),
    ({"bf16": "yes"}, "bf16 must be True or False, not 'yes'"),
    ({"schedule": "step"}, "schedule must be one of constant, linear, cosine, not 'step'"),
    ({"warmup_steps": 1, "warmup_ratio": 0.1}, "give the warmup as warmup_steps or as warmup_ratio, not both"),
    ({"warmup_ratio": 1.5}, r"warmup_ratio must be a number in \[0, 1\), not 1.5"),
])
def test_bad_optimizer_values_are_refused_before_anything_loads(tmp_path, given, says):
    with pytest.raises(ctrlkit.ConfigurationError, match=f"^{says}$"):
        train(backbone="hf:./no/such/model", out=str(tmp_path / "m"), split="test", **given)
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("flags, says", [
    (["--warmup-ratio", "1"], r"warmup_ratio must be a number in \[0, 1\), not 1.0"),
    (["--warmup-ratio", "nan"], r"warmup_ratio must be a number in \[0, 1\), not nan"),
    (["--warmup-steps", "2", "--warmup-ratio", "0.1"], "give the warmup as warmup_steps or as warmup_ratio"),
    (["--weight-decay", "-1"], "weight_decay must be a finite number, 0 or more, not -1.0"),
    (["--max-grad-norm", "nan"], "max_grad_norm must be a finite number, 0 or more, not nan"),
    (["--warmup-steps", "-1"], r"Invalid value for '--warmup-steps': -1 is not in the range x>=0"),
    (["--schedule", "step"], r"Invalid value for '--schedule': 'step' is not one of 'constant', 'linear', 'cosine'"),
])
def test_bad_optimizer_flags_are_one_line(tmp_path, flags, says):
    result = CliRunner().invoke(cli, ["train", "-b", "hf:./no/such/model", "-o", str(tmp_path / "m"), *flags])
    assert result.exit_code != 0
    errors = [line for line in result.output.splitlines() if "rror" in line]
    assert len(errors) == 1, result.output
    assert re.search(says, errors[0]), result.output


def test_a_warmup_as_long_as_the_training_is_refused(tiny_bart, tmp_path):
    with pytest.raises(ctrlkit.ConfigurationError, match=r"^warmup_steps 4 gives 4 warmup steps, but the training "
                                                         r"takes 4 optimizer steps: the warmup must end before"):
        train(backbone=f"hf:{tiny_bart}", out=str(tmp_path / "m"), **RUN, schedule="linear", warmup_steps=4)
    assert not (tmp_path / "m").exists()


def test_the_flags_reach_training_json(tiny_bart, tmp_path):
    out = tmp_path / "m"
    result = CliRunner().invoke(cli, ["train", "-b", f"hf:{tiny_bart}", "--split", "test", "--limit", "8",
                                      "--batch-size", "2", "--max-steps", "3", "--lr", "1e-3", "--schedule", "cosine",
                                      "--warmup-ratio", "0.5", "--weight-decay", "0.05", "--max-grad-norm", "2",
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    record = json.loads((out / "training.json").read_text(encoding="utf-8"))
    assert {key: record["config"][key] for key in ("schedule", "warmup_steps", "warmup_ratio", "weight_decay",
                                                   "max_grad_norm", "bf16")} == {
        "schedule": "cosine", "warmup_steps": None, "warmup_ratio": 0.5, "weight_decay": 0.05,
        "max_grad_norm": 2.0, "bf16": False}
    # ceil(0.5 x 3) = 2 warmup steps: 0, lr/2, then the cosine's first value, lr
    assert record["schedule_steps"] == {"warmup": 2, "total": 3}
    assert record["learning_rates"] == pytest.approx([0.0, 5e-4, 1e-3], rel=1e-12)


def test_bf16_is_refused_without_cuda_and_over_bfloat16_weights(tiny_bart, tmp_path):
    if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
        pytest.skip("this machine has CUDA with bfloat16: test_bf16_trains_on_cuda covers it")
    with pytest.raises(ctrlkit.ConfigurationError, match=r"^bf16 needs a CUDA device that supports bfloat16; "
                                                         r"backbone 'hf' is on cpu$"):
        train(backbone=f"hf:{tiny_bart}", out=str(tmp_path / "m"), **RUN, max_steps=1, bf16=True)
    with pytest.raises(ctrlkit.ConfigurationError, match=r"^bf16 autocasts float32 weights, but backbone 'hf' "
                                                         r"holds bfloat16 ones: drop the backbone's dtype option$"):
        train(backbone=f"hf:{tiny_bart}", out=str(tmp_path / "m"), **RUN, max_steps=1, bf16=True,
              options={"hf": {"dtype": "bfloat16"}})
    result = CliRunner().invoke(cli, ["train", "-b", f"hf:{tiny_bart}", "--split", "test", "--limit", "8",
                                      "--max-steps", "1", "--device", "cpu", "--bf16", "-o", str(tmp_path / "m")])
    assert result.exit_code == 1 and result.output.strip().splitlines() == [
        "Error: bf16 needs a CUDA device that supports bfloat16; backbone 'hf' is on cpu"], result.output
    assert not (tmp_path / "m").exists()


def test_the_forward_pass_context_bf16_chooses():
    plain = autocast(False)
    assert isinstance(plain, contextlib.nullcontext)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # without CUDA, torch warns that it disables this autocast
        chosen = autocast(True)
    assert isinstance(chosen, torch.autocast) and chosen.device == "cuda" and chosen.fast_dtype == torch.bfloat16


@pytest.mark.skipif(not (torch.cuda.is_available() and torch.cuda.is_bf16_supported()),
                    reason="needs a CUDA device with bfloat16; on others --bf16 is refused (tested above)")
def test_bf16_trains_on_cuda(tiny_bart, tmp_path, monkeypatch):
    dtypes = []
    original = HFSeq2Seq.loss

    def watched(self, *a, **k):  # the dtype the output layer computes in, on every forward pass
        handle = self.model.lm_head.register_forward_hook(lambda module, inputs, output: dtypes.append(output.dtype))
        try:
            return original(self, *a, **k)
        finally:
            handle.remove()

    monkeypatch.setattr(HFSeq2Seq, "loss", watched)
    record = train(backbone=f"hf:{tiny_bart}", out=str(tmp_path / "m"), **RUN, max_steps=2, lr=1e-3, bf16=True,
                   options={"hf": {"device": "cuda"}})
    assert record["config"]["bf16"] and len(record["losses"]) == 2
    assert all(math.isfinite(loss) for loss in record["losses"])
    assert dtypes and set(dtypes) == {torch.bfloat16}  # the forward pass ran in bfloat16
    weights = load_file(str(tmp_path / "m" / "model.safetensors"))
    assert {weight.dtype for weight in weights.values()} == {torch.float32}  # the master weights stayed float32
