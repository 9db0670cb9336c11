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
import random
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..api import backbone_name, get_backbone
from ..backbones import value_prefixes
from ..backbones.adapter_composition import write_composition
from ..backbones.adapters import peft_settings, recorded_base
from ..backbones.hf_base import require_hf_libraries
from ..errors import ConfigurationError, CtrlkitError
from ..controls import apply_control, check_controls, uncontrolled
from ..files import (atomic_write_json, atomic_write_with, read_json, recover_files, recover_folder, replace_files,
                     replace_folder)
from ..intake import admit_examples, plain
from ..engine.generation import fit_or_restore
from ..engine.recording import report_uncontrolled
from ..engine.assembly import assemble, with_data
from ..engine.checks import dataset_and_split, seed_everything
from ..engine.truncation import truncation_reported
from ..outputs import check_output, leaves_no_empty_folder
from ..progress import Progress, say
from ..quiet import quietly
from ..results import versions
from . import lorahub
from .schedules import multiplier, warmup_of
from .settings import TrainSettings
from ..secrets import mask_secrets
from ..topic_selection import check_names, check_something_left, drop_topics
from ..types import ModelInput

CONTROLLER_FILE = "ctrlkit_controller.json"
CHECKPOINT = "checkpoint"


def save_controller(directory: str | Path, controller, holdout_topics: list[str] | None = None) -> None:
    """The controller's state; ``holdout_topics``, the topics held out of training, when any, so
    that a run of the model can say which topics it never saw."""
    saved = {"controller": controller.name, "state": controller_state(controller)}
    if holdout_topics:
        saved["holdout_topics"] = holdout_topics
    atomic_write_json(Path(directory) / CONTROLLER_FILE, saved)


def controller_state(controller) -> dict:
    """The controller's ``state()`` as plain JSON data (numpy scalars made Python ones); state that
    is not (an array, a set, bytes) is one line naming the controller and where, so that a
    checkpoint never fails after the training work (training checks it before the first step)."""
    return plain(controller.state(), f"controller '{controller.name}': state", error=ConfigurationError)


