"""Keep the libraries ctrlkit drives (transformers, datasets, huggingface_hub,
sentence-transformers, bert-score) quiet while ctrlkit works: their progress bars ("Loading
weights") and advisory warnings would bury ctrlkit's own progress and one-line messages.

Errors stay visible: they arrive as exceptions, and each library's ERROR log lines stay on. What
was set before is restored afterwards, so a program using ctrlkit as a library keeps its own
settings. A library first imported inside the block is silenced by ``quiet_new_imports()``,
which ctrlkit calls right after each such import (their switches exist only once imported).

``ctrlkit --verbose`` (the environment variable ``CTRLKIT_VERBOSE=1``, which child processes
inherit) leaves them all as they are, and lets a runtime with a log of its own (llama.cpp) print it.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import warnings
from contextlib import contextmanager

LOGGERS = ("transformers", "datasets", "huggingface_hub", "sentence_transformers", "bert_score")
VERBOSITY_VARIABLES = ("TRANSFORMERS_VERBOSITY", "DATASETS_VERBOSITY")
"""Read by transformers and datasets when they set up their loggers, which resets the level."""
WARNING_MODULES = r"(transformers|datasets|huggingface_hub|sentence_transformers|bert_score)(\.|$)"

VERBOSE_VARIABLE = "CTRLKIT_VERBOSE"

_saved: dict | None = None  # what the outermost quiet block changed, to restore


def _progress_switches() -> dict:
    """name -> (is_enabled, enable, disable) for each loaded library whose bars can be switched.
    Ordered so that restoring huggingface_hub comes last: transformers' switch flips it too."""
    switches = {}
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        switches["transformers"] = (hf_logging.is_progress_bar_enabled, hf_logging.enable_progress_bar,
                                    hf_logging.disable_progress_bar)
    if "datasets" in sys.modules:
        from datasets import utils as datasets_utils

        switches["datasets"] = (lambda: not datasets_utils.are_progress_bars_disabled(),
                                datasets_utils.enable_progress_bars, datasets_utils.disable_progress_bars)
    if "huggingface_hub" in sys.modules:
        from huggingface_hub import utils as hub_utils

        switches["huggingface_hub"] = (lambda: not hub_utils.are_progress_bars_disabled(),
                                       hub_utils.enable_progress_bars, hub_utils.disable_progress_bars)
    return switches


def quiet_new_imports() -> None:
    """Silence the progress bars of libraries imported since the quiet block began (no-op outside one)."""
    if _saved is None:
        return
    switches = _progress_switches()
    fresh = {name: switch for name, switch in switches.items() if name not in _saved["bars"]}
    for name, (enabled, _, _) in fresh.items():
        _saved["bars"][name] = enabled()
    with warnings.catch_warnings():  # a user's HF_HUB_DISABLE_PROGRESS_BARS=0 wins, without a warning
        warnings.simplefilter("ignore")
        for _, _, disable in fresh.values():
            disable()


def verbose() -> bool:
    """Whether the user asked to see the libraries' own logs (``ctrlkit --verbose``)."""
    return os.environ.get(VERBOSE_VARIABLE, "").strip().lower() in ("1", "true", "yes")


@contextmanager
def quiet_libraries():
    """The block runs with the libraries' progress bars off and their log level at ERROR; nested
    blocks (a sweep's runs) leave it to the outermost. Under ``--verbose`` it changes nothing."""
    global _saved
    if _saved is not None or verbose():
        yield
        return
    _saved = {"bars": {}, "levels": {name: logging.getLogger(name).level for name in LOGGERS},
              "environment": {name: os.environ.get(name) for name in VERBOSITY_VARIABLES}}
    try:
        for name in LOGGERS:
            logging.getLogger(name).setLevel(logging.ERROR)
        os.environ.update(dict.fromkeys(VERBOSITY_VARIABLES, "error"))
        quiet_new_imports()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=WARNING_MODULES)
            yield
    finally:
        saved, _saved = _saved, None
        _restore(saved)


def _restore(saved: dict) -> None:
    switches = _progress_switches()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, (_, enable, disable) in switches.items():  # huggingface_hub last
            if name in saved["bars"]:
                (enable if saved["bars"][name] else disable)()
    for name, level in saved["levels"].items():
        logging.getLogger(name).setLevel(level)
    for name, value in saved["environment"].items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def quietly(function):
    """Decorator: ``function`` runs inside ``quiet_libraries()``."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with quiet_libraries():
            return function(*args, **kwargs)

    return wrapper
