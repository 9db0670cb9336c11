"""The plugin manager: built-in plugin modules plus every entry point in the group ``ctrlkit``.

Plugins load once, lazily, each entry point on its own, so one broken plugin is reported and
the rest keep working. Environment:

- ``CTRLKIT_LOAD_PLUGINS``: comma-separated entry point or distribution names to load
  (empty: load none); unset loads all.
- ``CTRLKIT_STRICT_PLUGINS=1``: a plugin that fails to load is an error, not a warning.
"""

from __future__ import annotations

import importlib
import logging
import os
from importlib.metadata import Distribution, entry_points

import pluggy

from . import hookspecs
from .errors import PluginLoadError
from .registry import Registry

logger = logging.getLogger("ctrlkit")

GROUP = "ctrlkit"
DEFAULT_PLUGINS = ("ctrlkit.backbones", "ctrlkit.vectorizers")

# registry kind -> (hook name, singular noun for messages)
KINDS = {
    "controllers": ("register_controllers", "controller"),
    "metrics": ("register_metrics", "metric"),
    "datasets": ("register_datasets", "dataset"),
    "backbones": ("register_backbones", "backbone"),
    "vectorizers": ("register_topic_vectorizers", "vectorizer"),
}

pm = pluggy.PluginManager(GROUP)
pm.add_hookspecs(hookspecs)

_loaded = False
failures: dict[str, str] = {}
"""Entry point name -> the error it raised on import."""
distributions: dict[str, Distribution] = {}
"""Entry point name -> the distribution that provides it."""


def load_plugins() -> None:
    """Register the built-ins and the installed plugins; later calls do nothing."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module_name in DEFAULT_PLUGINS:
        _register_checked(importlib.import_module(module_name), module_name)
    selected = os.environ.get("CTRLKIT_LOAD_PLUGINS")
    wanted = None if selected is None else {name.strip() for name in selected.split(",") if name.strip()}
    strict = os.environ.get("CTRLKIT_STRICT_PLUGINS", "") not in ("", "0")
    available = set()
    for entry_point in entry_points(group=GROUP):
        dist_name = entry_point.dist.name if entry_point.dist else ""
        available |= {entry_point.name, dist_name} - {""}
        if wanted is not None and not {entry_point.name, dist_name} & wanted:
            continue
        # two distributions may pick the same entry point name; neither may hide the other
        name = entry_point.name if pm.get_plugin(entry_point.name) is None else f"{dist_name}:{entry_point.name}"
        try:
            _register_checked(entry_point.load(), name)
        except Exception as exc:  # any import-time failure of third-party code
            error = f"{type(exc).__name__}: {exc}"
            if strict:
                raise PluginLoadError(f"Plugin '{name}' failed to load: {error}") from exc
            failures[name] = error
            logger.warning("ctrlkit: plugin '%s' failed to load (%s); continuing without it", name, error)
            continue
        if entry_point.dist is not None:
            distributions[name] = entry_point.dist
    for name in sorted((wanted or set()) - available):
        logger.warning("ctrlkit: CTRLKIT_LOAD_PLUGINS names '%s', which is not installed (installed: %s)",
                       name, ", ".join(sorted(available)) or "none")


def _register_checked(plugin, name: str) -> None:
    """Register ``plugin``; unregister it again when a hook it implements is not a ctrlkit hook."""
    pm.register(plugin, name=name)
    try:
        pm.check_pending()
    except Exception:
        pm.unregister(plugin)
        raise


def get_registry(kind: str) -> Registry:
    """Build the registry of ``kind`` ("controllers", "metrics", ...) from every plugin's hook."""
    load_plugins()
    hook_name, noun = KINDS[kind]
    registry = Registry(noun)
    for impl in getattr(pm.hook, hook_name).get_hookimpls():
        dist = distributions.get(impl.plugin_name)

        def register(name, factory, _plugin=dist.name if dist else impl.plugin_name):
            registry.register(name, factory, plugin=_plugin)

        impl.function(**({"register": register} if "register" in impl.argnames else {}))
    return registry


def plugin_report(include_builtins: bool = False) -> list[dict]:
    """Name, version and hooks of each loaded plugin distribution, and the ones that failed."""
    load_plugins()
    rows = []
    for plugin in pm.get_plugins():
        name = pm.get_name(plugin)
        if name in DEFAULT_PLUGINS and not include_builtins:
            continue
        row = {"name": name}
        dist = distributions.get(name)
        if dist is not None:
            row["name"] = dist.name
            row["version"] = dist.version
        row["hooks"] = sorted(caller.name for caller in pm.get_hookcallers(plugin) or [])
        rows.append(row)
    rows.extend({"name": name, "error": error} for name, error in sorted(failures.items()))
    return sorted(rows, key=lambda row: row["name"])


def plugin_versions() -> dict[str, str]:
    """Distribution name -> version of each loaded plugin, for results files."""
    load_plugins()
    return {dist.name: dist.version for dist in distributions.values()}