@leaves_no_empty_folder
@quietly
def train(settings: TrainSettings | None = None, /, **fields: Any) -> dict:
    """Fine-tune a trainable backbone (``backbone="hf:facebook/bart-base"``) on a dataset's split
    (default: :meth:`Dataset.training_split`) with the controller applied to each input, into the
    folder ``out``; returns what ``training.json`` records. The keywords are the fields of
    :class:`ctrlkit.training.settings.TrainSettings`; ``settings``, when given, is the starting
    point they change. An example lacking a control the controller reads trains uncontrolled
    (counted), or with ``strict_controls`` is refused.

    ``holdout_topics`` leaves every example of those topics out of training, of the eval split and
    of what the controller fits on, for zero-shot evaluation (``run(only_topics=...)``); the topic
    space keeps them, as a topic's terms (tag) and vector (STAS) come from its topic documents, not
    from the training pairs. The learning rate follows ``schedule`` after the warmup
    (:mod:`ctrlkit.training.schedules`); ``peft`` trains a LoRA or prefix adapter instead of the
    whole model (:mod:`ctrlkit.backbones.adapters`)."""
    settings = TrainSettings(**fields) if settings is None else replace(settings, **fields) if fields else settings
    require_hf_libraries("ctrlkit train")
    out_dir = Path(settings.out)
    if (out_dir / "training.json").is_file():
        raise CtrlkitError(f"{out_dir} already holds a trained model; choose another --out")
    adapter = peft_settings(settings.peft, lora_rank=settings.lora_rank, lora_alpha=settings.lora_alpha,
                            lora_dropout=settings.lora_dropout, lora_targets=settings.lora_targets,
                            prefix_length=settings.prefix_length)
    check_output(out_dir)
    checkpoint = out_dir / CHECKPOINT
    if checkpoint.is_symlink():  # recovering would remove it, and training silently start again from step 0
        raise CtrlkitError(f"{checkpoint} is a link; train keeps its checkpoint as a folder of its own and never "
                           "follows a link there: move the folder it points to into its place, or remove the link")
    if recover_files(out_dir) and settings.progress:
        say(f"train: the model in {out_dir} was being replaced when training stopped; the one before is back")
    if recover_folder(checkpoint) and settings.progress:
        say(f"train: {checkpoint} was being replaced when training stopped; resuming from the copy set aside")
    resuming = (checkpoint / "trainer_state.json").is_file()
    if not resuming and checkpoint.exists():
        raise CtrlkitError(f"{checkpoint}: damaged checkpoint (no trainer_state.json); remove it to train from "
                           f"the start")
    # recorded in the checkpoint and compared on resume with secrets masked (a new key resumes)
    recorded = mask_secrets({**settings.recorded(), "options": with_data(settings.options, settings.dataset,
                                                                          settings.data), "peft": adapter})
    if resuming:
        _check_same_settings(checkpoint, recorded)
    parts = assemble(dataset=settings.dataset, data=settings.data, options=settings.options,
                     controllers=[settings.controller], backbone=settings.backbone,
                     make_backbone=_trainable_backbone(checkpoint if resuming else None))
    model, steering = parts.backbone, parts.controllers[0]
    if "training" not in model.capabilities:
        raise ConfigurationError(f"backbone '{backbone_name(settings.backbone)}' cannot be trained")
    if settings.bf16:
        _check_bf16(model)
    lorahub.check(settings, model)
    seed_everything(settings.seed)
    started = time.perf_counter()
    pairs, eval_pairs, facts = _training_pairs(settings, parts)
    if lorahub.asked(model):
        return _compose_lorahub(settings, parts, pairs, facts, recorded, started)
    prefix_keys = _prefix_keys(pairs, eval_pairs, adapter)
    peft_chose = model.attach_adapter(adapter, prefix_keys) if adapter else None
    loop = TrainingLoop.start(settings, model, steering, len(pairs), recorded, checkpoint if resuming else None)
    if settings.progress and resuming:
        say(f"train [{steering.name}]: resuming: {loop.state['step']} of {loop.total} steps already done "
            f"({checkpoint})")
    counts = _parameter_counts(model, loop.parameters)
    if settings.progress:
        say(f"train [{steering.name}]: {counts['trainable_parameters']:,} of {counts['total_parameters']:,} "
            f"parameters trainable ({counts['trainable_share']:.2%})")
    with Progress(f"train [{steering.name}]", loop.total, "steps", enabled=settings.progress,
                  initial=loop.state["step"]) as bar:
        loop.run(pairs, eval_pairs, bar)

    if not eval_pairs:  # through a temporary folder: a kill while saving leaves no half model to load
        replace_files(out_dir, model.save)
    # with an eval split, out_dir already holds the best model (saved by _evaluate)
    save_controller(out_dir, steering, settings.holdout_topics)
    state = loop.state
    record = {
        "config": mask_secrets({**recorded, "split": facts["split"], "controller": steering.name,
                                "strict_controls": settings.strict_controls,
                                "peft": {**adapter, **peft_chose} if adapter else None,
                                "options": parts.recorded_options()}),
        "versions": versions(),
        "n_pairs": len(pairs),
        **counts,
        "n_held_out": facts["n_held_out"],
        "uncontrolled": facts["uncontrolled"],
        "steps": state["step"],
        "losses": state["losses"],
        "learning_rates": state["learning_rates"],
        "schedule_steps": {"warmup": loop.warmup, "total": loop.total},
        "eval_losses": state["eval_losses"],
        "best_eval_loss": state["best_eval"],
        "resumed": resuming,
        "seconds": round(time.perf_counter() - started, 3),
    }
    atomic_write_json(out_dir / "training.json", record)
    shutil.rmtree(checkpoint, ignore_errors=True)
    recover_folder(checkpoint)  # and an old copy set aside, if any
    return record


def _compose_lorahub(settings: TrainSettings, parts, pairs, facts, recorded: dict, started: float) -> dict:
    """``hf.combine=lorahub``: search the merge weights on the training pairs, and write a folder
    that runs the merge found (:mod:`.lorahub`), with the controller and training.json."""
    model, steering, out_dir = parts.backbone, parts.controllers[0], Path(settings.out)
    with Progress(f"lorahub [{steering.name}]", 1, "searches", enabled=settings.progress) as bar:
        search = lorahub.search_weights(settings, model, pairs)
        bar.update(1, f"loss {search['start_loss']:.4f} -> {search['loss']:.4f}")
    weights = [search["weights"][name] for name, _ in model.composed]
    base = recorded_base(model.options["model"])
    replace_files(out_dir, lambda folder: write_composition(folder, base, model.composed, weights))
    save_controller(out_dir, steering, settings.holdout_topics)
    record = {
        "config": mask_secrets({**recorded, "split": facts["split"], "controller": steering.name,
                                "strict_controls": settings.strict_controls, "options": parts.recorded_options()}),
        "versions": versions(),
        "n_pairs": len(pairs),
        "n_held_out": facts["n_held_out"],
        "uncontrolled": facts["uncontrolled"],
        "lorahub": search,
        "seconds": round(time.perf_counter() - started, 3),
    }
    atomic_write_json(out_dir / "training.json", record)
    return record


