"""The results file every benchmark writes its entry into (``bench/results.json``)."""

import json
import os
import platform
from datetime import datetime, timezone
from pathlib import Path


def record(path: Path, entry: dict) -> None:
    """Replace this benchmark's entry in the results file, keeping the others'.

    Each entry carries where and when it was measured: figures from different machines or
    commits are not comparable."""
    from ctrlkit.results import versions

    entry = {**entry, "measured": {
        "at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "cpus": os.cpu_count(),
        "machine": platform.machine(), "versions": versions(),
    }}
    entries = json.loads(path.read_text()) if path.is_file() else []
    entries = [e for e in entries if e["name"] != entry["name"]] + [entry]
    path.write_text(json.dumps(entries, indent=2) + "\n")
