"""The CLI must start without importing torch, transformers, sentence-transformers or the other slow imports."""

import subprocess
import sys

HEAVY = ("torch", "transformers", "sentence_transformers", "nltk", "rouge_score", "sklearn", "scipy", "matplotlib")


def test_help_and_list_do_not_import_heavy_libraries():
    script = f"""
import sys
from click.testing import CliRunner
from ctrlkit.cli import cli
for args in (["--help"], ["list"], ["plugins"]):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
loaded = [name for name in {HEAVY!r} if name in sys.modules]
print(",".join(loaded) or "none")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "none"


def test_help_and_the_listings_do_not_import_numpy_or_the_results_modules():
    """Help and the listings describe; numpy (a tenth of a second) and the modules that score and write
    results (through them, the report and figure modules) are for the commands that do the work."""
    script = """
import sys
from click.testing import CliRunner
from ctrlkit.cli import cli
for args in (["--help"], ["list"], ["plugins"], ["run", "--help"], ["sweep", "--help"]):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
print(",".join(name for name in ("numpy", "ctrlkit.results", "ctrlkit.report") if name in sys.modules) or "none")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "none"


def test_the_sweep_command_and_a_local_sweep_do_not_import_ray(tmp_path):
    """Ray is for --executor ray only: its import alone takes seconds and starts nothing useful here."""
    script = f"""
import sys
from click.testing import CliRunner
from ctrlkit.cli import cli
for args in (["sweep", "--help"], ["sweep", "--controllers", "none,tag", "--metrics", "stas", "--limit", "2",
                                   "--bootstrap", "0", "-o", {str(tmp_path / "sweep")!r}]):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
print("ray" in sys.modules)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
    assert (tmp_path / "sweep" / "table.md").is_file()
