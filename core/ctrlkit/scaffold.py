"""``ctrlkit plugin new NAME``: write a plugin distribution that installs, registers and tests.

The files come from ``templates/plugin/`` (package data), each with ``$placeholders`` filled by
``string.Template``: plain files a plugin author can read, and no template engine to depend on.
A template folder named ``package`` becomes the Python package, and ``.tmpl`` is dropped from
each name (so the templates are never imported, collected by pytest or packaged as modules).
"""

from __future__ import annotations

import re
from importlib.metadata import version
from importlib.resources import files
from pathlib import Path
from string import Template

from .errors import CtrlkitError
from .files import atomic_write_text

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*")


def plugin_names(name: str) -> dict[str, str]:
    """The placeholders for plugin ``name``: ``my_plugin`` gives the distribution
    ``ctrlkit-my-plugin``, the package ``ctrlkit_my_plugin`` and components ``my-plugin-...``."""
    if not _NAME.fullmatch(name):
        raise CtrlkitError(f"invalid plugin name {name!r}: use letters, digits, '-' and '_', starting with a letter "
                           "(e.g. my-plugin)")
    slug = re.sub(r"^ctrlkit-", "", name.lower().replace("_", "-"))
    return {
        "dist": f"ctrlkit-{slug}",
        "package": "ctrlkit_" + slug.replace("-", "_"),
        "controller": f"{slug}-focus",
        "metric": f"{slug}-compression",
        "ctrlkit_version": version("ctrlkit"),
    }


def new_plugin(name: str, directory: str | Path = ".") -> Path:
    """Write the distribution folder ``ctrlkit-NAME/`` in ``directory`` and return its path.
    Refuses an invalid name and an existing folder before writing anything."""
    names = plugin_names(name)
    target = Path(directory) / names["dist"]
    if target.exists():
        raise CtrlkitError(f"{target} already exists: choose another name or --dir")
    templates = _templates(files("ctrlkit") / "templates" / "plugin", Path())
    rendered = {path: Template(text).substitute(names) for path, text in templates}
    for relative, text in rendered.items():
        path = target / Path(*(names["package"] if part == "package" else part for part in relative.parts))
        atomic_write_text(path, text)  # the one safe path: a link planted meanwhile is replaced, not followed
    return target


def _templates(folder, relative: Path):
    """``(output path, template text)`` of every template under ``folder``, recursively."""
    for entry in folder.iterdir():
        if entry.is_dir():
            yield from _templates(entry, relative / entry.name)
        elif entry.name.endswith(".tmpl"):
            yield relative / entry.name.removesuffix(".tmpl"), entry.read_text(encoding="utf-8")
