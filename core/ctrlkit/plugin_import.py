"""Import one plugin entry point so that nothing it does at import ends or hangs ctrlkit.

The import runs in a daemon thread: ``sys.exit()``, ``KeyboardInterrupt`` or any other
``BaseException`` raised by the plugin's own code stays in that thread, and a plugin that never
finishes importing is given up on after ``CTRLKIT_PLUGIN_TIMEOUT`` seconds (default 10) without
keeping the interpreter from exiting. A real Ctrl-C still reaches the main thread, which is only
waiting.
"""

from __future__ import annotations

import math
import os
import threading

from .errors import ConfigurationError
from .registry import describe_exception

TIMEOUT_VARIABLE = "CTRLKIT_PLUGIN_TIMEOUT"
DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 3600.0
"""The longest wait for one import that ``$CTRLKIT_PLUGIN_TIMEOUT`` may ask (an hour): beyond
``threading.TIMEOUT_MAX`` (about 9e9 s here) the wait itself overflows, and such a failure would
leave every plugin unloaded."""


class PluginImportFailed(Exception):
    """The entry point could not be imported; the message says how, in one line."""


def import_timeout() -> float:
    """Seconds one entry point may take to import, from ``$CTRLKIT_PLUGIN_TIMEOUT``."""
    text = os.environ.get(TIMEOUT_VARIABLE, "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise ConfigurationError(f"{TIMEOUT_VARIABLE} must be a positive number of seconds, not {text!r}")
    if seconds > MAX_TIMEOUT:
        raise ConfigurationError(f"{TIMEOUT_VARIABLE} must be at most {MAX_TIMEOUT:g} seconds (an hour), not {text!r}")
    return seconds


def import_entry_point(entry_point, timeout: float):
    """``entry_point.load()``, or :class:`PluginImportFailed` when it raises anything or takes
    longer than ``timeout`` seconds (the import is then left running in its daemon thread)."""
    if entry_point.pattern.match(entry_point.value) is None:
        raise PluginImportFailed(f"its entry point value {entry_point.value!r} is not 'module' or 'module:attr'")
    outcome: dict = {}

    def load():
        try:
            outcome["plugin"] = entry_point.load()
        except BaseException as exc:  # noqa: B036 - whatever the plugin raises is its failure, not ours
            outcome["error"] = exc

    worker = threading.Thread(target=load, name=f"ctrlkit-plugin-import:{entry_point.name}", daemon=True)
    worker.start()
    worker.join(min(timeout, MAX_TIMEOUT))  # a caller's larger wait would overflow the join
    if worker.is_alive():
        raise PluginImportFailed(f"import did not finish within {timeout:g} s (set {TIMEOUT_VARIABLE} to wait longer)")
    if "error" in outcome:
        raise PluginImportFailed(describe_exception(outcome["error"]))
    return outcome["plugin"]

