"""Each system's mean of each score, with a percentile bootstrap interval over the inputs: the
per-system table of a meta-evaluation (FD's Table 4 layout: a row per system, a column per score).

The rows form a grid of inputs (FD's papers) by systems, named by two dotted paths as in
:mod:`ctrlkit.analyses.meta_evaluation`. Each resample draws the inputs with replacement, the same
draws for every system and score (``numpy.random.default_rng(seed).integers(0, inputs, (resamples,
inputs))``, the indices ``scipy.stats.bootstrap`` draws for one sample); a system's resampled mean
is over the drawn inputs where it has a number. A score a system never has is left out of its row.
Each mean is taken of the scores scaled by one power of two and scaled back
(:func:`ctrlkit.analyses.meta_evaluation.scaled_exactly`), so scores near 1e308 have a finite mean.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ..bootstrap import CHUNK_CELLS, percentile_interval, row_counts
from ..errors import CtrlkitError
from .meta_evaluation import CONFIDENCE, DEFAULT_INPUT_KEY, DEFAULT_SYSTEM_KEY, key_text, lookup, scaled_exactly


def system_means(rows: Iterable[dict], paths: Sequence[str], *, input_key: str = DEFAULT_INPUT_KEY,
                 system_key: str = DEFAULT_SYSTEM_KEY, resamples: int = 1000, seed: int = 0) -> dict:
    """``{"settings": ..., "means": {system: {path: {"mean", "n", "low", "high", "se"}}}}``: the
    mean of each score over the inputs where the system has a number, ``n`` those inputs, and its
    95% interval (None with fewer than two resamples)."""
    rows = list(rows)
    inputs: dict = {}
    systems: dict = {}
    cells = []
    for number, row in enumerate(rows, 1):
        keys = lookup(row, input_key), lookup(row, system_key)
        for key, value in zip((input_key, system_key), keys):
            if value is None or isinstance(value, (dict, list, bool)):
                raise CtrlkitError(f"row {number} has no usable value at '{key}' (the input and the system of each row)")
        keys = key_text(keys[0]), key_text(keys[1])
        cells.append((inputs.setdefault(keys[0], len(inputs)), systems.setdefault(keys[1], len(systems))))
    columns = []  # (system, path, valid, scaled values, their exponent): what each mean is made of
    for path in paths:
        grid = np.full((len(inputs), len(systems)), np.nan)
        for row, (i, s) in zip(rows, cells):
            value = lookup(row, path)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                grid[i, s] = value
        for system, column in zip(systems, grid.T):
            valid = np.isfinite(column)
            if valid.any():
                unit, exponent = scaled_exactly(np.where(valid, column, 0.0))  # a sum near 1e308 overflows
                columns.append((system, path, valid, unit, exponent))
    resampled = _resampled_means(columns, len(inputs), resamples, seed)
    means: dict = {system: {} for system in systems}
    for (system, path, valid, unit, exponent), drawn in zip(columns, resampled):
        means[system][path] = _mean(valid, unit, exponent, drawn)
    settings = {"input_key": input_key, "system_key": system_key, "inputs": len(inputs), "systems": len(systems),
                "resample": "inputs", "resamples": resamples, "seed": seed, "confidence": CONFIDENCE,
                "interval": "percentile bootstrap"}
    return {"settings": settings, "means": means}


def _resampled_means(columns: list, inputs: int, resamples: int, seed: int) -> list[np.ndarray]:
    """Each column's mean on each resample of the inputs (where it has a value), drawn as
    ``scipy.stats.bootstrap`` draws them but a chunk of resamples at a time, so memory holds
    :data:`ctrlkit.bootstrap.CHUNK_CELLS` counts, not resamples x inputs."""
    rng = np.random.default_rng(seed)
    found: list[list[np.ndarray]] = [[] for _ in columns]
    done = 0
    while done < resamples:
        size = min(resamples - done, max(1, CHUNK_CELLS // max(1, inputs)))
        counts = row_counts(rng.integers(0, inputs, (size, inputs)), inputs)
        for kept, (_, _, valid, unit, _) in zip(found, columns):
            drawn = counts @ valid.astype(float)
            kept.append((counts @ unit)[drawn > 0] / drawn[drawn > 0])
        done += size
    return [np.concatenate(kept) if kept else np.zeros(0) for kept in found]


def _mean(valid: np.ndarray, unit: np.ndarray, exponent: int, resampled: np.ndarray) -> dict:
    out = {"mean": float(np.ldexp(unit.sum() / valid.sum(), exponent)), "n": int(valid.sum())}
    if len(resampled) < 2:
        return {**out, "low": None, "high": None, "se": None}
    low, high, se = (float(np.ldexp(value, exponent)) for value in percentile_interval(resampled, CONFIDENCE))
    return {**out, "low": low, "high": high, "se": se}


def means_markdown(report: dict, paths: Sequence[str]) -> list[str]:
    """The means as Markdown lines: an introduction, then a row per system and a column per score,
    each cell ``mean [low, high]`` (empty where the system has no such score)."""
    from ..markdown import escape_markdown, markdown_table

    settings = report["settings"]
    body = [[escape_markdown(str(system))] + [_cell(scores.get(path)) for path in paths]
            for system, scores in report["means"].items()]
    intro = (f"Mean of each score by system over the inputs (95% CI: {settings['resamples']} resamples of the "
             f"{settings['inputs']} inputs, seed {settings['seed']}):")
    return [intro, "", *markdown_table(["system", *(escape_markdown(path) for path in paths)], body, text_columns=1)]


def _cell(value: dict | None) -> str:
    if value is None:
        return ""
    interval = f" [{_number(value['low'])}, {_number(value['high'])}]" if value["low"] is not None else ""
    return f"{_number(value['mean'])}{interval}"


def _number(value: float) -> str:
    """Four decimals, or four significant digits beyond a million (a mean near 1e308 is not 309 digits)."""
    return f"{value:.4f}" if abs(value) < 1e6 else f"{value:.4g}"
