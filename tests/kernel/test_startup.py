"""The CLI must start without importing torch, transformers, sentence-transformers or the other slow imports."""

import subprocess
import sys

HEAVY = ("torch", "transformers", "sentence_transformers", "nltk", "rouge_score", "sklearn", "scipy", "matplotlib")


def _loaded_by(commands: list[list[str]], modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has imported after running each of ``commands``
    through the CLI (each must succeed)."""
    script = f"""
import sys
from click.testing import CliRunner
from ctrlkit.cli import cli
for args in {commands!r}:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
print(",".join(name for name in {modules!r} if name in sys.modules))
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return [name for name in result.stdout.strip().split(",") if name]


def test_help_and_the_listings_import_no_heavy_library_numpy_or_results_module():
    """Help and the listings describe; numpy (a tenth of a second) and the modules that score and write
    results (through them, the report and figure modules) are for the commands that do the work."""
    commands = [["--help"], ["list"], ["plugins"], ["run", "--help"], ["sweep", "--help"]]
    assert _loaded_by(commands, (*HEAVY, "numpy", "ctrlkit.results", "ctrlkit.report")) == []


def test_local_runs_and_sweeps_from_the_command_line_do_not_import_ray(tmp_path):
    """Ray is for --executor ray only: its import alone takes seconds and starts nothing useful here."""
    commands = [["sweep", "--help"], ["sweep", "--controllers", "none,tag", "--metrics", "stas", "--limit", "2",
                                      "--bootstrap", "0", "-o", str(tmp_path / "sweep")],
                ["run", "--controller", "tag", "--metric", "stas", "--limit", "2", "--bootstrap", "0", "--no-cache",
                 "-o", str(tmp_path / "run")]]
    assert _loaded_by(commands, ("ray",)) == []
    assert (tmp_path / "sweep" / "table.md").is_file() and (tmp_path / "run" / "results.json").is_file()
