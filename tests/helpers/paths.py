"""Where things are: the checkout (``ROOT``), the shared research data beside it (``SHARED_DATA``,
``NEWTS_CSV``), and :func:`shared_file`, which skips a test when that data is absent."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"
NEWTS_CSV = SHARED_DATA / "newts" / "NEWTS_test_600.csv"


def shared_file(relative: str) -> Path:
    """A file under ../shared/data, or skip the test when the shared data is absent."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"needs the shared research data at {path} (absent on this machine)")
    return path
