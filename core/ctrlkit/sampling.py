"""``--sample N``: N examples drawn at random, reproducibly from the seed.

CCSBench analysed 300 random test examples; ``--limit`` takes the first N, which in a file sorted
by source or length is not a random sample.
"""

from __future__ import annotations

import random
from typing import Sequence

from .errors import OptionError
from .types import Example


def sample_rng(seed: int) -> random.Random:
    """The generator of the draw: ``random.Random("ctrlkit-sample:SEED")``. A string seed is hashed
    with SHA-512 (stable across Python versions), so the draw is its own stream, unrelated to the
    ``random.Random(seed)`` that picks the changed values: the same seed and data give the same
    examples whatever else is analysed, and drawing them moves no other random choice."""
    return random.Random(f"ctrlkit-sample:{seed}")


def check_sample(sample: int | None, limit: int | None) -> None:
    """``sample`` is None or a whole number of at least 1, and not given with ``limit``."""
    if sample is None:
        return
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 1:
        raise OptionError(f"sample must be a whole number of at least 1, got {sample!r}")
    if limit is not None:
        raise OptionError("sample and limit cannot be given together: sample draws N random examples, "
                          "limit takes the first N")


def draw_sample(examples: Sequence[Example], size: int, seed: int, dataset: str) -> list[Example]:
    """``size`` of ``examples`` drawn without replacement by ``sample_rng(seed)``, kept in the
    data's order; more than there are is refused (a clamped draw would silently be every example)."""
    return [examples[index] for index in sample_indices(len(examples), size, seed, dataset)]


def sample_indices(count: int, size: int, seed: int, dataset: str) -> list[int]:
    """The positions, in order, of the ``size`` examples :func:`draw_sample` draws from ``count``:
    what a run that streams its data keeps, having counted the examples in a first pass (the same
    draw as from the whole list, holding only the drawn ones)."""
    if size > count:
        raise OptionError(f"sample {size} is more than the {count} usable examples of dataset '{dataset}'")
    return sorted(sample_rng(seed).sample(range(count), size))
