import subprocess
import sys

import ctrlkit

from helpers import ROOT


def test_compare_controllers_prints_the_table_of_the_library_runs():
    result = subprocess.run([sys.executable, str(ROOT / "examples" / "compare_controllers.py")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[1:]}
    assert list(rows) == ["none", "prepend", "tag", "prepend+tag"]
    tag = ctrlkit.run(controller="tag", metrics=["stas"], baseline=None).metrics["stas"]["stas"]
    assert rows["tag"][0] == f"{tag:.4f}"