def _training_pairs(settings: TrainSettings, parts) -> tuple[list, list, dict]:
    """The (controlled input, reference) pairs to train on and to evaluate on, with the controller
    fitted (or restored) on the train examples; and what training.json says of them: the split,
    the examples held out and those left uncontrolled."""
    source, steering, dataset = parts.dataset, parts.controllers[0], settings.dataset
    split = source.training_split(settings.split) if source.splits else None  # without splits: read whole
    examples, evaluation, n_held_out = _training_examples(source, dataset, split, settings.eval_split,
                                                          settings.holdout_topics, settings.limit)
    check_controls(steering, examples + evaluation, dataset, settings.strict_controls)
    parts.fit_topic_spaces(settings.topics, examples + evaluation, dataset)
    fit_or_restore(steering, parts.backbone, source, parts.spaces.get(steering.topic_vectorizer), settings.seed,
                   settings.holdout_topics)
    steering.prepare(parts.backbone)
    controller_state(steering)  # refused now, not at the first checkpoint after the work
    pairs = _pairs(steering, examples)
    left = uncontrolled(steering, examples)
    report_uncontrolled(left, len(examples), steering)
    if not pairs:
        raise ConfigurationError(f"{f'split {split!r}' if split else 'the data'} of dataset '{dataset}' has no "
                                 "references to train on")
    return pairs, _pairs(steering, evaluation), {"split": split, "n_held_out": n_held_out, "uncontrolled": left}


