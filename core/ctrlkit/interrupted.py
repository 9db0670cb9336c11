"""What a Ctrl-C ends the ``ctrlkit`` command with, wherever it lands once Python has started and
imported the (nearly empty) package: one line and the exit status of a process ended by SIGINT.
Kept apart from :mod:`ctrlkit.cli` so that the command can say it while the CLI's modules are
still importing."""

import sys

MESSAGE = "Interrupted; rerun the same command to resume."


def exit_interrupted():
    """Print :data:`MESSAGE` on stderr (on a line of its own after ``^C`` or a progress bar on a
    terminal) and exit with 130 (128 + SIGINT)."""
    start = "\n" if sys.stderr.isatty() else ""
    print(f"{start}{MESSAGE}", file=sys.stderr, flush=True)
    sys.exit(130)
