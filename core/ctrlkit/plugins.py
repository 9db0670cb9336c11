"""The plugin manager: built-in plugin modules plus every entry point in the group ``ctrlkit``.

Plugins load once, lazily, each entry point on its own, and each hook implementation is called
on its own, so one broken plugin is reported (one warning line on stderr, and its ``error`` in
``ctrlkit plugins``) and the rest keep working. Environment:

- ``CTRLKIT_LOAD_PLUGINS``: comma-separated entry point or distribution names to load
  (empty: load none); unset loads all.
- ``CTRLKIT_STRICT_PLUGINS=1``: a plugin that fails to load, or whose hook fails, is an error,
  not a warning.
- ``CTRLKIT_PLUGIN_TIMEOUT``: seconds one entry point may take to import (default 10).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import os
import re
from importlib import metadata
from importlib.metadata import Distribution

import pluggy

from . import hookspecs
from .errors import CtrlkitError, PluginLoadError
from .plugin_import import PluginImportFailed, import_entry_point, import_timeout
from .registry import Registry, describe_exception

logger = logging.getLogger("ctrlkit")

GROUP = "ctrlkit"
DEFAULT_PLUGINS = ("ctrlkit.backbones", "ctrlkit.vectorizers", "ctrlkit.executors")

# registry kind -> (hook name, singular noun for messages)
KINDS = {
    "controllers": ("register_controllers", "controller"),
    "metrics": ("register_metrics", "metric"),
    "datasets": ("register_datasets", "dataset"),
    "backbones": ("register_backbones", "backbone"),
    "vectorizers": ("register_topic_vectorizers", "vectorizer"),
    "executors": ("register_executors", "executor"),
}

pm = pluggy.PluginManager(GROUP)
pm.add_hookspecs(hookspecs)

_loaded = False
failures: dict[str, str] = {}
"""Entry point name -> the error it raised on import."""
problems: dict[str, list[str]] = {}
"""Plugin name -> what went wrong after it loaded: a hook that raised, a registration refused."""
distributions: dict[str, Distribution] = {}
"""Entry point name -> the distribution that provides it."""


def _strict() -> bool:
    return os.environ.get("CTRLKIT_STRICT_PLUGINS", "") not in ("", "0")


def load_plugins() -> None:
    """Register the built-ins and the installed plugins; later calls do nothing."""
    global _loaded
    if _loaded:
        return
    timeout = import_timeout()
    _loaded = True
    for module_name in DEFAULT_PLUGINS:
        _register_checked(importlib.import_module(module_name), module_name)
    selected = os.environ.get("CTRLKIT_LOAD_PLUGINS")
    wanted = None if selected is None else {name.strip() for name in selected.split(",") if name.strip()}
    strict = _strict()
    available = set()
    for entry_point in _entry_points():
        dist_name = (entry_point.dist.name if entry_point.dist else "") or ""
        available |= {entry_point.name, dist_name} - {""}
        if wanted is not None and not {entry_point.name, dist_name} & wanted:
            continue
        # two distributions may pick the same entry point name; neither may hide the other
        name = entry_point.name if pm.get_plugin(entry_point.name) is None else f"{dist_name}:{entry_point.name}"
        try:
            _register_checked(import_entry_point(entry_point, timeout), name)
        except KeyboardInterrupt:  # the user's Ctrl-C while waiting; the plugin's own stays in its thread
            raise
        except BaseException as exc:  # noqa: B036 - any failure of third-party code, SystemExit included
            error = str(exc) if isinstance(exc, PluginImportFailed) else describe_exception(exc)
            if strict:
                raise PluginLoadError(f"Plugin '{name}' failed to load: {error}") from None
            failures[name] = error
            logger.warning("ctrlkit: plugin '%s' failed to load (%s); continuing without it", name, error)
            continue
        if dist_name:  # a distribution whose metadata has no Name is known by its entry point
            distributions[name] = entry_point.dist
    for name in sorted((wanted or set()) - available):
        logger.warning("ctrlkit: CTRLKIT_LOAD_PLUGINS names '%s', which is not installed (installed: %s)",
                       name, ", ".join(sorted(available)) or "none")


def _entry_points() -> list:
    """The group's entry points, read one distribution at a time, so that a distribution whose
    entry points or metadata cannot be read is reported and the others still load. Of two
    distributions of one name with entry points in the group, the first on ``sys.path`` wins, as in
    ``importlib.metadata``. Only those are read for their name: reading every installed
    distribution's metadata took a tenth of a second of each command's start."""
    seen, found = set(), []
    for dist in metadata.distributions():
        try:
            entry_points = dist.entry_points.select(group=GROUP)
            if not entry_points:
                continue
            key = re.sub(r"[-_.]+", "_", dist.name or "").lower()
            if key and key in seen:
                continue
            seen.add(key)
            found.extend(entry_points)
        except Exception as exc:  # e.g. an entry_points.txt or METADATA that is not UTF-8
            label = _name_or_folder(dist)
            error = f"metadata cannot be read: {describe_exception(exc)}"
            if _strict():
                raise PluginLoadError(f"Plugin '{label}' failed to load: {error}") from None
            failures[label] = error
            logger.warning("ctrlkit: plugin '%s' failed to load (%s); continuing without it", label, error)
    return found


def _name_or_folder(dist) -> str:
    """A distribution's name for a message, else its folder when its metadata cannot say."""
    folder = str(getattr(dist, "_path", "a distribution"))
    try:
        return dist.name or folder
    except Exception:
        return folder


