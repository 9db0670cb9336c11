"""LoRAHub-style composition (Huang et al., "LoraHub: Efficient Cross-Task Generalization via
Dynamic LoRA Composition", 2023) in ``ctrlkit train``: with ``--set hf.adapters=a=DIR1,b=DIR2
--set hf.combine=lorahub``, the merge weights of trained LoRA adapters are searched without
gradients to lower the loss on a few training examples (``--limit``), and the merge found is
what the output folder runs.

The search minimises the mean loss of the examples' (controlled input, reference) pairs under
the merge (:mod:`ctrlkit.backbones.adapter_composition`: the weighted sum of the adapters' weight
changes) plus ``l1`` times the mean absolute weight, LoRAHub's regulariser, from all weights 0
(the base model), each weight within [-1.5, 1.5] as in LoRAHub's code, for ``budget`` evaluations
(40 by default, LoRAHub's default number of steps), with :func:`.weight_search.minimise`.
"""

from __future__ import annotations

from ..errors import ConfigurationError
from .weight_search import minimise

BOUND = 1.5
DEFAULT_BUDGET = 40
DEFAULT_L1 = 0.05


def asked(model) -> bool:
    """Whether the backbone composes adapters with ``combine=lorahub``."""
    return model.options.get("combine") == "lorahub" and bool(getattr(model, "composed", None))


def check(settings, model) -> None:
    """Refuse, in one line, the settings the search does not use, and the search's own options
    without ``combine=lorahub``."""
    if not asked(model):
        given = [flag for flag, value in (("--lorahub-budget", settings.lorahub_budget),
                                          ("--lorahub-l1", settings.lorahub_l1)) if value is not None]
        if given:
            raise ConfigurationError(f"{given[0]} needs --set {model.name}.adapters=... --set "
                                     f"{model.name}.combine=lorahub")
        return
    if settings.peft:
        raise ConfigurationError(f"--peft trains a new adapter; {model.name}.combine=lorahub weighs trained ones")
    if settings.eval_split:
        raise ConfigurationError(f"--eval-split does not apply to {model.name}.combine=lorahub: the search reads "
                                 "the training examples only")


def search_weights(settings, model, pairs) -> dict:
    """Search the weights; leave the model merged by the best ones; return what training.json records."""
    import torch

    names = [name for name, _ in model.composed]
    budget = DEFAULT_BUDGET if settings.lorahub_budget is None else settings.lorahub_budget
    l1 = DEFAULT_L1 if settings.lorahub_l1 is None else settings.lorahub_l1
    losses = []

    def objective(weights: list[float]) -> float:
        model.merge_adapters(weights)
        with torch.no_grad():
            total = sum(model.loss([pair[0] for pair in pairs[start:start + settings.batch_size]],
                                   [pair[1] for pair in pairs[start:start + settings.batch_size]],
                                   settings.max_target_tokens).item() * len(pairs[start:start + settings.batch_size])
                        for start in range(0, len(pairs), settings.batch_size))
        losses.append(total / len(pairs))
        return losses[-1] + l1 * sum(abs(weight) for weight in weights) / len(weights)

    model.train_mode(False)
    result = minimise(objective, [0.0] * len(names), budget, settings.seed, BOUND)
    model.merge_adapters(result.best)
    best = min(range(len(result.history)), key=lambda index: result.history[index][1])
    return {"adapters": names, "weights": dict(zip(names, result.best)), "objective": result.value,
            "loss": losses[best], "start_loss": losses[0], "evaluations": len(result.history), "budget": budget,
            "l1": l1, "bound": BOUND, "optimiser": "(1+1) evolution strategy, one-fifth success rule",
            "trace": [{"weights": point, "objective": value} for point, value in result.history]}
