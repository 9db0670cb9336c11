"""Peak memory of ``ctrlkit run --limit 5``, ``run --sample 5`` and ``evaluate`` against the
number of lines of a jsonl dataset (10^4, 10^5, 10^6 by default).

Each measurement is a fresh subprocess running the command line; its peak resident memory
(``resource.getrusage(RUSAGE_SELF).ru_maxrss`` read as it exits) is reported, so the figures hold
the interpreter and its imports (about the same at every size). The examples are short news-like
lines (about 420 bytes of JSON each; 10^6 lines: 420 MB). Targets: a limited or sampled run peaks
at most 1.5 times as high at the largest size as at the smallest (datasets stream: memory bounded
by what is kept), and evaluate of every prediction (scored 10,000 at a time, its samples written
as they are scored) peaks under 500 MB at 10^6 lines, where held whole it grew by about 3.5 KB a
line (3.5 GB). Its growth per line is reported. Ratio: run --limit peak at the largest size / at
the smallest.

    python bench/dataset_memory.py [--sizes 10000,100000,1000000] [--evaluate-max 1000000] [--out bench/results.json]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from record import record  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parents[1]
WORDS = "the council voted on the new budget for the stadium and the clinic after a long debate".split()
RATIO_TARGET = 1.5
EVALUATE_TARGET_MB = 500
CHILD = """
import resource, sys
from ctrlkit.__main__ import main
report, sys.argv = sys.argv[1], ["ctrlkit", *sys.argv[2:]]
try:
    main()
except SystemExit as exit:
    if exit.code:
        raise
finally:
    with open(report, "w") as file:
        file.write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
"""


def write_data(folder: Path, n: int) -> tuple[Path, Path]:
    data, predictions = folder / f"data_{n}.jsonl", folder / f"predictions_{n}.jsonl"
    with open(data, "w") as examples, open(predictions, "w") as given:
        for i in range(n):
            document = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(60)) + f" number {i}."
            examples.write(json.dumps({"id": f"e{i}", "document": document, "references": [f"Summary {i}."],
                                       "controls": {"topic": f"t{i % 7}"}}) + "\n")
            given.write(json.dumps({"id": f"e{i}", "prediction": f"The council voted {i}."}) + "\n")
    return data, predictions


def peak_mb(arguments: list[str], folder: Path) -> tuple[float, float]:
    """Peak resident MB and wall seconds of ``ctrlkit ARGUMENTS`` in a fresh process, run in ``folder``
    (its default output folders go there, not into the checkout)."""
    report = folder / "peak.txt"
    env = dict(os.environ, HF_HUB_OFFLINE="1", CTRLKIT_CACHE_DIR=str(folder / "cache"))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, str(report), *arguments], env=env, text=True, cwd=folder,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if done.returncode:
        sys.exit(f"ctrlkit {' '.join(arguments)} failed:\n{done.stderr}")
    seconds = time.perf_counter() - start
    return int(report.read_text()) / 1024, seconds  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--evaluate-max", type=int, default=1000000,
                        help="largest size evaluate is measured at (10^6 lines take about 8 minutes)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]

    common = ["-c", "none", "-b", "extractive", "-m", "stats", "--bootstrap", "0", "--no-cache"]
    modes = {"run --limit 5": lambda data, _: ["run", "-d", "jsonl", "--data", str(data), *common, "--limit", "5"],
             "run --sample 5": lambda data, _: ["run", "-d", "jsonl", "--data", str(data), *common, "--sample", "5"],
             "evaluate": lambda data, predictions: ["evaluate", "-d", "jsonl", "--data", str(data), "--predictions",
                                                    str(predictions), "-m", "stats", "--bootstrap", "0"]}
    peaks = {mode: {} for mode in modes}
    seconds = {mode: {} for mode in modes}
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        for n in sizes:
            data, predictions = write_data(folder, n)
            for mode, arguments in modes.items():
                if mode == "evaluate" and n > args.evaluate_max:
                    continue
                peaks[mode][n], seconds[mode][n] = peak_mb(arguments(data, predictions), folder)
                print(f"{mode:<16} {n:>9,} lines  peak {peaks[mode][n]:8.1f} MB  {seconds[mode][n]:7.1f} s", flush=True)
            data.unlink()
            predictions.unlink()

    small, large = sizes[0], sizes[-1]
    ratios = {mode: values[max(values)] / values[min(values)] for mode, values in peaks.items() if values}
    measured = peaks["evaluate"]
    evaluate_met = 10 ** 6 not in measured or measured[10 ** 6] < EVALUATE_TARGET_MB
    met = ratios["run --limit 5"] <= RATIO_TARGET and ratios["run --sample 5"] <= RATIO_TARGET and evaluate_met
    per_line = ((measured[max(measured)] - measured[min(measured)]) * 1024 * 1024 / max(max(measured) - min(measured), 1)
                if measured else None)
    entry = {
        "name": "dataset_memory", "ratio": round(ratios["run --limit 5"], 4),
        "target": f"run --limit 5 and --sample 5 peak at {large:,} lines <= {RATIO_TARGET}x the peak at {small:,} "
                  f"(ratio: run --limit 5), and evaluate at 1,000,000 lines < {EVALUATE_TARGET_MB} MB",
        "met": met, "peak_mb": {mode: {str(n): round(mb, 1) for n, mb in values.items()} for mode, values in peaks.items()},
        "seconds": {mode: {str(n): round(s, 2) for n, s in values.items()} for mode, values in seconds.items()},
        "ratios": {mode: round(ratio, 3) for mode, ratio in ratios.items()},
        "evaluate_bytes_per_line": None if per_line is None else round(per_line),
        "statistic": "peak resident memory (ru_maxrss) of a fresh ctrlkit process, one measurement per size",
    }
    record(Path(args.out), entry)
    print(f"peak at {large:,} / at {small:,} lines: " + ", ".join(f"{m} {r:.2f}" for m, r in ratios.items())
          + (f"; evaluate grows by about {per_line:,.0f} bytes per line" if per_line is not None else "") + "; "
          f"limit and sample within {RATIO_TARGET}x, evaluate of 10^6 under {EVALUATE_TARGET_MB} MB: "
          f"{'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
