"""Meta-evaluation: how well a metric agrees with human judgements, with intervals and p-values.

Reads rows (a samples.jsonl, or any list of dicts) and correlates a human score with each metric
score, both addressed by dotted paths (``given.human``, ``scores.rouge.rougeL``): Pearson,
Spearman and Kendall (tau-b), at three levels. The rows form a grid of inputs (the documents,
FD's papers) by systems (whose outputs were judged), named by two more dotted paths
(``given.paper``, ``given.system`` in ``ctrlkit evaluate`` output):

- ``global``: every (input, system) pair pooled into one correlation; p is scipy.stats' analytic
  two-sided p-value, as before intervals existed.
- ``summary``: per input, the correlation across its systems, averaged over the inputs whose
  correlation is defined (the others are counted, never averaged).
- ``system``: each system's mean over the inputs, correlated across systems.

Intervals are percentile bootstrap intervals (Deutsch, Dror & Roth, 2021): each resample draws
the inputs (BOOT-INPUTS), the systems (BOOT-SYSTEMS) or both (BOOT-BOTH) with replacement and
recomputes the level's correlation; every score sees the same draws. The summary- and
system-level p-value is a permutation test of "the metric is unrelated to the human scores
within each input": each permutation shuffles the metric's scores among the systems of every
input independently, keeps the human scores, and recomputes the statistic; p is two-sided,
(1 + #|permuted| >= |observed|) / (1 + #permutations). A resample or permutation whose
correlation is undefined (a constant series, fewer than three pairs) is left out and counted.
When the systems are resampled for the summary or system level and many resamples draw two
systems or fewer, one warning line says how many (:func:`warn_of_few_systems`).

Each correlation records its interval as runs and sweeps do (``low``, ``high``, ``se``; None
when fewer than two resamples are defined), and a permutation p the ``permutations`` it counted,
so that a p at its floor 1 / (1 + permutations) is printed as the bound it is
(:func:`ctrlkit.statistics_text.p_text`).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from ..bootstrap import percentile_interval, permutation_p, row_counts
from ..correlations import CORRELATIONS, correlate_arrays, correlate_weighted
from ..errors import CtrlkitError
from ..statistics_text import p_value_text

LEVELS = ("global", "summary", "system")
RESAMPLING = ("inputs", "systems", "both")
DEFAULT_INPUT_KEY = "given.paper"
DEFAULT_SYSTEM_KEY = "given.system"
DEFAULT_RESAMPLES = 1000
CONFIDENCE = 0.95
P_VALUES = {
    "global": "analytic two-sided p of the pooled correlation (scipy.stats)",
    "summary": "permutation test: metric scores shuffled among the systems within each input",
    "system": "permutation test: metric scores shuffled among the systems within each input",
}
logger = logging.getLogger("ctrlkit")
_CHUNK_CELLS = 1_000_000
"""Resamples are drawn and correlated in chunks of about this many grid (or pairwise) cells (memory)."""
GRID_CELLS = 1 << 25
"""The most cells (inputs x systems) of one score's grid: 268 MB a grid of floats."""
RESAMPLED_CELLS = 1 << 30
"""The most grid cells times resamples (time: 400 rows of their own input and system, a grid of
160,000 cells, take about 20 s at 1,000 resamples; this cap is about 7 times that)."""


def lookup(row: dict, path: str) -> Any:
    """``lookup({"a": {"b": 1}}, "a.b") == 1``, ``lookup({"a": [5, 6]}, "a.1") == 6`` (a whole
    number steps into a list); None when any step is absent."""
    value: Any = row
    for part in path.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif (isinstance(value, list) and part.isascii() and part.isdigit()
              and len(part.lstrip("0")) <= len(str(len(value)))  # 5,000 digits: no index (nor int()'s)
              and int(part) < len(value)):
            value = value[int(part)]
        else:
            return None
    return value


