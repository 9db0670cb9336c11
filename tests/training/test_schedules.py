"""Learning-rate schedules (ctrlkit.training.schedules): the multiplier at every step against the formula
written out here and against transformers' own schedules, their refusals, and the rate of every
optimizer step of a real tiny training, read from training.json and from the optimizer itself."""

import json
import math

import pytest

import ctrlkit
from ctrlkit.training.schedules import SCHEDULES, check_schedule, multiplier, warmup_of


def expected_rate(lr, schedule, step, total, warmup):
    """The rate of optimizer step ``step`` (from 0), from the definitions in the docs."""
    if step < warmup:
        return lr * step / warmup
    if schedule == "constant":
        return lr
    done = (step - warmup) / (total - warmup)
    return lr * (1 - done) if schedule == "linear" else lr * (1 + math.cos(math.pi * done)) / 2


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("total, warmup", [(1, 0), (7, 0), (7, 3), (10, 9), (50, 5)])
def test_every_step_follows_the_formula(schedule, total, warmup):
    at = multiplier(schedule, total, warmup)
    assert [at(step) for step in range(total)] == pytest.approx(
        [expected_rate(1.0, schedule, step, total, warmup) for step in range(total)], rel=1e-12, abs=1e-15)


def test_the_ends_of_each_schedule():
    linear, cosine, constant = (multiplier(name, 10, 2) for name in ("linear", "cosine", "constant"))
    assert [linear(0), linear(1), linear(2), linear(9)] == pytest.approx([0, 0.5, 1, 1 / 8])  # last step: 1/(T-W)
    assert [cosine(2), cosine(9), cosine(10)] == pytest.approx([1, (1 + math.cos(math.pi * 7 / 8)) / 2, 0])
    assert [constant(0), constant(1), constant(2), constant(9)] == [0, 0.5, 1, 1]
    assert linear(10) == cosine(10) == 0 and linear(12) == 0  # 0 after the last step, never negative


@pytest.mark.parametrize("schedule, maker", [("constant", "get_constant_schedule_with_warmup"),
                                             ("linear", "get_linear_schedule_with_warmup"),
                                             ("cosine", "get_cosine_schedule_with_warmup")])
def test_the_rates_are_those_of_transformers_schedules(schedule, maker):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    total, warmup, lr = 12, 3, 3e-5

    def rates(make):
        optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)
        scheduler = make(optimizer)
        seen = []
        for _ in range(total):
            seen.append(optimizer.param_groups[0]["lr"])
            optimizer.step()
            scheduler.step()
        return seen

    kwargs = {} if schedule == "constant" else {"num_training_steps": total}
    theirs = rates(lambda o: getattr(transformers, maker)(o, num_warmup_steps=warmup, **kwargs))
    ours = rates(lambda o: torch.optim.lr_scheduler.LambdaLR(o, multiplier(schedule, total, warmup)))
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-18)


def test_a_warmup_ratio_is_rounded_up_and_must_end_before_the_last_step():
    assert warmup_of(10, None, 0.25) == 3 and warmup_of(10, None, 0.2) == 2 and warmup_of(10, None, None) == 0
    assert warmup_of(10, 9, None) == 9 and warmup_of(1, 0, None) == 0 and warmup_of(3, None, 0.0) == 0
    with pytest.raises(ctrlkit.ConfigurationError,
                       match=r"^warmup_steps 4 gives 4 warmup steps, but the training takes 4 optimizer steps"):
        warmup_of(4, 4, None)
    with pytest.raises(ctrlkit.ConfigurationError, match=r"^warmup_ratio 0\.9 gives 2 warmup steps, but the "
                                                         r"training takes 2 optimizer steps"):
        warmup_of(2, None, 0.9)


@pytest.mark.parametrize("schedule, steps, ratio, says", [
    ("exponential", None, None, "schedule must be one of constant, linear, cosine, not 'exponential'"),
    ("linear", 2, 0.1, "give the warmup as warmup_steps or as warmup_ratio, not both"),
    ("linear", -1, None, "warmup_steps must be a whole number, 0 or more, not -1"),
    ("linear", 2.5, None, "warmup_steps must be a whole number, 0 or more, not 2.5"),
    ("linear", True, None, "warmup_steps must be a whole number, 0 or more, not True"),
    ("cosine", None, 1.0, r"warmup_ratio must be a number in \[0, 1\), not 1.0"),
    ("cosine", None, -0.1, r"warmup_ratio must be a number in \[0, 1\), not -0.1"),
    ("cosine", None, float("nan"), r"warmup_ratio must be a number in \[0, 1\), not nan"),
    ("cosine", None, "0.1", r"warmup_ratio must be a number in \[0, 1\), not '0.1'"),
])
def test_bad_schedules_are_refused_in_one_line(schedule, steps, ratio, says):
    with pytest.raises(ctrlkit.ConfigurationError, match=f"^{says}$"):
        check_schedule(schedule, steps, ratio)


# the rates of a real training, on conftest's tiny BART (one for the session)
def optimizer_rates():
    """Every optimizer step's learning rate as torch's optimizer holds it when it steps."""
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    seen = []
    handle = register_optimizer_step_pre_hook(lambda optimizer, args, kwargs:
                                              seen.append(optimizer.param_groups[0]["lr"]))
    return seen, handle


# limit 8 and batch size 2: 4 batches an epoch; total is max_steps, else epochs x steps per epoch
@pytest.mark.parametrize("schedule, given, run, total, warmup", [
    ("constant", {}, {"max_steps": 3}, 3, 0),
    ("constant", {"warmup_steps": 2}, {"epochs": 2}, 8, 2),
    ("linear", {"warmup_steps": 2}, {"max_steps": 5}, 5, 2),
    ("linear", {"warmup_ratio": 0.3}, {"epochs": 3, "grad_accum": 2}, 6, 2),  # ceil(0.3 x 6)
    ("cosine", {}, {"max_steps": 4}, 4, 0),
    ("cosine", {"warmup_steps": 1}, {"max_steps": 5}, 5, 1),
    ("cosine", {"warmup_ratio": 0.25}, {"epochs": 2}, 8, 2),
])
def test_a_training_runs_every_step_at_the_scheduled_rate(tiny_bart, tmp_path, schedule, given, run, total, warmup):
    from ctrlkit.training.trainer import train

    lr = 2e-3
    seen, handle = optimizer_rates()
    try:
        record = train(backbone=f"hf:{tiny_bart}", out=str(tmp_path / "m"), split="test", limit=8, batch_size=2,
                       lr=lr, schedule=schedule, **given, **run)
    finally:
        handle.remove()
    expected = [expected_rate(lr, schedule, step, total, warmup) for step in range(total)]
    assert record["steps"] == total and record["schedule_steps"] == {"warmup": warmup, "total": total}
    assert record["learning_rates"] == pytest.approx(expected, rel=1e-12, abs=1e-18)
    assert seen == pytest.approx(expected, rel=1e-12, abs=1e-18)
    saved = json.loads((tmp_path / "m" / "training.json").read_text(encoding="utf-8"))
    assert saved["learning_rates"] == record["learning_rates"] and saved["config"]["schedule"] == schedule
    assert {key: saved["config"][key] for key in ("warmup_steps", "warmup_ratio")} == {
        "warmup_steps": given.get("warmup_steps"), "warmup_ratio": given.get("warmup_ratio")}
