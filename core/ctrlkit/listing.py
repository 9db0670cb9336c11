"""Human-readable listing of registered components and their options (``ctrlkit list``)."""

from __future__ import annotations

import inspect

from .errors import CtrlkitError
from .registry import Registry


def describe(kind: str, registry: Registry) -> str:
    lines = [f"{kind}:"] if registry.names() else [f"{kind}:", "  (none installed)"]
    for name in registry.names():
        entry = registry.entry(name)
        try:
            factory = entry.load(registry.kind)
        except CtrlkitError as exc:
            lines.append(f"  {name}  ({entry.plugin})  unavailable: {exc}")
            continue
        summary = " ".join(inspect.cleandoc(factory.__doc__ or "").split("\n\n")[0].split())
        lines.append(f"  {name}  ({entry.plugin})  {summary}".rstrip())
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
    return "\n".join(lines)
