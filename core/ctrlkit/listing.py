"""Human-readable listing of registered components and their options (``ctrlkit list``)."""

from __future__ import annotations

import inspect
from collections import Counter
from typing import Iterable

from .errors import CtrlkitError
from .registry import Registry, describe_exception


def describe(kind: str, registry: Registry, shared: frozenset[str] = frozenset()) -> str:
    """The components of ``kind``; those whose name another kind's component also has (``shared``)
    show their options in the form that names the kind: ``--set dataset:hf.path=...``."""
    lines = [f"{kind}:"] if registry.names() else [f"{kind}:", "  (none installed)"]
    for name in registry.names():
        entry = registry.entry(name)
        key = f"{registry.kind}:{name}" if name in shared else name
        try:
            lines.extend(_describe_entry(kind, name, key, entry.load(registry.kind), entry.plugin))
        except KeyboardInterrupt:
            raise
        except CtrlkitError as exc:
            lines.append(f"  {name}  ({entry.plugin})  unavailable: {exc}")
        except BaseException as exc:  # noqa: B036 - a plugin's class whose declarations raise or are malformed
            lines.append(f"  {name}  ({entry.plugin})  unavailable: its declarations cannot be read: "
                         f"{describe_exception(exc)}")
    return "\n".join(lines)


def shared_names(registries: Iterable[Registry]) -> frozenset[str]:
    """Names that components of two or more kinds have (the hf dataset and the hf backbone)."""
    counts = Counter(name for registry in registries for name in registry.names())
    return frozenset(name for name, count in counts.items() if count > 1)


SHARED_NOTE = ("A name two kinds share takes its kind in --set where both are in a run and take the option: "
               "--set dataset:hf.path=DIR, --set backbone:hf.device=cpu; elsewhere the plain name works.")


def _describe_entry(kind: str, name: str, key: str, factory, plugin: str) -> list[str]:
    """The lines of one component: summary, then (datasets) splits and controls, then options."""
    summary = " ".join(inspect.cleandoc(factory.__doc__ or "").split("\n\n")[0].split())
    lines = [f"  {name}  ({plugin})  {summary}".rstrip()]
    splits = getattr(factory, "splits", None)
    if kind == "datasets":
        lines.append(f"      splits: {', '.join(splits) or 'one file'}; controls: "
                     f"{'from the file' if factory.controls is None else ', '.join(factory.controls) or 'none'}"
                     + (f"; on some examples: {', '.join(factory.optional_controls)}"
                        if factory.optional_controls else ""))
    for option in getattr(factory, "options", ()):
        choices = f" [{'|'.join(map(str, option.choices))}]" if option.choices else ""
        lines.append(f"      --set {key}.{option.name}={option.type.__name__.upper()}{choices}  "
                     f"{option.help} (default: {'unset' if option.default is None else repr(option.default)})")
    return lines