@dataclass
class TrainingLoop:
    """The optimisation itself: batches in a seeded order per epoch, gradient accumulation, clipping,
    the schedule's step, a checkpoint every ``save_every`` steps and at each epoch's end, and with
    an eval split an evaluation per epoch (early stopping after ``patience`` bad ones). ``state``
    is what a checkpoint holds, so a rerun resumes at the batch where it stopped."""

    settings: TrainSettings
    model: Any
    steering: Any
    parameters: list
    optimizer: Any
    scheduler: Any
    state: dict
    total: int
    warmup: int

    @classmethod
    def start(cls, settings: TrainSettings, model, steering, n_pairs: int, recorded: dict,
              checkpoint: Path | None) -> "TrainingLoop":
        """AdamW over the trainable parameters with the schedule's multiplier, fresh or, from
        ``checkpoint``, where it stopped; ``recorded`` is what a checkpoint compares on resume."""
        import torch

        batches_per_epoch = -(-n_pairs // settings.batch_size)
        total = settings.max_steps or settings.epochs * -(-batches_per_epoch // settings.grad_accum)
        warmup = warmup_of(total, settings.warmup_steps, settings.warmup_ratio)
        parameters = list(model.trainable_parameters())
        optimizer = torch.optim.AdamW(parameters, lr=settings.lr, weight_decay=settings.weight_decay)
        # stepped after each optimizer step: step s (from 0) runs at lr * multiplier(s)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, multiplier(settings.schedule, total, warmup))
        state = _resumed_state(checkpoint, optimizer, scheduler) if checkpoint is not None else {
            "step": 0, "epoch": 0, "batch": 0, "losses": [], "learning_rates": [], "eval_losses": [],
            "best_eval": None, "bad_evals": 0, "done": False, "settings": recorded}
        return cls(settings, model, steering, parameters, optimizer, scheduler, state, total, warmup)

    def run(self, pairs, eval_pairs, bar) -> None:
        state = self.state
        stop = state["done"]
        self.model.train_mode(True)
        with truncation_reported(self.model, "training; an input counts once per epoch"):
            while (self.settings.max_steps or state["epoch"] < self.settings.epochs) and not stop:  # max_steps overrides epochs
                stop = self.run_epoch(pairs, bar)
                if not stop:
                    state["epoch"] += 1
                    state["batch"] = 0
                if eval_pairs:
                    with autocast(self.settings.bf16):
                        stop = _evaluate(self.model, eval_pairs, self.settings.batch_size, self.settings.max_target_tokens, state,
                                         self.settings.patience, Path(self.settings.out)) or stop
                state["done"] = stop or (not self.settings.max_steps and state["epoch"] >= self.settings.epochs)
                self.save_checkpoint()
        self.model.train_mode(False)

    def run_epoch(self, pairs, bar) -> bool:
        """The epoch's batches from ``state["batch"]`` on; True when ``max_steps`` is reached."""
        import torch

        state = self.state
        batches_per_epoch = -(-len(pairs) // self.settings.batch_size)
        order = list(range(len(pairs)))
        random.Random(self.settings.seed + state["epoch"]).shuffle(order)
        while state["batch"] < batches_per_epoch:
            start = state["batch"] * self.settings.batch_size
            chosen = [pairs[i] for i in order[start:start + self.settings.batch_size]]
            with autocast(self.settings.bf16):
                loss = self.model.loss([p[0] for p in chosen], [p[1] for p in chosen],
                                       self.settings.max_target_tokens) / self.settings.grad_accum
            loss.backward()
            state["batch"] += 1
            if state["batch"] % self.settings.grad_accum and state["batch"] < batches_per_epoch:
                continue
            if self.settings.max_grad_norm:
                torch.nn.utils.clip_grad_norm_(self.parameters, self.settings.max_grad_norm)
            state["learning_rates"].append(self.optimizer.param_groups[0]["lr"])
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad()
            state["step"] += 1
            state["losses"].append(round(loss.item() * self.settings.grad_accum, 6))
            bar.update(1, f"loss {state['losses'][-1]:.4f}")
            if self.settings.max_steps and state["step"] >= self.settings.max_steps:
                return True
            if self.settings.save_every and state["step"] % self.settings.save_every == 0:
                self.save_checkpoint()
        return False

    def save_checkpoint(self) -> None:
        """Model, controller, optimizer, scheduler and state, written into a fresh folder beside the
        checkpoint and swapped in (:func:`ctrlkit.files.replace_folder`): the old checkpoint stays
        until the new one is whole, and a kill at any moment leaves one to resume from."""
        import torch

        def build(temporary: Path) -> None:
            self.model.save(temporary)
            save_controller(temporary, self.steering, self.settings.holdout_topics)
            for name, state in (("optimizer.pt", self.optimizer), ("scheduler.pt", self.scheduler)):
                atomic_write_with(temporary / name, lambda file, state=state: torch.save(state.state_dict(), file))
            atomic_write_json(temporary / "trainer_state.json", self.state)  # last: marks the folder whole

        replace_folder(Path(self.settings.out) / CHECKPOINT, build)


def _trainable_backbone(checkpoint: Path | None):
    """How training makes its backbone: in float32 unless asked otherwise (AdamW steps on bf16
    weights round small updates away), and from the checkpoint when resuming."""

    def make(spec: str, **options):
        if checkpoint is None:
            return get_backbone(spec, **{"dtype": "float32", **options})
        return get_backbone(backbone_name(spec), **{"dtype": "float32", **options, "model": str(checkpoint)})

    return make


def _check_same_settings(checkpoint: Path, settings: dict) -> None:
    saved_settings = _read_trainer_state(checkpoint)["settings"]
    changed = sorted(key for key in settings if json.dumps(settings[key]) != json.dumps(saved_settings.get(key)))
    if changed:
        raise CtrlkitError(f"{checkpoint} was made with different settings ({', '.join(changed)}); "
                           "rerun the same command to resume, or choose another --out")


def _training_examples(source, dataset: str, split, eval_split, holdout, limit):
    """The train and eval examples, less the held-out topics' (refused when nothing is left), and
    how many of each were held out (None without ``holdout``)."""
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
    n_held_out = ({"train": len(loaded) - len(kept), "eval": len(loaded_evaluation) - len(kept_evaluation)}
                  if holdout else None)
    return admit_examples(kept[:limit], dataset), admit_examples(kept_evaluation, dataset), n_held_out


def _parameter_counts(model, trainable) -> dict:
    """How many parameters training updates, of how many the model has (each shared tensor once;
    with an adapter, the total counts the adapter's parameters too)."""
    every = {id(parameter): parameter for parameter in [*model.model.parameters(), *trainable]}
    count = sum(parameter.numel() for parameter in {id(p): p for p in trainable}.values())
    total = sum(parameter.numel() for parameter in every.values())
    return {"trainable_parameters": count, "total_parameters": total, "trainable_share": round(count / total, 6)}


def _prefix_keys(pairs, eval_pairs, adapter) -> list[str] | None:
    """The ``control=value`` of each prefix to train, one per value the training inputs ask for
    (the soft-prefix controller), or None when they ask for none; refused in one line without
    ``--peft prefix``, or when the eval split asks for a value the training never sees."""
    keys = value_prefixes.wanted_keys([model_input for model_input, _ in pairs])
    if not keys:
        return None
    if not adapter or adapter["method"] != "prefix":
        raise ConfigurationError(f"the inputs ask for one prefix per value ({', '.join(keys)}): train them with "
                                 "--peft prefix")
    unseen = [key for key in value_prefixes.wanted_keys([model_input for model_input, _ in eval_pairs])
              if key not in keys]
    if unseen:
        raise ConfigurationError(f"the eval split asks for the prefix of {unseen[0]}, which no training example "
                                 "has: it would stay untrained")
    return keys


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
        replace_files(out_dir, model.save)
    else:
        state["bad_evals"] += 1
    return bool(patience) and state["bad_evals"] >= patience


def _resumed_state(checkpoint: Path, optimizer, scheduler) -> dict:
    """The checkpoint's training state, its optimizer's state (which holds the rate of the next
    step) and its scheduler's (its step count) loaded."""
    import torch

    state = _read_trainer_state(checkpoint)
    optimizer.load_state_dict(torch.load(checkpoint / "optimizer.pt", weights_only=True))
    scheduler.load_state_dict(torch.load(checkpoint / "scheduler.pt", weights_only=True))
    return state


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
