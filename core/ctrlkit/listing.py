"""Human-readable listing of registered components and their options (``ctrlkit list``)."""

from __future__ import annotations

import inspect

from .errors import CtrlkitError
from .registry import Registry, describe_exception


def describe(kind: str, registry: Registry) -> str:
    lines = [f"{kind}:"] if registry.names() else [f"{kind}:", "  (none installed)"]
    for name in registry.names():
        entry = registry.entry(name)
        try:
            lines.extend(_describe_entry(kind, name, entry.load(registry.kind), entry.plugin))
        except KeyboardInterrupt:
            raise
        except CtrlkitError as exc:
            lines.append(f"  {name}  ({entry.plugin})  unavailable: {exc}")
        except BaseException as exc:  # noqa: B036 - a plugin's class whose declarations raise or are malformed
            lines.append(f"  {name}  ({entry.plugin})  unavailable: its declarations cannot be read: "
                         f"{describe_exception(exc)}")
    return "\n".join(lines)


def _describe_entry(kind: str, name: str, factory, plugin: str) -> list[str]:
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
        lines.append(f"      --set {name}.{option.name}={option.type.__name__.upper()}{choices}  "
                     f"{option.help} (default: {option.default!r})")
    return lines
