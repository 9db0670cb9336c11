"""``ctrlkit train``: fine-tune a trainable backbone with a controller applied to every training
input, the training-time half of the published methods (prepend, tag, embed, guidance).

The output folder holds the model (with ``peft``: the adapter only, :mod:`.backbones.adapters`),
its tokenizer, ``ctrlkit_controller.json`` (the controller's learned state: terms, topic index,
...; and the topics held out of training, when any) and ``training.json`` (config, versions,
losses, learning rates, trainable parameters), so
``ctrlkit run --backbone hf:DIR --controller C`` restores all of it. A checkpoint is written
atomically every ``save_every`` steps and at each epoch's end; running the same command again
resumes from it.

The optimizer is AdamW (``weight_decay`` 0.01 by default: torch's, so a ``training.json`` that
records no weight decay was trained with it), its learning rate following a schedule
(:mod:`ctrlkit.training.schedules`) stepped once per optimizer step, the gradients clipped to a global norm
when asked, and on CUDA the forward pass and loss optionally under bfloat16 autocast over the
float32 weights.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import shutil
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..api import backbone_name, create_controller, get_backbone, get_dataset
from ..backbones.adapters import peft_settings
from ..backbones.hf_base import require_hf_libraries
from ..errors import ConfigurationError, CtrlkitError
from ..controls import apply_control, check_controls, uncontrolled
from ..files import atomic_write_json, read_json
from ..intake import admit_examples
from ..component_options import RunOptions
from ..engine.generation import fit_or_restore
from ..engine.recording import report_uncontrolled
from ..engine.setup import (check_capabilities, check_counts, check_topics, component_names, components,
                            create_vectorizers, dataset_and_split, resolved_options, seed_everything, topic_spaces,
                            with_data)
from ..engine.truncation import truncation_reported
from ..outputs import check_output, leaves_no_empty_folder
from ..progress import Progress, say
from ..quiet import quietly
from ..results import versions
from .schedules import check_schedule, multiplier, warmup_of
from ..secrets import mask_secrets
from ..topic_selection import check_names, check_something_left, drop_topics, topic_names
from ..types import ModelInput

CONTROLLER_FILE = "ctrlkit_controller.json"
CHECKPOINT = "checkpoint"


def save_controller(directory: str | Path, controller, holdout_topics: list[str] | None = None) -> None:
    """The controller's state; ``holdout_topics``, the topics held out of training, when any, so
    that a run of the model can say which topics it never saw."""
    saved = {"controller": controller.name, "state": controller.state()}
    if holdout_topics:
        saved["holdout_topics"] = holdout_topics
    atomic_write_json(Path(directory) / CONTROLLER_FILE, saved)


@leaves_no_empty_folder
@quietly
def train(
    *,
    backbone: str,
    out: str,
    dataset: str = "sample",
    data: str | None = None,
    split: str | None = None,
    eval_split: str | None = None,
    controller: str = "none",
    topics: str | None = None,
    holdout_topics: Sequence[str] | str | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    epochs: int = 1,
    max_steps: int = 0,
    lr: float = 5e-5,
    schedule: str = "constant",
    warmup_steps: int | None = None,
    warmup_ratio: float | None = None,
    weight_decay: float = 0.01,
    max_grad_norm: float = 0.0,
    bf16: bool = False,
    batch_size: int = 8,
    grad_accum: int = 1,
    patience: int = 0,
    save_every: int = 0,
    max_target_tokens: int = 128,
    limit: int | None = None,
    seed: int = 0,
    strict_controls: bool = False,
    peft: str | None = None,
    lora_rank: int | None = None,
    lora_alpha: float | None = None,
    lora_dropout: float | None = None,
    lora_targets: Sequence[str] | str | None = None,
    prefix_length: int | None = None,
    progress: bool = False,
) -> dict:
    """Fine-tune ``backbone`` (e.g. ``"hf:facebook/bart-base"``) on ``dataset``'s ``split`` (default:
    :meth:`Dataset.training_split`) with ``controller`` applied to each input; returns what
    ``training.json`` records. An example lacking a control the controller reads trains
    uncontrolled (counted), or with ``strict_controls`` is refused.

    ``holdout_topics`` (topic names, or one comma-separated string; a name matches an example's
    ``topic`` or ``topic_id``) leaves every example of those topics out of training, of the eval
    split and of what the controller fits on, for zero-shot evaluation
    (``run(only_topics=...)``); the topic space keeps them, as a topic's terms (tag) and vector
    (STAS) come from its topic documents, not from the training pairs. The model's folder records them.

    The learning rate ``lr`` follows ``schedule`` (``constant``, ``linear`` or ``cosine`` decay to 0;
    :mod:`ctrlkit.training.schedules`) after a linear warmup of ``warmup_steps`` optimizer steps or of
    ``warmup_ratio`` of them all (one or neither); ``training.json`` records the rate of every step.
    ``weight_decay`` is AdamW's (0.01, torch's default); ``max_grad_norm`` clips the gradients'
    global norm before each optimizer step (0: never). ``bf16`` runs the forward pass and loss
    under bfloat16 autocast, the weights and optimizer staying float32; CUDA only.

    ``peft`` (``"lora"`` or ``"prefix"``) trains an adapter instead of the whole model: LoRA of rank
    ``lora_rank`` (8), scale ``lora_alpha`` (16), dropout ``lora_dropout`` (0.05) on the modules
    ``lora_targets`` (names, or one comma-separated string; default: those peft knows for the
    architecture), or a prefix of ``prefix_length`` (20) virtual tokens."""
    require_hf_libraries("ctrlkit train")
    import torch

    out_dir = Path(out)
    if (out_dir / "training.json").is_file():
        raise CtrlkitError(f"{out_dir} already holds a trained model; choose another --out")
    if min(epochs, batch_size, grad_accum) < 1 or not 0 < lr < float("inf"):  # NaN too
        raise ConfigurationError("epochs, batch size and gradient accumulation must be at least 1, "
                                 "lr a finite number above 0")
    check_schedule(schedule, warmup_steps, warmup_ratio)
    _check_optimizer_options(weight_decay, max_grad_norm, bf16)
    holdout = topic_names(holdout_topics, "holdout_topics")
    optimisation = {"schedule": schedule, "warmup_steps": warmup_steps, "warmup_ratio": warmup_ratio,
                    "weight_decay": weight_decay, "max_grad_norm": max_grad_norm, "bf16": bf16}
    adapter = peft_settings(peft, lora_rank=lora_rank, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                            lora_targets=lora_targets, prefix_length=prefix_length)
    options = with_data(options, dataset, data)
    routed = RunOptions(options, components(dataset=dataset, controllers=component_names(controller),
                                            backbone=backbone))
    check_output(out_dir)
    checkpoint = out_dir / CHECKPOINT
    resuming = (checkpoint / "trainer_state.json").is_file()
    name = backbone_name(backbone)
    # train in float32 unless asked otherwise: AdamW steps on bf16 weights round small updates away
    backbone_options = {"dtype": "float32", **routed.of("backbones", name)}
    # recorded in the checkpoint and compared on resume with secrets masked (a new key resumes)
    settings = mask_secrets({"backbone": backbone, "controller": controller, "dataset": dataset, "data": data,
                             "split": split, "eval_split": eval_split, "topics": topics, "holdout_topics": holdout,
                             "options": options,
                             "epochs": epochs, "max_steps": max_steps, "lr": lr, **optimisation,
                             "batch_size": batch_size, "grad_accum": grad_accum, "patience": patience,
                             "max_target_tokens": max_target_tokens, "limit": limit, "seed": seed, "peft": adapter})
    if resuming:
        saved_settings = _read_trainer_state(checkpoint)["settings"]
        changed = sorted(key for key in settings if json.dumps(settings[key]) != json.dumps(saved_settings.get(key)))
        if changed:
            raise CtrlkitError(f"{checkpoint} was made with different settings ({', '.join(changed)}); "
                               "rerun the same command to resume, or choose another --out")
        backbone_options["model"] = str(checkpoint)
    model = get_backbone(name if resuming else backbone, **backbone_options)
    if "training" not in model.capabilities:
        raise ConfigurationError(f"backbone '{name}' cannot be trained")
    if bf16:
        _check_bf16(model)
    source = get_dataset(dataset, **routed.of("datasets", dataset))
    steering = create_controller(controller, routed.names("controllers"))
    vectorizers = create_vectorizers([steering] if steering.topic_vectorizer else [], routed)
    routed.check_unused()
    check_capabilities(steering, model, backbone)
    seed_everything(seed)
    check_counts(limit=limit)
    started = time.perf_counter()

    split = source.training_split(split) if source.splits else None  # a dataset without splits is read whole
    loaded = source.load(split)
    loaded_evaluation = source.load(eval_split) if eval_split else []
    if holdout:
        where = dataset_and_split(dataset, split) + (f" or split '{eval_split}'" if eval_split else "")
        check_names(holdout, loaded + loaded_evaluation, where, "holdout_topics")
    kept, kept_evaluation = drop_topics(loaded, holdout or ()), drop_topics(loaded_evaluation, holdout or ())
    if holdout:
        check_something_left(holdout, loaded, kept, dataset_and_split(dataset, split), "train on")
        check_something_left(holdout, loaded_evaluation, kept_evaluation, dataset_and_split(dataset, eval_split),
                             "evaluate on")
    examples = admit_examples(kept[:limit], dataset)
    evaluation = admit_examples(kept_evaluation, dataset)
    check_controls(steering, examples + evaluation, dataset, strict_controls)
    vectorizer = steering.topic_vectorizer
    spaces = topic_spaces(vectorizers, topics, source, dataset)
    if vectorizer:
        check_topics(steering, spaces[vectorizer], examples + evaluation)
    fit_or_restore(steering, model, source, spaces.get(vectorizer), seed, holdout)
    steering.prepare(model)
    pairs = _pairs(steering, examples)
    left = uncontrolled(steering, examples)
    report_uncontrolled(left, len(examples), steering)
    eval_pairs = _pairs(steering, evaluation)
    if not pairs:
        raise ConfigurationError(f"{f'split {split!r}' if split else 'the data'} of dataset '{dataset}' has no "
                                 "references to train on")

    batches_per_epoch = -(-len(pairs) // batch_size)
    total = max_steps or epochs * -(-batches_per_epoch // grad_accum)
    warmup = warmup_of(total, warmup_steps, warmup_ratio)
    peft_chose = model.attach_adapter(adapter) if adapter else None
    parameters = list(model.trainable_parameters())
    counts = _parameter_counts(model, parameters)
    optimizer = torch.optim.AdamW(parameters, lr=lr, weight_decay=weight_decay)
    # stepped after each optimizer step: step s (from 0) runs at lr * multiplier(s)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, multiplier(schedule, total, warmup))
    state = {"step": 0, "epoch": 0, "batch": 0, "losses": [], "learning_rates": [], "eval_losses": [],
             "best_eval": None, "bad_evals": 0, "done": False, "settings": settings}
    if resuming:
        state = _read_trainer_state(checkpoint)
        # the optimizer's state holds the rate of the next step; the scheduler's, its step count
        optimizer.load_state_dict(torch.load(checkpoint / "optimizer.pt", weights_only=True))
        scheduler.load_state_dict(torch.load(checkpoint / "scheduler.pt", weights_only=True))

    def save_checkpoint():
        temporary = out_dir / f".{CHECKPOINT}.tmp"
        shutil.rmtree(temporary, ignore_errors=True)
        model.save(temporary)
        save_controller(temporary, steering, holdout)
        torch.save(optimizer.state_dict(), temporary / "optimizer.pt")
        torch.save(scheduler.state_dict(), temporary / "scheduler.pt")
        atomic_write_json(temporary / "trainer_state.json", state)
        shutil.rmtree(checkpoint, ignore_errors=True)
        temporary.rename(checkpoint)

    if progress and resuming:
        say(f"train [{steering.name}]: resuming: {state['step']} of {total} steps already done ({checkpoint})")
    if progress:
        say(f"train [{steering.name}]: {counts['trainable_parameters']:,} of {counts['total_parameters']:,} "
            f"parameters trainable ({counts['trainable_share']:.2%})")
    bar = Progress(f"train [{steering.name}]", total, "steps", enabled=progress, initial=state["step"])
    stop = state["done"]
    model.train_mode(True)
    with bar, truncation_reported(model, "training; an input counts once per epoch"):
        while (max_steps or state["epoch"] < epochs) and not stop:  # max_steps overrides epochs
            order = list(range(len(pairs)))
            random.Random(seed + state["epoch"]).shuffle(order)
            while state["batch"] < batches_per_epoch:
                chosen = [pairs[i] for i in order[state["batch"] * batch_size:(state["batch"] + 1) * batch_size]]
                with autocast(bf16):
                    loss = model.loss([p[0] for p in chosen], [p[1] for p in chosen], max_target_tokens) / grad_accum
                loss.backward()
                state["batch"] += 1
                if state["batch"] % grad_accum and state["batch"] < batches_per_epoch:
                    continue
                if max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(parameters, max_grad_norm)
                state["learning_rates"].append(optimizer.param_groups[0]["lr"])
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                state["step"] += 1
                state["losses"].append(round(loss.item() * grad_accum, 6))
                bar.update(1, f"loss {state['losses'][-1]:.4f}")
                if max_steps and state["step"] >= max_steps:
                    stop = True
                    break
                if save_every and state["step"] % save_every == 0:
                    save_checkpoint()
            if not stop:
                state["epoch"] += 1
                state["batch"] = 0
            if eval_pairs:
                with autocast(bf16):
                    stop = _evaluate(model, eval_pairs, batch_size, max_target_tokens, state, patience, out_dir) or stop
            state["done"] = stop or (not max_steps and state["epoch"] >= epochs)
            save_checkpoint()
    model.train_mode(False)

    if not eval_pairs:
        model.save(out_dir)
    # with an eval split, out_dir already holds the best model (saved by _evaluate)
    save_controller(out_dir, steering, holdout)
    record = {
        "config": mask_secrets({
            "backbone": backbone, "dataset": dataset, "data": data, "split": split, "eval_split": eval_split,
            "controller": steering.name, "topics": topics, "holdout_topics": holdout, "epochs": epochs,
            "max_steps": max_steps, "lr": lr, **optimisation, "batch_size": batch_size, "grad_accum": grad_accum,
            "patience": patience, "max_target_tokens": max_target_tokens, "limit": limit, "seed": seed,
            "strict_controls": strict_controls,
            "peft": {**adapter, **peft_chose} if adapter else None,
            "options": resolved_options(routed, datasets=[source], controllers=[steering], backbones=[model],
                                        vectorizers=vectorizers.values())}),
        "versions": versions(),
        "n_pairs": len(pairs),
        **counts,
        "n_held_out": {"train": len(loaded) - len(kept), "eval": len(loaded_evaluation) - len(kept_evaluation)}
        if holdout else None,
        "uncontrolled": left,
        "steps": state["step"],
        "losses": state["losses"],
        "learning_rates": state["learning_rates"],
        "schedule_steps": {"warmup": warmup, "total": total},
        "eval_losses": state["eval_losses"],
        "best_eval_loss": state["best_eval"],
        "resumed": resuming,
        "seconds": round(time.perf_counter() - started, 3),
    }
    atomic_write_json(out_dir / "training.json", record)
    shutil.rmtree(checkpoint, ignore_errors=True)
    return record


def _parameter_counts(model, trainable) -> dict:
    """How many parameters training updates, of how many the model has (each shared tensor once;
    with an adapter, the total counts the adapter's parameters too)."""
    every = {id(parameter): parameter for parameter in [*model.model.parameters(), *trainable]}
    count = sum(parameter.numel() for parameter in {id(p): p for p in trainable}.values())
    total = sum(parameter.numel() for parameter in every.values())
    return {"trainable_parameters": count, "total_parameters": total, "trainable_share": round(count / total, 6)}


def _pairs(controller, examples) -> list[tuple[ModelInput, str]]:
    """(controlled input, reference) for every reference of every example."""
    return [(apply_control(controller, example, ModelInput(source=example.document)), reference)
            for example in examples for reference in example.references]


def _evaluate(model, pairs, batch_size, max_target_tokens, state, patience, out_dir) -> bool:
    """Record the eval loss; save the model to ``out_dir`` when it is the best so far; return
    True when ``patience`` evaluations in a row did not improve (early stopping)."""
    import torch

    model.train_mode(False)
    with torch.no_grad():
        losses = [model.loss([p[0] for p in pairs[i:i + batch_size]], [p[1] for p in pairs[i:i + batch_size]],
                             max_target_tokens).item() for i in range(0, len(pairs), batch_size)]
    model.train_mode(True)
    loss = sum(losses) / len(losses)
    state["eval_losses"].append(round(loss, 6))
    if state["best_eval"] is None or loss < state["best_eval"]:
        state["best_eval"], state["bad_evals"] = loss, 0
        model.save(out_dir)
    else:
        state["bad_evals"] += 1
    return bool(patience) and state["bad_evals"] >= patience


def _read_trainer_state(checkpoint: Path) -> dict:
    """The checkpoint's training state; a damaged one is one line saying how to start over."""
    path = checkpoint / "trainer_state.json"
    state = read_json(path, dict, what="a training checkpoint's state")
    kinds = {"settings": dict, "step": int, "epoch": int, "batch": int, "losses": list, "learning_rates": list,
             "eval_losses": list, "bad_evals": int, "done": bool}
    wrong = [key for key, kind in kinds.items() if not isinstance(state.get(key), kind)]
    if wrong:
        raise CtrlkitError(f"{path}: damaged checkpoint (field {wrong[0]!r} missing or of the wrong type); "
                           f"remove {checkpoint} to train from the start")
    return state


def _check_optimizer_options(weight_decay, max_grad_norm, bf16) -> None:
    """One line for a negative, infinite or NaN decay or norm, or a bf16 that is not a bool."""
    for name, value in (("weight_decay", weight_decay), ("max_grad_norm", max_grad_norm)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:  # NaN too
            raise ConfigurationError(f"{name} must be a finite number, 0 or more, not {value!r}")
    if not isinstance(bf16, bool):
        raise ConfigurationError(f"bf16 must be True or False, not {bf16!r}")


def _check_bf16(model) -> None:
    """bf16 autocast keeps float32 master weights on a CUDA device that computes in bfloat16."""
    import torch

    dtypes = sorted({str(parameter.dtype).removeprefix("torch.") for parameter in model.trainable_parameters()})
    if dtypes != ["float32"]:
        raise ConfigurationError(f"bf16 autocasts float32 weights, but backbone '{model.name}' holds "
                                 f"{', '.join(dtypes)} ones: drop the backbone's dtype option")
    device = getattr(model, "device", None)
    if getattr(device, "type", None) != "cuda" or not torch.cuda.is_bf16_supported():
        raise ConfigurationError(f"bf16 needs a CUDA device that supports bfloat16; backbone '{model.name}' is on "
                                 f"{device or 'no torch device'}")


def autocast(bf16: bool):
    """The context the forward pass and loss run in: bfloat16 autocast on CUDA, or nothing."""
    import torch

    return torch.autocast("cuda", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
