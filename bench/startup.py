"""Start-up time of the ctrlkit command line against importing transformers, side by side in one run.

Each command runs as a fresh subprocess (the venv's ``ctrlkit`` entry point next to
sys.executable, and ``python -c "import transformers"``); rounds are interleaved so drift hits all
alike, and the median wall time over rounds is reported. Targets: ``ctrlkit --help`` and
``ctrlkit list`` each under 0.5 s. Ratio: ctrlkit list time / import transformers time.

    python bench/startup.py [--rounds 7] [--out bench/results.json]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from record import record  # bench/ is the script's folder, first on sys.path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()

    ctrlkit = Path(sys.executable).parent / "ctrlkit"
    if not ctrlkit.exists():
        sys.exit(f"no ctrlkit entry point next to {sys.executable}")
    commands = {
        "ctrlkit --help": [str(ctrlkit), "--help"],
        "ctrlkit list": [str(ctrlkit), "list"],
        "import transformers": [sys.executable, "-c", "import transformers"],
    }
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    for command in commands.values():  # warm the file cache once
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    seconds = {name: [] for name in commands}
    for _ in range(args.rounds):
        for name, command in commands.items():
            start = time.perf_counter()
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
            seconds[name].append(time.perf_counter() - start)

    median = {name: statistics.median(values) for name, values in seconds.items()}
    ratio = median["ctrlkit list"] / median["import transformers"]
    met = median["ctrlkit --help"] < TARGET and median["ctrlkit list"] < TARGET
    entry = {
        "name": "startup", "ratio": round(ratio, 4),
        "target": f"ctrlkit --help and ctrlkit list each < {TARGET} s (ratio: ctrlkit list / import transformers)",
        "met": met, "seconds": {k: round(v, 4) for k, v in median.items()},
        "rounds": args.rounds, "statistic": "median wall time of a fresh subprocess",
    }
    record(Path(args.out), entry)
    print(f"{'command':<20} {'median s':>9}")
    for name in commands:
        print(f"{name:<20} {median[name]:>9.3f}")
    print(f"ctrlkit list / import transformers = {ratio:.3f}; both ctrlkit commands < {TARGET} s: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
