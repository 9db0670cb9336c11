"""``ctrlkit`` commands run from a test: :func:`run_ctrlkit` in a fresh process, :func:`invoke_ctrlkit`
in this one."""

import logging
import os
import subprocess
import sys
import warnings

import pytest


def run_ctrlkit(*args, env=None, cwd=None):
    """``python -m ctrlkit ARGS`` in a fresh process (plugin loading happens once per process)."""
    return subprocess.run(
        [sys.executable, "-m", "ctrlkit", *args],
        capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd, timeout=300,
    )


def invoke_ctrlkit(*args, env=None, cwd=None):
    """``ctrlkit ARGS`` in this process, for a test of what a command does rather than of a fresh
    process (``run_ctrlkit``, whose every start imports scikit-learn, SciPy and NLTK anew: 2-4 s
    here). Returns what ``run_ctrlkit`` returns (exit status, stdout, stderr), with the environment
    variables ``env`` and the working folder ``cwd`` for this call only. Its stderr holds what a
    fresh process prints: log records through logging's last resort (pytest's capture set aside),
    warnings under Python's default filters. An exception the command lets through is raised."""
    from click.testing import CliRunner

    from ctrlkit.cli import cli

    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        for name, value in (env or {}).items():
            patch.setenv(name, str(value))
        if cwd is not None:
            patch.chdir(cwd)
        patch.setattr(logging.getLogger(), "handlers", [])
        warnings.resetwarnings()
        for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
            warnings.simplefilter("ignore", category)
        warnings.showwarning = _warning_to_stderr  # not to pytest's record of them
        result = CliRunner().invoke(cli, [str(arg) for arg in args], prog_name="ctrlkit")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return subprocess.CompletedProcess(["ctrlkit", *map(str, args)], result.exit_code, result.stdout, result.stderr)


def _warning_to_stderr(message, category, filename, lineno, file=None, line=None):
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))
