"""What a training run is asked to do, declared once: :class:`TrainSettings`, whose fields are
the keywords of :func:`ctrlkit.train`, the options of ``ctrlkit train`` and, where recorded, the
settings a checkpoint is resumed with and training.json records."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ..engine.settings import RunSettings, Settings, check_counts, check_seed, setting
from ..errors import ConfigurationError
from ..topic_selection import topic_names
from .schedules import check_schedule


@dataclass(frozen=True, kw_only=True)
class TrainSettings(Settings):
    """The settings of one training run. Made with wrong values it raises a ConfigurationError (or
    an OptionError) naming the setting, before any work."""

    backbone: str = setting(help="Trainable backbone and its base model: hf:PATH_OR_HUB_ID.")
    controller: str = setting("none", "Controller applied to every input.")
    dataset: str = setting("sample", RunSettings.help("dataset"))
    data: str | None = setting(None, RunSettings.help("data"))
    split: str | None = setting(None, "Split to train on [default: train; all of a file that is itself one split, "
                                      "such as MACSum's val.json, or of a dataset without splits].")
    eval_split: str | None = setting(None, "Split scored after each epoch; the best model is kept.")
    topics: str | None = setting(None, RunSettings.help("topics"))
    holdout_topics: Sequence[str] | str | None = setting(
        None, "Leave out of training (and of --eval-split) every example whose topic or topic_id is one of these "
              "(comma-separated); recorded with the model, for zero-shot evaluation (run --only-topics).")
    options: Mapping[str, Mapping[str, Any]] | None = setting(None, RunSettings.help("options"), recorded=False)
    epochs: int = setting(1, "Passes over the training pairs.")
    max_steps: int = setting(0, "Stop after this many optimizer steps (0: run all epochs).")
    lr: float = setting(5e-5, "AdamW learning rate (the peak one, with --schedule linear or cosine).")
    schedule: str = setting("constant", "Learning rate after the warmup: constant, or a linear or cosine decay to 0 "
                                        "at the end of the last optimizer step (max_steps, or epochs x steps per "
                                        "epoch).")
    warmup_steps: int | None = setting(None, "Raise the learning rate linearly from 0 to --lr over the first N "
                                             "optimizer steps, before any --schedule (default: no warmup).")
    warmup_ratio: float | None = setting(None, "The warmup as a fraction in [0, 1) of all optimizer steps, rounded "
                                               "up; not with --warmup-steps.")
    weight_decay: float = setting(0.01, "AdamW's decoupled weight decay (the default is torch's: a training.json "
                                        "that records no weight_decay was trained with it).")
    max_grad_norm: float = setting(0.0, "Clip the gradients' global norm to this before each optimizer step "
                                        "(0: no clipping).")
    bf16: bool = setting(False, "Run the forward pass and loss under bfloat16 autocast, the weights and optimizer "
                                "staying float32 (CUDA with bfloat16 only).")
    batch_size: int = setting(8, "Training pairs per batch.")
    grad_accum: int = setting(1, "Batches per optimizer step.")
    patience: int = setting(0, "Stop after this many evaluations without improvement (0: never).")
    max_target_tokens: int = setting(128, "Reference tokens the loss reads; longer references are cut.")
    limit: int | None = setting(None, "Train on the first N examples only.")
    seed: int = setting(0, "Random seed (the order of the batches, the controller's fitting).")
    out: str = setting(help="Folder for the trained model; run it with --backbone hf:OUT. Rerun to resume.",
                       recorded=False)
    save_every: int = setting(0, "Checkpoint every N steps (always at each epoch's end).", recorded=False)
    # refusing examples that lack a control changes nothing trained, so a resumed run may differ in it
    strict_controls: bool = setting(False, RunSettings.help("strict_controls"), recorded=False)
    peft: str | None = setting(None, "Train an adapter (peft) instead of the whole model: LoRA or prefix tuning; the "
                                     "output folder holds the adapter and names the base model.", recorded=False)
    lora_rank: int | None = setting(None, "LoRA rank [default: 8].", recorded=False)
    lora_alpha: float | None = setting(None, "LoRA scale alpha (the update is scaled by alpha/rank) [default: 16].",
                                       recorded=False)
    lora_dropout: float | None = setting(None, "Dropout on LoRA's input [default: 0.05].", recorded=False)
    lora_targets: Sequence[str] | str | None = setting(
        None, "Modules LoRA adapts, e.g. q_proj,v_proj [default: those peft knows for the architecture].",
        recorded=False)
    prefix_length: int | None = setting(None, "Virtual tokens of prefix tuning [default: 20].", recorded=False)
    lorahub_budget: int | None = setting(None, "With --set hf.combine=lorahub: how many weightings the search "
                                               "tries [default: 40].", recorded=False)
    lorahub_l1: float | None = setting(None, "With --set hf.combine=lorahub: the weight of the mean absolute merge "
                                             "weight in what the search lowers [default: 0.05].", recorded=False)
    progress: bool = setting(False, RunSettings.help("progress"), recorded=False)

    def __post_init__(self) -> None:
        if min(self.epochs, self.batch_size, self.grad_accum) < 1 or not 0 < self.lr < float("inf"):  # NaN too
            raise ConfigurationError("epochs, batch size and gradient accumulation must be at least 1, "
                                     "lr a finite number above 0")
        for name in ("weight_decay", "max_grad_norm"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:  # NaN too
                raise ConfigurationError(f"{name} must be a finite number, 0 or more, not {value!r}")
        if not isinstance(self.bf16, bool):
            raise ConfigurationError(f"bf16 must be True or False, not {self.bf16!r}")
        if self.lorahub_budget is not None and (isinstance(self.lorahub_budget, bool)
                                                or not isinstance(self.lorahub_budget, int) or self.lorahub_budget < 1):
            raise ConfigurationError(f"lorahub_budget must be a whole number of at least 1, not {self.lorahub_budget!r}")
        if self.lorahub_l1 is not None and (isinstance(self.lorahub_l1, bool) or not isinstance(self.lorahub_l1, (int, float))
                                            or not 0 <= self.lorahub_l1 < math.inf):
            raise ConfigurationError(f"lorahub_l1 must be a finite number, 0 or more, not {self.lorahub_l1!r}")
        check_schedule(self.schedule, self.warmup_steps, self.warmup_ratio)
        check_counts(limit=self.limit)
        check_seed(self.seed)
        object.__setattr__(self, "holdout_topics", topic_names(self.holdout_topics, "holdout_topics"))
