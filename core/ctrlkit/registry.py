"""Named factories. A name binds to a class, or to a ``"module:attr"`` string imported on first
use, so listing what is installed never imports torch.

A registration that cannot work (a factory that is neither callable nor a well-formed
``"module:attr"`` string, or a name two registrations claim) is kept as an entry that refuses to
load, with the reason, so that the name is reported once and shown in ``ctrlkit list`` and
every other name keeps working."""

from __future__ import annotations

import difflib
import functools
import importlib
from dataclasses import dataclass
from typing import Any

from .errors import CtrlkitError, DuplicateComponentError, PluginLoadError, UnknownComponentError
from .options import resolve_options


@dataclass
class Entry:
    name: str
    factory: Any  # a class, or "module:attr"; None when ``error`` says why the name cannot be used
    plugin: str
    error: Exception | None = None

    def load(self, kind: str = "component") -> Any:
        if self.error is not None:
            raise self.error.with_traceback(None)
        if isinstance(self.factory, str):
            module_name, _, attr = self.factory.partition(":")
            try:
                factory = functools.reduce(getattr, attr.split("."), importlib.import_module(module_name))
            except KeyboardInterrupt:  # the user's Ctrl-C while a slow module imports
                raise
            except BaseException as exc:  # noqa: B036 - the plugin module's own code may raise anything
                raise PluginLoadError(f"{kind} '{self.name}' of plugin '{self.plugin}' cannot be imported from "
                                      f"'{module_name}:{attr}': {describe_exception(exc)}") from None
            if not callable(factory):
                raise PluginLoadError(f"{kind} '{self.name}' of plugin '{self.plugin}' is '{self.factory}', "
                                      f"which is a {type(factory).__name__}, not a class or function")
            self.factory = factory
        return self.factory


def factory_problem(factory: Any) -> str | None:
    """Why ``factory`` can never work (None when it may): it must be callable, or a
    ``"module:attr"`` string naming an importable-looking module and attribute."""
    if isinstance(factory, str):
        module_name, colon, attr = factory.partition(":")
        if colon and _dotted(module_name) and _dotted(attr):
            return None
        return f"{factory!r} is not a 'module:attr' string"
    if callable(factory):
        return None
    return f"{_short_repr(factory)} ({type(factory).__name__}) is neither a class nor a 'module:attr' string"


def name_problem(name: Any) -> str | None:
    """Why ``name`` cannot be typed on a command line (None when it can)."""
    if not isinstance(name, str):
        return f"the name {_short_repr(name)} ({type(name).__name__}) is not a string"
    if not name or not name.isprintable() or any(character.isspace() for character in name):
        return f"the name {name!r} is empty or holds spaces or control characters"
    return None


def _dotted(text: str) -> bool:
    return all(part.isidentifier() for part in text.split("."))


def _short_repr(value: Any) -> str:
    try:
        text = repr(value)
    except BaseException:  # noqa: B036 - a plugin's object whose repr raises (or exits)
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def describe_exception(exc: BaseException) -> str:
    """``Type: message`` on one line, however many lines the message has."""
    try:
        message = " ".join(str(exc).split())
    except BaseException:  # noqa: B036 - a plugin's exception whose __str__ raises (or exits)
        message = ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class Registry:
    """The components of one kind (``"controller"``, ``"metric"``, ...) by name."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, factory: Any, plugin: str) -> None:
        """Bind ``name`` to ``factory``. A registration that cannot work raises a ``CtrlkitError``
        saying why, and (unless the name itself is unusable) leaves ``name`` bound to that error."""
        problem = name_problem(name)
        if problem:
            raise PluginLoadError(f"a {self.kind} of plugin '{plugin}' is refused: {problem}")
        if name in self._entries:
            first = self._entries[name].plugin
            by = f"plugin '{plugin}' twice" if first == plugin else f"both plugin '{first}' and plugin '{plugin}'"
            self._refuse(name, first, DuplicateComponentError(f"{self.kind} '{name}' is registered by {by}"))
        problem = factory_problem(factory)
        if problem:
            self._refuse(name, plugin, PluginLoadError(f"{self.kind} '{name}' of plugin '{plugin}' is refused: "
                                                       f"{problem}"))
        self._entries[name] = Entry(name, factory, plugin)

    def _refuse(self, name: str, plugin: str, error: CtrlkitError) -> None:
        """Leave ``name`` bound to ``error``, which every later use raises, and raise it now."""
        self._entries[name] = Entry(name, None, plugin, error)
        raise error

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entry(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownComponentError(self._unknown_message(name)) from None

    def create(self, name: str, **options: Any) -> Any:
        """Instantiate ``name`` with its options checked against the ones it declares; a
        plugin's class that fails in its declarations or ``__init__`` is one ``CtrlkitError``."""
        entry = self.entry(name)
        factory = entry.load(self.kind)
        try:
            resolved = resolve_options(name, getattr(factory, "options", ()), options)
            component = factory(**resolved)
            component.name = name
        except (CtrlkitError, KeyboardInterrupt):
            raise
        except BaseException as exc:  # SystemExit or GeneratorExit from a plugin's __init__ too
            raise PluginLoadError(f"{self.kind} '{name}' of plugin '{entry.plugin}' cannot be created: "
                                  f"{describe_exception(exc)}") from exc
        return component

    def _unknown_message(self, name: str) -> str:
        names = self.names()
        message = f"Unknown {self.kind} '{name}'."
        close = difflib.get_close_matches(name, names, n=3)
        if close:
            message += f" Did you mean: {', '.join(close)}?"
        return message + f" Available: {', '.join(names) or 'none'}"
