"""Learning-rate schedules of ``ctrlkit train``: the multiplier of the base learning rate at each
optimizer step, for ``torch.optim.lr_scheduler.LambdaLR``.

Step ``s`` counts optimizer steps from 0, so the first step runs at ``multiplier(0)``. With ``W``
warmup steps and ``T`` steps in all, the rate rises linearly as ``s / W`` while ``s < W``, then
stays at 1 (``constant``), or falls as ``(T - s) / (T - W)`` (``linear``) or as
``(1 + cos(pi (s - W) / (T - W))) / 2`` (``cosine``): the formulas of transformers'
``get_constant_schedule_with_warmup``, ``get_linear_schedule_with_warmup`` and
``get_cosine_schedule_with_warmup``, so a paper's Trainer settings give the same rates. The decay
reaches 0 after the last step (``s = T``), so that the last step still learns; with warmup, the
first step runs at 0. A warmup ratio ``R`` gives ``W = ceil(R T)`` steps, as the Trainer counts.
"""

from __future__ import annotations

import math
from typing import Callable

from ..errors import ConfigurationError

SCHEDULES = ("constant", "linear", "cosine")


def check_schedule(schedule: str, warmup_steps: int | None, warmup_ratio: float | None) -> None:
    """Refuse, in one line, an unknown schedule, a negative warmup, a ratio outside [0, 1) or both."""
    if schedule not in SCHEDULES:
        raise ConfigurationError(f"schedule must be one of {', '.join(SCHEDULES)}, not {schedule!r}")
    if warmup_steps is not None and warmup_ratio is not None:
        raise ConfigurationError("give the warmup as warmup_steps or as warmup_ratio, not both")
    if warmup_steps is not None and (isinstance(warmup_steps, bool) or not isinstance(warmup_steps, int)
                                     or warmup_steps < 0):
        raise ConfigurationError(f"warmup_steps must be a whole number, 0 or more, not {warmup_steps!r}")
    if warmup_ratio is not None and (isinstance(warmup_ratio, bool) or not isinstance(warmup_ratio, (int, float))
                                     or not 0 <= warmup_ratio < 1):  # NaN fails the comparison
        raise ConfigurationError(f"warmup_ratio must be a number in [0, 1), not {warmup_ratio!r}")


def warmup_of(total: int, warmup_steps: int | None, warmup_ratio: float | None) -> int:
    """The warmup in optimizer steps, of ``total``; refused in one line when it leaves no step after it."""
    warmup = warmup_steps if warmup_steps is not None else math.ceil((warmup_ratio or 0) * total)
    if warmup and warmup >= total:
        given = f"warmup_steps {warmup_steps}" if warmup_steps is not None else f"warmup_ratio {warmup_ratio}"
        raise ConfigurationError(f"{given} gives {warmup} warmup steps, but the training takes {total} optimizer "
                                 "steps: the warmup must end before the last step")
    return warmup


def multiplier(schedule: str, total: int, warmup: int) -> Callable[[int], float]:
    """The base learning rate's multiplier at optimizer step ``s`` (from 0) of ``total``."""
    def at(step: int) -> float:
        if step < warmup:
            return step / warmup
        if schedule == "constant":
            return 1.0
        progress = (step - warmup) / max(1, total - warmup)
        if schedule == "linear":
            return max(0.0, 1.0 - progress)
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))

    return at
