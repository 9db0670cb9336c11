"""Named factories. A name binds to a class, or to a ``"module:attr"`` string imported on first
use, so listing what is installed never imports torch."""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from typing import Any

from .errors import DuplicateComponentError, PluginLoadError, UnknownComponentError
from .options import resolve_options


@dataclass
class Entry:
    name: str
    factory: Any  # a class, or "module:attr"
    plugin: str

    def load(self, kind: str = "component") -> Any:
        if isinstance(self.factory, str):
            module_name, _, attr = self.factory.partition(":")
            try:
                self.factory = getattr(importlib.import_module(module_name), attr)
            except (ImportError, AttributeError) as exc:
                raise PluginLoadError(f"{kind} '{self.name}' of plugin '{self.plugin}' cannot be imported from "
                                      f"'{module_name}:{attr}': {type(exc).__name__}: {exc}") from None
        return self.factory


class Registry:
    """The components of one kind (``"controller"``, ``"metric"``, ...) by name."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Entry] = {}

    def register(self, name: str, factory: Any, plugin: str) -> None:
        if name in self._entries:
            other = self._entries[name].plugin
            raise DuplicateComponentError(
                f"{self.kind} '{name}' is registered by both plugin '{other}' and plugin '{plugin}'"
            )
        self._entries[name] = Entry(name, factory, plugin)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def entry(self, name: str) -> Entry:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownComponentError(self._unknown_message(name)) from None

    def create(self, name: str, **options: Any) -> Any:
        """Instantiate ``name`` with its options checked against the ones it declares."""
        factory = self.entry(name).load(self.kind)
        resolved = resolve_options(name, getattr(factory, "options", ()), options)
        component = factory(**resolved)
        component.name = name
        return component

    def _unknown_message(self, name: str) -> str:
        names = self.names()
        message = f"Unknown {self.kind} '{name}'."
        close = difflib.get_close_matches(name, names, n=3)
        if close:
            message += f" Did you mean: {', '.join(close)}?"
        return message + f" Available: {', '.join(names) or 'none'}"