def numeric_paths(row: dict, prefix: str = "scores") -> list[str]:
    """Every numeric leaf under ``prefix`` (the metric values of a sample)."""
    found = []

    def walk(value, path):
        if isinstance(value, dict):
            for key, inner in value.items():
                walk(inner, f"{path}.{key}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            found.append(path)

    walk(lookup(row, prefix), prefix)
    return found


def correlate(human: Sequence[float], metric: Sequence[float]) -> dict:
    """Pearson, Spearman and Kendall correlation (with analytic p-values) of two equal-length series."""
    from scipy import stats

    if len(human) < 3:
        return {"n": len(human), "undefined": "fewer than 3 pairs"}
    if len(set(human)) < 2 or len(set(metric)) < 2:
        return {"n": len(human), "undefined": "a constant series has no correlation"}
    out: dict[str, Any] = {"n": len(human)}
    human, metric = scaled_exactly(human)[0], scaled_exactly(metric)[0]
    for name, function in zip(CORRELATIONS, (stats.pearsonr, stats.spearmanr, stats.kendalltau)):
        statistic, p_value = function(human, metric)
        out[name] = {"r": float(statistic), "p": float(p_value)}
    return out


@dataclass(frozen=True)
class Draws:
    """The resamples and permutations every score shares, drawn a chunk of resamples at a time
    (:meth:`chunks`) so that memory does not grow with resamples x inputs x systems. ``inputs``
    (resamples x inputs) and ``systems`` (resamples x systems) are the drawn grid indices (the
    identity for the side not resampled); ``permutations`` (count x inputs x systems) orders each
    input's systems. Those three properties hold every resample at once (small grids, tests)."""

    count: int
    n_inputs: int
    n_systems: int
    resample: str
    states: tuple
    """The generator's state where the inputs', the systems' and the permutations' draws start."""

    def chunks(self, size: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``(inputs, systems, permutations)`` of successive resamples, ``size`` at a time
        (default: as many as hold about :data:`_CHUNK_CELLS` grid cells); the same draws as one
        whole draw (numpy's PCG64 draws these in chunks as in one call)."""
        step = size or max(1, _CHUNK_CELLS // max(1, self.n_inputs * self.n_systems))
        inputs, systems, permutations = (_generator(state) for state in self.states)
        for start in range(0, self.count, step):
            rows = min(step, self.count - start)
            yield (_side(inputs, rows, self.n_inputs, self.resample in ("inputs", "both")),
                   _side(systems, rows, self.n_systems, self.resample in ("systems", "both")),
                   permutations.permuted(np.broadcast_to(np.arange(self.n_systems), (rows, self.n_inputs,
                                                                                      self.n_systems)), axis=-1))

    def _whole(self, index: int) -> np.ndarray:
        parts = [chunk[index] for chunk in self.chunks()]
        empty = ((0, self.n_inputs), (0, self.n_systems), (0, self.n_inputs, self.n_systems))[index]
        return np.concatenate(parts) if parts else np.zeros(empty, dtype=np.int64)

    inputs = property(lambda self: self._whole(0))
    systems = property(lambda self: self._whole(1))
    permutations = property(lambda self: self._whole(2))


def _generator(state: dict) -> np.random.Generator:
    generator = np.random.Generator(np.random.PCG64())
    generator.bit_generator.state = state
    return generator


def _side(rng: np.random.Generator, rows: int, n: int, drawn: bool) -> np.ndarray:
    return rng.integers(0, n, (rows, n)) if drawn else np.broadcast_to(np.arange(n), (rows, n))


def draw(seed: int, n_inputs: int, n_systems: int, resample: str, count: int) -> Draws:
    """From ``numpy.random.default_rng(seed)``, in this order: the inputs' indices (when
    ``resample`` is inputs or both), the systems' (systems or both), then the permutations
    (``rng.permuted`` of each input's system order). Only where each side's draws start is kept
    (the draws before it are made once and dropped); :meth:`Draws.chunks` draws them again."""
    if resample not in RESAMPLING:
        raise CtrlkitError(f"resample must be one of {', '.join(RESAMPLING)}, got '{resample}'")
    rng = np.random.default_rng(seed)
    states = [rng.bit_generator.state]
    for n, drawn in ((n_inputs, resample in ("inputs", "both")), (n_systems, resample in ("systems", "both"))):
        step = max(1, _CHUNK_CELLS // max(1, n))
        for start in range(0, count if drawn else 0, step):
            rng.integers(0, n, (min(step, count - start), n))
        states.append(rng.bit_generator.state)
    return Draws(count, n_inputs, n_systems, resample, tuple(states))


def level_statistic(level: str, name: str, human: np.ndarray, metric: np.ndarray) -> np.ndarray:
    """The ``level`` (summary or system) correlation ``name`` of grids ``human`` and ``metric``
    (... x inputs x systems, NaN where a score is missing), one per leading index; NaN where
    undefined. The global level is :func:`correlate` and :func:`global_resamples`. Computed about
    :data:`_CHUNK_CELLS` cells at a time: a few leading indices, or (summary level) a few inputs of one."""
    out = np.empty(human.shape[:-2])
    flat_h, flat_m, flat_out = human.reshape(-1, *human.shape[-2:]), metric.reshape(-1, *metric.shape[-2:]), out.reshape(-1)
    n_inputs, n_systems = human.shape[-2:]
    if level == "summary":  # Kendall compares every pair of an input's systems
        input_step = max(1, _CHUNK_CELLS // max(1, n_systems ** 2))
        step = max(1, _CHUNK_CELLS // max(1, n_inputs * n_systems ** 2))
    else:
        step = max(1, _CHUNK_CELLS // max(1, n_inputs * n_systems + n_systems ** 2))
    for start in range(0, len(flat_h), step):
        h, m = flat_h[start:start + step], flat_m[start:start + step]
        if level != "summary":
            flat_out[start:start + step] = _system_level(name, h, m)
            continue
        total, defined = np.zeros(len(h)), np.zeros(len(h))
        for first in range(0, n_inputs, input_step):
            part = np.s_[:, first:first + input_step]
            per_input = correlate_arrays(name, h[part], m[part], np.isfinite(h[part]) & np.isfinite(m[part]))
            found = np.isfinite(per_input)
            total += np.where(found, per_input, 0).sum(-1)
            defined += found.sum(-1)
        with np.errstate(invalid="ignore"):
            flat_out[start:start + step] = np.where(defined > 0, total / np.maximum(defined, 1), np.nan)
    return out


def global_resamples(name: str, human: np.ndarray, metric: np.ndarray, draws: Draws) -> np.ndarray:
    """The global correlation ``name`` of every resample of the grids (inputs x systems): the
    correlation of the resampled grids' pairs pooled, computed from how many times each pair is
    drawn (its input's count times its system's) instead of on the copies. Missing scores are
    left out."""
    return _global_chunks([name], human, metric, draws)[name]


def _global_chunks(names, human, metric, draws: Draws) -> dict[str, np.ndarray]:
    valid = (np.isfinite(human) & np.isfinite(metric)).reshape(-1)
    n_inputs, n_systems = human.shape
    found: dict[str, list] = {name: [] for name in names}
    for inputs, systems, _ in draws.chunks():
        counts = row_counts(inputs, n_inputs)[:, :, None] * row_counts(systems, n_systems)[:, None, :]
        weights = counts.reshape(len(counts), -1)[:, valid]
        for name in names:
            found[name].append(correlate_weighted(name, human.reshape(-1)[valid], metric.reshape(-1)[valid], weights))
    return {name: np.concatenate(parts) if parts else np.zeros(0) for name, parts in found.items()}


def _system_level(name, human, metric):
    valid = np.isfinite(human) & np.isfinite(metric)
    counts = valid.sum(-2)
    with np.errstate(invalid="ignore"):
        human_means = np.where(valid, human, 0).sum(-2) / counts
        metric_means = np.where(valid, metric, 0).sum(-2) / counts
    return correlate_arrays(name, human_means, metric_means, counts > 0)


def meta_evaluate(rows: Iterable[dict], human: str, scores: Sequence[str] | None = None, *,
                  levels: Sequence[str] | None = None, resample: str = "both", resamples: int = DEFAULT_RESAMPLES,
                  seed: int = 0, input_key: str | None = None, system_key: str | None = None) -> dict:
    """``{"settings": ..., "correlations": {score path: {level: correlation}}}`` of each score with
    the human score ``human``; each correlation has r, p and (``resamples`` > 0) a 95% interval.

    ``levels`` defaults to all three; summary and system levels need every row to carry an input
    and a system (``input_key``, ``system_key``; default given.paper, given.system). When the
    defaults are absent from every row and no level was asked for, only the global level is
    reported (``settings["unavailable"]`` says why) and its resamples draw rows."""
    from ..engine.settings import check_seed
    from ..uncertainty import check_resamples

    rows = list(rows)
    if not rows:
        raise CtrlkitError("meta-evaluation needs at least one row")
    check_resamples(resamples, "resamples")
    check_seed(seed)
    asked = list(dict.fromkeys(levels)) if levels else None
    for level in asked or ():
        if level not in LEVELS:
            raise CtrlkitError(f"level must be one of {', '.join(LEVELS)}, got '{level}'")
    if resample not in RESAMPLING:
        raise CtrlkitError(f"resample must be one of {', '.join(RESAMPLING)}, got '{resample}'")
    # a score may be absent from some rows (a metric scores only the rows carrying its control)
    paths = list(scores) if scores else list(dict.fromkeys(path for row in rows for path in numeric_paths(row)))
    if not paths:
        raise CtrlkitError("no metric scores found under 'scores'; name them with --score PATH")
    _refuse_non_numbers(rows, [human, *paths])
    non_finite = _non_finite(rows, [human, *paths])
    if not any(_is_number(lookup(row, human)) for row in rows):
        raise CtrlkitError(f"no row has a number at '{human}'")

    keys_given = input_key is not None or system_key is not None
    input_key, system_key = input_key or DEFAULT_INPUT_KEY, system_key or DEFAULT_SYSTEM_KEY
    settings: dict[str, Any] = {"human": human, "input_key": input_key, "system_key": system_key}
    grid = _grid(rows, input_key, system_key, required=keys_given or bool(asked and set(asked) - {"global"}))
    if grid is None:
        grid = _Grid([(index,) for index in range(len(rows))], [None], list(range(len(rows))), [None] * len(rows))
        settings.update(input_key=None, system_key=None,
                        unavailable=f"summary and system levels: no row has '{input_key}' and '{system_key}' "
                                    f"(name them with --input-key and --system-key)")
        asked, resample = ["global"], "rows"
    levels = asked or list(LEVELS)
    if non_finite:
        settings["non_finite"] = non_finite
    settings.update(levels=levels, inputs=len(grid.inputs), systems=len(grid.systems), resample=resample,
                    resamples=resamples, seed=seed, confidence=CONFIDENCE, interval="percentile bootstrap",
                    p_values={level: P_VALUES[level] for level in levels})
    refuse_a_grid_too_large(len(grid.inputs), len(grid.systems), resamples, len(rows))
    draws = draw(seed, len(grid.inputs), len(grid.systems), "inputs" if resample == "rows" else resample, resamples)
    warn_of_few_systems(draws, resample, levels)
    human_grid = scaled_exactly(grid.values(rows, human))[0]
    correlations = {}
    for path in paths:
        metric_grid = scaled_exactly(grid.values(rows, path))[0]
        correlations[path] = {level: _at_level(level, rows, human, path, human_grid, metric_grid, draws)
                              for level in levels}
    return {"settings": settings, "correlations": correlations}


def refuse_a_grid_too_large(n_inputs: int, n_systems: int, resamples: int, rows: int) -> None:
    """One line when the grid of inputs x systems is over :data:`GRID_CELLS` (each score is held
    as that dense grid: rows that each name their own input and system make it rows squared), or
    when it times the resamples is over :data:`RESAMPLED_CELLS` (the time and the draws grow with
    that product; the memory does not, as the draws come a chunk at a time)."""
    cells = n_inputs * n_systems
    grid = f"a grid of {n_inputs:,} inputs x {n_systems:,} systems ({cells:,} cells for {rows:,} rows)"
    if cells > GRID_CELLS:
        raise CtrlkitError(f"meta-eval: {grid} is over the {GRID_CELLS:,} cells one score's grid may hold: name "
                           f"fields that group the rows into fewer inputs and systems (--input-key, --system-key)")
    if cells * resamples > RESAMPLED_CELLS:
        raise CtrlkitError(f"meta-eval: {grid} x {resamples:,} resamples is {cells * resamples:,} cells, over the "
                           f"{RESAMPLED_CELLS:,} a run may resample: lower --resamples (at most "
                           f"{RESAMPLED_CELLS // cells:,} here; 0 skips the intervals and p-values), or group the "
                           f"rows into fewer inputs and systems (--input-key, --system-key)")


def warn_of_few_systems(draws: Draws, resample: str, levels: Sequence[str]) -> None:
    """One warning line saying how many resamples draw two distinct systems or fewer, when the
    systems are resampled for the summary or system level and those resamples are more than the
    share beyond one end of the interval, (1 - confidence) / 2, so that they can set that end. On
    such a resample every correlation across systems is +1, -1 (two points, however many copies)
    or undefined: FD's four systems drawn four times give two or fewer in 88 of 256 draws, a third."""
    if resample not in ("systems", "both") or not {"summary", "system"} & set(levels) or not draws.count:
        return
    few = 0
    for _, systems, _ in draws.chunks():
        distinct = 1 + np.count_nonzero(np.diff(np.sort(systems, axis=1), axis=1), axis=1)
        few += int(np.count_nonzero(distinct <= 2))
    if few > (1 - CONFIDENCE) / 2 * draws.count:
        asked = "- and ".join(level for level in ("summary", "system") if level in levels)
        logger.warning("ctrlkit: meta-eval: %d of %d BOOT-%s resamples (%.1f%%) draw two or fewer of the %d systems; "
                       "on them every correlation across systems (an input's, at the summary level; of the systems' "
                       "means, at the system level) is +1, -1 or undefined, and they spread the %s-level intervals "
                       "toward -1 and 1 (more systems, or --resample inputs, avoid it)", few, draws.count,
                       resample.upper(), 100 * few / draws.count, draws.n_systems, asked)


@dataclass(frozen=True)
class _Grid:
    inputs: list
    systems: list
    row_input: list  # the input index of each row
    row_system: list  # the system index of each row (None: rows are inputs)

    def values(self, rows: list[dict], path: str) -> np.ndarray:
        grid = np.full((len(self.inputs), len(self.systems)), np.nan)
        for row, i, s in zip(rows, self.row_input, self.row_system):
            value = lookup(row, path)
            if _is_number(value):
                grid[i, s or 0] = value
        return grid


def _grid(rows: list[dict], input_key: str, system_key: str, required: bool) -> _Grid | None:
    """The rows as a grid of inputs by systems; None when neither key is in any row and the keys
    are not ``required``. A row without a key, or two rows in one cell, is a one-line error."""
    found = [(lookup(row, input_key), lookup(row, system_key)) for row in rows]
    if not required and all(i is None and s is None for i, s in found):
        return None
    inputs: dict = {}
    systems: dict = {}
    cells: dict = {}
    for number, (key_input, key_system) in enumerate(found, 1):
        for key, value in ((input_key, key_input), (system_key, key_system)):
            if value is None or isinstance(value, (dict, list, bool)):
                raise CtrlkitError(f"row {number} has no {'usable ' if value is not None else ''}value at "
                                   f"'{key}' (name the input and system fields with --input-key and --system-key)")
        key_input, key_system = key_text(key_input), key_text(key_system)
        cell = (inputs.setdefault(key_input, len(inputs)), systems.setdefault(key_system, len(systems)))
        if cell in cells:
            raise CtrlkitError(f"rows {cells[cell]} and {number} are both input '{key_input}' of system "
                               f"'{key_system}' ('{input_key}', '{system_key}')")
        cells[cell] = number
    return _Grid(list(inputs), list(systems), [inputs[key_text(i)] for i, _ in found],
                 [systems[key_text(s)] for _, s in found])


def key_text(value) -> str:
    """An input or system as its text: the number 1 and the text "1" name one system, as an id
    does in ``evaluate`` (and as JSON, whose keys are text, would write them)."""
    return value if isinstance(value, str) else json.dumps(value)


def _at_level(level, rows, human, path, human_grid, metric_grid, draws: Draws) -> dict:
    valid = np.isfinite(human_grid) & np.isfinite(metric_grid)
    if level == "global":
        pairs = [(lookup(row, human), lookup(row, path)) for row in rows]
        kept = [(h, m) for h, m in pairs if _is_number(h) and _is_number(m)]
        result = correlate([h for h, _ in kept], [m for _, m in kept])
        result["left_out"] = len(pairs) - len(kept)
    elif level == "summary":
        per_input = correlate_arrays("pearson", human_grid, metric_grid, valid)  # undefined alike for all three
        result = {"inputs": int(np.isfinite(per_input).sum()), "undefined_inputs": int(np.isnan(per_input).sum())}
        if not result["inputs"]:
            result["undefined"] = "no input has a defined correlation across its systems"
    else:
        result = {"systems": int(valid.any(0).sum()), "inputs": int(valid.any(1).sum())}
        if np.isnan(level_statistic("system", "pearson", human_grid, metric_grid)):
            result["undefined"] = ("fewer than 3 systems" if result["systems"] < 3
                                   else "a constant series has no correlation")
    if "undefined" in result:
        return result
    if level != "global":
        for name in CORRELATIONS:
            result[name] = {"r": float(level_statistic(level, name, human_grid, metric_grid))}
    if not draws.count:
        for name in CORRELATIONS:
            result[name].setdefault("p", None)
        return result
    resampled, permuted = _resampled(level, human_grid, metric_grid, draws)
    one_draw = _one_draw(draws)
    for name in CORRELATIONS:
        result[name].update(_interval(resampled[name], one_draw))
        if level != "global":
            result[name].update(_permutation_p(result[name]["r"], permuted[name]))
    return result


def _resampled(level, human_grid, metric_grid, draws: Draws) -> tuple[dict, dict]:
    """Each correlation's value on every resample and (summary, system) every permutation,
    computed a chunk of draws at a time."""
    if level == "global":
        return _global_chunks(CORRELATIONS, human_grid, metric_grid, draws), {}
    resampled: dict[str, list] = {name: [] for name in CORRELATIONS}
    permuted: dict[str, list] = {name: [] for name in CORRELATIONS}
    for inputs, systems, permutations in draws.chunks():
        human = human_grid[inputs[:, :, None], systems[:, None, :]]
        metric = metric_grid[inputs[:, :, None], systems[:, None, :]]
        shuffled = np.take_along_axis(np.broadcast_to(metric_grid, permutations.shape), permutations, axis=-1)
        for name in CORRELATIONS:
            resampled[name].append(level_statistic(level, name, human, metric))
            permuted[name].append(level_statistic(level, name, np.broadcast_to(human_grid, shuffled.shape), shuffled))
    return ({name: np.concatenate(parts) for name, parts in resampled.items()},
            {name: np.concatenate(parts) for name, parts in permuted.items()})


def _one_draw(draws: Draws) -> bool:
    """Whether every resample draws the same grid (one input and the systems kept, say): its
    interval would have zero width, claiming a certainty nothing measured."""
    first = None
    for inputs, systems, _ in draws.chunks():
        first = first or (inputs[0].copy(), systems[0].copy())
        if not ((inputs == first[0]).all() and (systems == first[1]).all()):
            return False
    return first is not None


def _interval(values: np.ndarray, one_draw: bool = False) -> dict:
    defined = values[np.isfinite(values)]
    out: dict[str, Any] = {"undefined_resamples": int(len(values) - len(defined))}
    if one_draw:
        return {"low": None, "high": None, "se": None, **out,
                "interval_undefined": "every resample draws the same inputs and systems (one bootstrap group)"}
    if len(defined) < 2:
        return {"low": None, "high": None, "se": None, **out}
    low, high, se = percentile_interval(defined, CONFIDENCE)
    return {"low": low, "high": high, "se": se, **out}


def _permutation_p(observed: float, permuted: np.ndarray) -> dict:
    """p and the permutations it counted (those with a defined correlation), so its floor is known."""
    p, counted = permutation_p(observed, permuted, 1e-12)
    return {"p": p, "permutations": counted, "undefined_permutations": len(permuted) - counted}


def format_report(report: dict) -> str:
    """The report as text: one table per level, per score its n and each correlation's r, its
    interval (when resampled) and p as runs print it (:func:`ctrlkit.statistics_text.p_value_text`: three
    significant digits, 0.0123, 4.56e-08; ``<=0.001`` for a permutation p at its floor)."""
    settings, correlations = report["settings"], report["correlations"]
    blocks = []
    for level in settings["levels"]:
        blocks.append("\n".join([_heading(level, settings), *_table(level, correlations, settings["resamples"] > 0)]))
    return "\n\n".join(blocks)


def _heading(level: str, settings: dict) -> str:
    what = {"global": "every (input, system) pair pooled",
            "summary": "correlation across systems within each input, averaged over inputs",
            "system": "each system's mean over inputs, correlated across systems"}[level]
    counts = f"{settings['inputs']} {'rows' if settings['resample'] == 'rows' else 'inputs'}"
    if settings["resample"] != "rows":
        counts += f", {settings['systems']} systems"
    line = f"{level} level ({what}; {counts})"
    if settings["resamples"]:
        scheme = "rows" if settings["resample"] == "rows" else f"BOOT-{settings['resample'].upper()}"
        line += (f"; {int(CONFIDENCE * 100)}% CI: {settings['resamples']} {scheme} resamples, seed {settings['seed']}")
    return line + f"; p: {settings['p_values'][level]}"


def _table(level: str, correlations: dict, intervals: bool) -> list[str]:
    width = max(len("score"), *(len(path) for path in correlations))
    count = {"global": "n", "summary": "inputs", "system": "systems"}[level]
    header = "  ".join(f"{name:>8}" + (f"  {'95%CI':>17}" if intervals else "") + f"  {'p':>9}"
                       for name in CORRELATIONS)
    lines = [f"{'score':<{width}}  {count:>7}  {header}"]
    for path, levels in correlations.items():
        result = levels[level]
        n = result.get({"global": "n", "summary": "inputs", "system": "systems"}[level])
        if "undefined" in result:
            lines.append(f"{path:<{width}}  {n:>7}  undefined: {result['undefined']}")
            continue
        cells = []
        for name in CORRELATIONS:
            value = result[name]
            cell = f"{value['r']:>8.4f}"
            if intervals:
                low, high = value.get("low"), value.get("high")
                cell += f"  {f'[{low:.4f},{high:.4f}]' if None not in (low, high) else 'undefined':>17}"
            cell += f"  {p_value_text(value) if value.get('p') is not None else '-':>9}"
            cells.append(cell)
        note = f"  ({result['undefined_inputs']} inputs undefined)" if result.get("undefined_inputs") else ""
        lines.append(f"{path:<{width}}  {n:>7}  {'  '.join(cells)}{note}")
    return lines


def scaled_exactly(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``(values * 2**-e, e)``: ``values`` (any shape, NaN and infinities kept) scaled by the one
    power of two that brings their largest finite magnitude into [0.5, 1), so that sums, squares
    and means of them neither overflow (scores near 1e308) nor underflow (near 1e-300);
    ``np.ldexp(result, e)`` scales a mean back. A power of two scales exactly, so ties, means,
    correlations and agreement coefficients are those of the unscaled scores. Meta-eval, agreement
    and the per-system means all scale with this."""
    values = np.asarray(values, dtype=float)
    finite = np.abs(values[np.isfinite(values)])
    _, exponent = np.frexp(finite.max() if finite.size else 0.0)
    return np.ldexp(values, -exponent), int(exponent)


def _refuse_non_numbers(rows: list[dict], paths: Sequence[str]) -> None:
    """One line naming the row and path of a score that is not a number (text such as "0.5",
    true or false, a list or an object), or of an integer beyond the largest float (JSON allows a
    400-digit one): neither has a float to correlate, and left out it would only shrink n."""
    for number, row in enumerate(rows, 1):
        for path in paths:
            value = lookup(row, path)
            if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1024:
                raise CtrlkitError(f"row {number}: '{path}' is an integer of about {int(value.bit_length() * 0.30103)} "
                                   f"digits, beyond the largest float (about 1.8e308)")
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                shown = json.dumps(value, ensure_ascii=False)
                raise CtrlkitError(f"row {number}: '{path}' is {type(value).__name__} "
                                   f"{shown if len(shown) <= 40 else shown[:37] + '...'}, not a number")


def _non_finite(rows: list[dict], paths: Sequence[str]) -> dict[str, int]:
    """How many NaN or infinite values each path holds (JSON as Python reads it allows ``NaN`` and
    ``Infinity``). They are no score: left out of every correlation as a missing score is, and
    said in one warning line, as ``run`` says of the NaN it replaces with null in data."""
    counts = {}
    for path in dict.fromkeys(paths):
        found = sum(1 for row in rows if isinstance(value := lookup(row, path), float) and not math.isfinite(value))
        if found:
            counts[path] = found
    if counts:
        logger.warning("ctrlkit: meta-eval: left out %d NaN or infinite score(s), as missing (in %s)",
                       sum(counts.values()), ", ".join(f"{path}: {n}" for path, n in counts.items()))
    return counts


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
