"""The results file every benchmark writes its entry into (``bench/results.json``)."""

import json
from pathlib import Path


def record(path: Path, entry: dict) -> None:
    """Replace this benchmark's entry in the results file, keeping the others'."""
    entries = json.loads(path.read_text()) if path.is_file() else []
    entries = [e for e in entries if e["name"] != entry["name"]] + [entry]
    path.write_text(json.dumps(entries, indent=2) + "\n")
