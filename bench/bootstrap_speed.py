"""Bootstrap intervals: 10 metric values over 10,000 examples with 1,000 resamples, the toolkit's
vectorized engine against a loop over resamples, side by side in one run.

The parts are 10 per-example values (uniform on [0, 1), seed 1; every third value missing for 10%
of the examples, as a metric that scores only some examples leaves them), each a corpus value
that is their mean (``Metric``'s default ``aggregate``).

- toolkit: ``ctrlkit.bootstrap.intervals(metric, parts, groups, 1000, seed)``: all the resamples'
  weights (in chunks of rows) through one ``aggregate`` call per chunk;
- reference: a loop over the same 1,000 resamples (the same index draws of
  ``np.random.default_rng(seed)``), each resample's parts gathered by index and given to the same
  ``aggregate`` as one row of ones; the same percentile interval and standard error at the end.

Both must agree to 1e-9 (relative). Target: reference / toolkit seconds >= 20x, toolkit < 5 s.

The drawing of the resamples (R x N random indices) is work both must do, so no exact engine can
be faster than it: the benchmark also times that draw alone (the fastest of three) and prints the ceiling it puts on the
ratio (reference seconds / draw seconds); the engine's own work (counting the draws into weights,
one matrix product) comes on top of it.

    python bench/bootstrap_speed.py [--examples 10000] [--values 10] [--resamples 1000]
"""

import argparse
import time
from pathlib import Path

import numpy as np

from record import record  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 20.0
BUDGET_S = 5.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--values", type=int, default=10)
    parser.add_argument("--resamples", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()

    from ctrlkit import Metric
    from ctrlkit.bootstrap import intervals

    rng = np.random.default_rng(1)
    parts = {f"value{k}": rng.random(args.examples) for k in range(args.values)}
    for k in range(0, args.values, 3):
        parts[f"value{k}"][rng.random(args.examples) < 0.1] = np.nan
    metric, groups = Metric(), np.arange(args.examples)

    start = time.perf_counter()
    found = intervals(metric, parts, groups, args.resamples, args.seed)
    toolkit_s = time.perf_counter() - start

    start = time.perf_counter()
    expected = _loop(metric, parts, args.resamples, args.seed)
    reference_s = time.perf_counter() - start

    draw_s = min(_draw_seconds(args.examples, args.resamples, args.seed) for _ in range(3))  # least disturbed

    agree = all(np.isclose(found[name][key], expected[name][key], rtol=1e-9, atol=0)
                for name in parts for key in ("low", "high", "se"))
    ratio = reference_s / toolkit_s
    entry = {
        "name": "bootstrap_speed", "ratio": round(ratio, 2),
        "target": f"reference / toolkit seconds >= {TARGET:g}x and toolkit < {BUDGET_S:g} s",
        "met": bool(ratio >= TARGET and toolkit_s < BUDGET_S and agree),
        "toolkit_seconds": round(toolkit_s, 4), "reference_seconds": round(reference_s, 4),
        "draw_seconds": round(draw_s, 4), "ceiling_ratio": round(reference_s / draw_s, 2),
        "examples": args.examples, "values": args.values, "resamples": args.resamples, "agree_to_1e-9": agree,
    }
    record(Path(args.out), entry)
    print(f"{args.values} values x {args.examples:,} examples x {args.resamples:,} resamples")
    print(f"toolkit (vectorized)      {toolkit_s:8.3f} s")
    print(f"reference (loop)          {reference_s:8.3f} s")
    print(f"drawing the resamples     {draw_s:8.3f} s  (shared by both: the ratio cannot exceed "
          f"{reference_s / draw_s:.1f}x)")
    print(f"agree to 1e-9: {agree}")
    print(f"reference / toolkit = {ratio:.1f}x (target >= {TARGET:g}x, toolkit < {BUDGET_S:g} s): "
          f"{'met' if entry['met'] else 'NOT met'}")


def _draw_seconds(examples: int, resamples: int, seed: int) -> float:
    start = time.perf_counter()
    np.random.default_rng(seed).integers(0, examples, (resamples, examples))
    return time.perf_counter() - start


def _loop(metric, parts, resamples: int, seed: int) -> dict:
    """The reference: one resample at a time, its parts gathered by the drawn indices."""
    n = len(next(iter(parts.values())))
    drawn = np.random.default_rng(seed).integers(0, n, (resamples, n))
    ones = np.ones((1, n))
    values = {name: [] for name in parts}
    for indices in drawn:
        row = metric.aggregate({name: array[indices] for name, array in parts.items()}, ones)
        for name in parts:
            values[name].append(row[name][0])
    summary = {}
    for name, resampled in values.items():
        resampled = np.array(resampled)
        low, high = np.percentile(resampled, [2.5, 97.5])
        summary[name] = {"low": low, "high": high, "se": np.std(resampled, ddof=1)}
    return summary


if __name__ == "__main__":
    main()
