"""Declared component options: each controller, metric, backbone, dataset and vectorizer lists
the options it accepts, so ``ctrlkit list`` can show them and ``--set`` can check them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from .errors import OptionError
from .secrets import MASK, is_secret

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Option:
    """One option: ``Option("top_n", int, 100, "representative terms per topic")``. A default of
    None means unset (the component decides); None is then accepted as a value too."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple | None = None
    minimum: float | None = None
    maximum: float | None = None
    allow_non_finite: bool = False
    """A float option refuses NaN and infinities unless this is True."""
    separator: str | None = None
    """A str option that holds several items (openai.base_url: endpoints) sets this: a list or
    tuple of strings given from Python is taken as its items joined by it."""

    def coerce(self, value: Any, owner: str) -> Any:
        """Convert ``value`` (a string from the command line, or a Python value) to this option's type."""
        where = f"option '{owner}.{self.name}'"
        if value is None and self.default is None:  # an option that may stay unset (prompt.seed: the run's)
            return None
        if self.separator is not None and isinstance(value, (list, tuple)) \
                and all(isinstance(item, str) for item in value):
            value = self.separator.join(value)
        shown = MASK if is_secret(self.name) else repr(value)  # errors are logged and shared too
        if isinstance(value, str) and self.type is not str:
            text = value.strip().lower()
            if self.type is bool:
                if text not in _TRUE | _FALSE:
                    raise OptionError(f"{where} expects true or false, got {shown}")
                value = text in _TRUE
            else:
                try:
                    value = self.type(value)
                except ValueError:
                    raise OptionError(f"{where} expects {self.type.__name__}, got {shown}") from None
        elif self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, self.type) or (self.type is int and isinstance(value, bool)):
            raise OptionError(f"{where} expects {self.type.__name__}, got {shown}")
        if self.type is float and not self.allow_non_finite and not math.isfinite(value):
            raise OptionError(f"{where} expects a finite number, got {shown}")
        if self.choices is not None and value not in self.choices:
            raise OptionError(f"{where} must be one of {', '.join(map(str, self.choices))}; got {shown}")
        if self.minimum is not None and value < self.minimum:
            raise OptionError(f"{where} must be at least {self.minimum}, got {shown}")
        if self.maximum is not None and value > self.maximum:
            raise OptionError(f"{where} must be at most {self.maximum}, got {shown}")
        return value


class Configurable:
    """Base of every component: holds its resolved options in ``self.options``.

    Subclasses list their options in the class attribute ``options``; a subclass that adds
    options writes ``options = Parent.options + (Option(...),)``.
    """

    name: str = ""
    options: tuple[Option, ...] = ()
    file_digests: Mapping[str, str] = MappingProxyType({})
    """Set by a component that reads a file an option names: ``{"OPTION_digest": "sha256:..."}``."""

    def __init__(self, **options: Any):
        self.options = resolve_options(self.name or type(self).__name__, type(self).options, options)

    def recorded_options(self) -> dict[str, Any]:
        """The options as a run's results.json records them: ``self.options``, plus
        ``file_digests``, the ``sha256:...`` of each file an option names and the component read
        (prompt: ``system_file_digest``), so a run proves which text it used and not only its path."""
        return {**self.options, **self.file_digests}

    def read_option_file(self, option: str, where: str) -> str:
        """The text of the file that ``option`` names (:func:`ctrlkit.files.read_text_file`: an
        OptionError starting with ``where`` when it cannot be read), its digest recorded in
        ``file_digests`` as ``OPTION_digest``."""
        from .files import read_text_file

        text, digest = read_text_file(self.options[option], where)
        self.file_digests = {**self.file_digests, f"{option}_digest": digest}
        return text


def resolve_options(owner: str, declared: tuple[Option, ...], given: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults overlaid with ``given``, each value checked; unknown names are refused."""
    by_name = {option.name: option for option in declared}
    unknown = sorted(set(given) - set(by_name))
    if unknown:
        valid = ", ".join(by_name) or "none"
        raise OptionError(f"Unknown option '{owner}.{unknown[0]}'. Valid options of {owner}: {valid}")
    resolved = {option.name: option.default for option in declared}
    for name, value in given.items():
        resolved[name] = by_name[name].coerce(value, owner)
    return resolved


SKIP_INVALID = Option("skip_invalid", bool, False, "leave out invalid rows (counted and reported) instead of stopping")
"""The option a dataset declares when its rows can be skipped one by one (``--skip-invalid``)."""


def parse_assignments(assignments: list[str] | tuple[str, ...]) -> dict[str, dict[str, str]]:
    """``["tag.top_n=50", "rouge.use_stemmer=false"]`` -> ``{"tag": {"top_n": "50"}, ...}``."""
    parsed: dict[str, dict[str, str]] = {}
    for assignment in assignments:
        target, sep, value = assignment.partition("=")
        component, dot, option = target.strip().partition(".")
        if not sep or not dot or not component or not option:
            shown = f"{target}=..." if sep else assignment  # the value may be a key given to the wrong name
            raise OptionError(f"--set expects COMPONENT.OPTION=VALUE, got {shown!r}")
        parsed.setdefault(component, {})[option] = value
    return parsed
