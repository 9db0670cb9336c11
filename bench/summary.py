"""Print the table of bench/results.json: one line per benchmark, its ratio, target and whether it was met.

    python bench/summary.py [bench/results.json]
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "bench" / "results.json"
    if not path.is_file():
        raise SystemExit(f"{path}: no results yet (run make bench)")
    entries = json.loads(path.read_text())
    width = max(len(entry["name"]) for entry in entries)
    print(f"{'benchmark':<{width}}  {'ratio':>8}  {'met':<3}  target")
    for entry in entries:
        ratio = "-" if entry["ratio"] is None else f"{entry['ratio']:g}"
        met = "-" if entry["met"] is None else "yes" if entry["met"] else "NO"  # None: figures without a target
        print(f"{entry['name']:<{width}}  {ratio:>8}  {met:<3}  {entry['target']}")
    targeted = [entry for entry in entries if entry["met"] is not None]
    missed = [entry["name"] for entry in targeted if not entry["met"]]
    print(f"{len(targeted) - len(missed)} of {len(targeted)} targets met" + (f"; not met: {', '.join(missed)}" if missed else ""))


if __name__ == "__main__":
    main()
