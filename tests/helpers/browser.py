"""A real browser for the tests of what a report page does: headless chromium at ``CHROMIUM``
(absent: the tests that need it skip), run by :func:`chromium` with a fresh profile each time."""

import subprocess
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")


def chromium(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess:
    """``chromium --headless ARGUMENTS`` with a new profile folder under ``tmp_path``; asserts it succeeded."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    result = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", *arguments],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result