def _register_checked(plugin, name: str) -> None:
    """Register ``plugin``; unregister it again when a hook it implements is not a ctrlkit hook."""
    if pm.is_registered(plugin):  # two entry points naming one module
        raise PluginImportFailed(f"it is the same object as plugin '{pm.get_name(plugin)}', which is loaded")
    pm.register(plugin, name=name)
    try:
        pm.check_pending()
    except Exception:
        pm.unregister(plugin)
        raise


def _label(plugin_name: str) -> str:
    """The name users know a plugin by: its distribution's, else its entry point's."""
    dist = distributions.get(plugin_name)
    return dist.name if dist is not None else plugin_name


def _report_problem(plugin_name: str, problem: str) -> None:
    """A loaded plugin did something wrong: warn once (or raise under CTRLKIT_STRICT_PLUGINS=1)."""
    if _strict():
        raise PluginLoadError(f"Plugin '{_label(plugin_name)}': {problem}")
    seen = problems.setdefault(plugin_name, [])
    if problem not in seen:
        seen.append(problem)
        logger.warning("ctrlkit: plugin '%s': %s", _label(plugin_name), problem)


def _call_hook(impl, hook_name: str, **arguments) -> bool:
    """Call one plugin's implementation of ``hook_name``; False (and reported) when it failed.

    Whatever the plugin raises, ``SystemExit`` and ``KeyboardInterrupt`` included, is its
    failure: a hook runs for microseconds, so a Ctrl-C is far likelier to be the plugin's own."""
    try:
        result = impl.function(**{key: value for key, value in arguments.items() if key in impl.argnames})
    except BaseException as exc:  # noqa: B036 - see the docstring
        _report_problem(impl.plugin_name, f"{hook_name} raised {describe_exception(exc)}; what it "
                                          "registered is left out")
        return False
    if inspect.isgenerator(result) or inspect.iscoroutine(result):
        result.close()
        _report_problem(impl.plugin_name, f"{hook_name} is a {type(result).__name__} function, so its body "
                                          "never ran; a hook must be a plain function")
        return False
    return True


def get_registry(kind: str) -> Registry:
    """Build the registry of ``kind`` ("controllers", "metrics", ...) from every plugin's hook.

    A hook's registrations count only when it returns normally; a registration that cannot work
    is reported with the plugin and the name, and the other names keep working."""
    load_plugins()
    hook_name, noun = KINDS[kind]
    registry = Registry(noun)
    for impl in getattr(pm.hook, hook_name).get_hookimpls():
        staged = []
        if not _call_hook(impl, hook_name, register=lambda name, factory: staged.append((name, factory))):
            continue
        for name, factory in staged:
            try:
                registry.register(name, factory, plugin=_label(impl.plugin_name))
            except CtrlkitError as exc:
                _report_problem(impl.plugin_name, str(exc))
    return registry


def add_plugin_commands(group) -> None:
    """Let each plugin add commands to the click ``group``. A command that would replace one the
    group already has (ctrlkit's own, or an earlier plugin's) is put back and reported; a hook
    that raises adds nothing."""
    load_plugins()
    for impl in pm.hook.register_commands.get_hookimpls():
        before = dict(group.commands)
        succeeded = _call_hook(impl, "register_commands", cli=group)
        after = dict(group.commands)
        group.commands = {**before, **({name: after[name] for name in after if name not in before}
                                       if succeeded else {})}
        for name in sorted(name for name in before if after.get(name) is not before[name]):
            _report_problem(impl.plugin_name, f"register_commands replaces or removes the command '{name}', "
                                              "which ctrlkit already has; the existing one is kept")


def plugin_report(include_builtins: bool = False) -> list[dict]:
    """Name, version and hooks of each loaded plugin distribution, and the ones that failed."""
    load_plugins()
    for kind in KINDS:  # run every registration hook, so that its problems are reported too
        get_registry(kind)
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
        if problems.get(name):
            row["error"] = "; ".join(problems[name])
        rows.append(row)
    rows.extend({"name": name, "error": error} for name, error in sorted(failures.items()))
    return sorted(rows, key=lambda row: row["name"])


def plugin_versions() -> dict[str, str]:
    """Distribution name -> version of each loaded plugin, for results files."""
    load_plugins()
    return {dist.name: dist.version for dist in distributions.values()}
