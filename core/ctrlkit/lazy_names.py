"""Names of a module that load on first use, from the module each lives in: the package's own
(``ctrlkit.run``) and :mod:`ctrlkit.plugin_api`'s, so that importing either costs milliseconds."""

from __future__ import annotations

import importlib
import sys
from typing import Callable, Mapping, Sequence


def lazy_names(module: str, homes: Mapping[str, Sequence[str]]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for ``module``: each name of ``homes`` (``{"text": ("sentences",)}``,
    the homes under the ``ctrlkit`` package) is imported from its home when first asked for, then
    kept in the module like any other name."""
    home_of = {name: home for home, names in homes.items() for name in names}
    namespace = vars(sys.modules[module])

    def __getattr__(name):
        home = home_of.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"ctrlkit.{home}"), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(home_of))

    return __getattr__, __dir__
