"""The docs site's generated parts, made at build time from the installed ctrlkit (an mkdocs hook,
named in mkdocs.yml), so that they cannot go stale:

- ``<!-- generated: components KIND -->``: every registered component of KIND (controllers,
  metrics, datasets, backbones, vectorizers, executors), from the registry ``ctrlkit list``
  reads: its description (the factory's docstring), the controls it reads or provides, what it
  needs, and its options (name, type, default, help). A ``## NAME`` section written below the
  marker is that component's hand-written notes, placed after its description.
- ``<!-- generated: controls -->``: which controls each controller and metric reads (and what
  else it needs), and which each dataset provides.
- ``<!-- generated: api MODULE -->``: a mkdocstrings entry for each name in ``MODULE.__all__``.
- ``<!-- generated: recipes -->``: every recipe ``ctrlkit recipes`` lists, with its file.
- ``<!-- generated: schema NAME -->``: the fields of ``core/ctrlkit/json_schemas/NAME.schema.json``
  and the schema itself.

A component without a description, an option without help, a component that cannot be loaded
or notes for a name nobody registers are warnings, which ``mkdocs build --strict`` (make docs)
turns into a failed build. Nothing here imports mkdocs: the tests call :func:`components_markdown`.
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import re
from pathlib import Path

log = logging.getLogger("mkdocs.hooks.ctrlkit")

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = ROOT / "core" / "ctrlkit" / "json_schemas"
MARKER = re.compile(r"^<!-- generated: (\w+)(?: ([\w.]+))? -->$", re.MULTILINE)

# what each kind's page calls one of them, and the order of the facts shown about it
NOUNS = {"controllers": "controller", "metrics": "metric", "datasets": "dataset", "backbones": "backbone",
         "vectorizers": "vectorizer", "executors": "executor"}


def on_config(config, **kwargs):
    """Add the plugins' commands (``ctrlkit data``, ``ctrlkit train-focus-classifier``) to the click
    group, as ``ctrlkit --help`` does on first use, so that the CLI reference (mkdocs-click, which
    reads the group's commands directly) shows them too."""
    from ctrlkit.cli import cli

    cli.list_commands(None)
    return config


def on_page_markdown(markdown, page, config, files, **kwargs):
    """mkdocs' hook: replace each ``<!-- generated: ... -->`` marker of a page."""
    problems: list[str] = []
    markdown = render(markdown, problems)
    for problem in problems:
        log.warning("%s: %s", page.file.src_path, problem)
    return markdown


def render(markdown: str, problems: list[str]) -> str:
    """``markdown`` with its markers replaced; what is wrong is appended to ``problems``."""
    match = MARKER.search(markdown)
    if match is None:
        return markdown
    what, argument = match.group(1), match.group(2)
    before, after = markdown[:match.start()], markdown[match.end():]
    if what == "components":
        if argument not in NOUNS:
            problems.append(f"'generated: components {argument}': the kind must be one of {', '.join(NOUNS)}")
            return markdown
        return before + components_markdown(argument, after, problems)
    if what == "controls":
        generated = controls_markdown(problems)
    elif what == "api":
        generated = api_markdown(argument, problems)
    elif what == "schema":
        generated = schema_markdown(argument, problems)
    elif what == "recipes":
        generated = recipes_markdown(problems)
    else:
        problems.append(f"unknown marker 'generated: {what}'")
        generated = ""
    return before + generated + render(after, problems)


# ---------------------------------------------------------------------------------------------
# components


def _registry(kind):
    from ctrlkit.plugins import get_registry

    return get_registry(kind)


def _shared_names() -> frozenset[str]:
    from ctrlkit.listing import shared_names

    return shared_names(_registry(kind) for kind in NOUNS)


def _plain(text: str) -> str:
    """A docstring's Sphinx roles (``:meth:`aggregate```) as plain code."""
    return re.sub(r":(?:class|meth|func|mod|attr|data|obj):`~?([^`]+)`", r"``\1``", text)


def _cell(text) -> str:
    """Text for one cell of a Markdown table."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(values) -> str:
    return ", ".join(f"`{value}`" for value in values) if values else "none"


def describe_component(kind: str, name: str, problems: list[str]) -> dict | None:
    """What the docs say about one registered component: ``{"name", "plugin", "factory",
    "description", "summary", "facts": [(label, text)], "options": [...], "reads": [...]}``,
    or None (and a problem) when it cannot be loaded."""
    registry = _registry(kind)
    entry = registry.entry(name)
    try:
        factory = entry.load(registry.kind)
    except Exception as exc:  # a plugin that cannot be imported: the build says which
        problems.append(f"{NOUNS[kind]} '{name}' of {entry.plugin} cannot be loaded: {exc}")
        return None
    description = _plain(inspect.cleandoc(factory.__doc__ or ""))
    if not description.strip():
        problems.append(f"{NOUNS[kind]} '{name}' of {entry.plugin} has no description (its factory's docstring)")
    instance = None
    if kind in ("controllers", "metrics"):  # what they read can depend on their options: ask a default one
        try:
            instance = registry.create(name)
        except Exception:  # noqa: BLE001 - the class's own declarations still say it
            instance = None
    facts = _facts(kind, name, instance or factory)
    options = []
    for option in getattr(factory, "options", ()):
        if not (option.help or "").strip():
            problems.append(f"option '{name}.{option.name}' of {NOUNS[kind]} '{name}' has no help text")
        options.append({"name": option.name, "type": option.type.__name__, "default": option.default,
                        "choices": option.choices, "help": option.help})
    summary = " ".join(description.split("\n\n")[0].split())
    reads = list(getattr(instance or factory, "reads", ()) or ())
    return {"name": name, "plugin": entry.plugin, "factory": f"{factory.__module__}.{factory.__qualname__}",
            "description": description, "summary": summary, "facts": facts, "options": options, "reads": reads}


def _facts(kind: str, name: str, component) -> list[tuple[str, str]]:
    """(label, text) lines saying what a component reads and needs, by kind."""
    def get(attribute, default=None):
        return getattr(component, attribute, default)

    facts = []
    if kind == "controllers":
        if get("partial_controls"):
            reads = "whichever controls an example has (it renders those present)"
        else:
            reads = _code(get("reads"))
            if get("reads_any"):
                reads += " (an example with any one of them is controlled)"
        facts.append(("Reads", reads))
        facts.append(("Needs of the backbone", _code(sorted(get("requires", ())))))
        if get("topic_vectorizer"):
            facts.append(("Topic space", f"built with `{get('topic_vectorizer')}`"))
        if get("needs_train_examples"):
            facts.append(("Learns from", "the dataset's train split"))
        if get("trained_with_model"):
            facts.append(("Training", "its parameters live in the model: useful only after `ctrlkit train`"))
    elif kind == "metrics":
        facts.append(("Reads", _code(get("reads"))))
        facts.append(("Needs references", "yes" if get("needs_references") else "no"))
        if get("needs_judge"):
            facts.append(("Needs a judge", "yes: `--judge SPEC`"))
        if get("topic_vectorizer"):
            facts.append(("Topic space", f"built with `{get('topic_vectorizer')}` (option `vectorizer`)"))
        better = get("higher_is_better", True)
        facts.append(("Better", {True: "higher", False: "lower", None: "not ranked"}[better]))
    elif kind == "datasets":
        splits = get("splits", ())
        facts.append(("Splits", _code(splits) if splits else "one file, unsplit"))
        controls = get("controls", ())
        facts.append(("Controls on every example", "whatever the file holds" if controls is None else _code(controls)))
        if get("optional_controls"):
            facts.append(("Controls on some examples", _code(get("optional_controls"))))
        if get("group_field"):
            facts.append(("Examples resampled together by", f"`{get('group_field')}`"))
        if get("length_top_bin") is not None:
            facts.append(("Top length bin", str(get("length_top_bin"))))
    elif kind == "backbones":
        facts.append(("Takes", _code(sorted(get("capabilities", ())))))
        if get("spec_option"):
            named = f"`{name}:VALUE` (`--backbone {name}:VALUE`), which sets its option `{get('spec_option')}`"
            facts.append(("Named as", named))
    elif kind == "vectorizers":
        facts.append(("Terms", "yes: its dimensions are terms, so a topic has representative terms"
                      if get("has_terms") else "no (dense vectors)"))
    return facts


def _default(option) -> str:
    if option["default"] is None:
        return "unset"
    if option["default"] == "":
        return "empty"
    return f"`{option['default']!r}`"


def component_markdown(kind: str, info: dict, key: str, notes: str = "") -> str:
    """One component's section below its heading: where it comes from, its description, the
    hand-written ``notes``, then what it reads and needs, and its options."""
    lines = [f"<small>{NOUNS[kind]} from `{info['plugin']}` · `{info['factory']}`</small>", ""]
    if info["description"]:
        lines += [info["description"], ""]
    if notes:
        lines += [notes, ""]
    if info["facts"]:
        lines += [" · ".join(f"**{label}:** {text}" for label, text in info["facts"]), ""]
    if info["options"]:
        lines += ["| option | type | default | what it sets |", "|---|---|---|---|"]
        for option in info["options"]:
            choices = ", ".join(f"`{choice}`" for choice in option["choices"] or ())
            choices = f" One of: {choices}." if choices else ""
            lines.append(f"| `--set {key}.{option['name']}=` | {option['type']} | {_cell(_default(option))} | "
                         f"{_cell(option['help'])}{_cell(choices)} |")
        lines.append("")
    else:
        lines += ["No options.", ""]
    return "\n".join(lines)


def _notes(text: str) -> dict[str, str]:
    """``## NAME`` sections of hand-written notes -> their bodies."""
    notes = {}
    for match in re.finditer(r"^## `?([\w.+-]+)`?\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL):
        notes[match.group(1)] = match.group(2).strip()
    return notes


def components_markdown(kind: str, notes_text: str = "", problems: list[str] | None = None) -> str:
    """Every registered component of ``kind``: a summary table, then a section each, with the
    notes of ``notes_text`` (its ``## NAME`` sections) after the description."""
    problems = [] if problems is None else problems
    registry = _registry(kind)
    shared = _shared_names()
    notes = _notes(notes_text)
    leading = notes_text.split("\n## ", 1)[0].strip() if not notes_text.lstrip().startswith("## ") else ""
    infos = [info for name in registry.names() if (info := describe_component(kind, name, problems))]
    for name in sorted(set(notes) - {info["name"] for info in infos}):
        problems.append(f"notes for {NOUNS[kind]} '{name}', which no installed plugin registers")
    lines = ["| name | what it does | from |", "|---|---|---|"]
    for info in infos:
        lines.append(f"| [`{info['name']}`](#{_anchor(info['name'])}) | {_cell(info['summary'])} | "
                     f"`{info['plugin']}` |")
    lines.append("")
    if leading:
        lines += [leading, ""]
    for info in infos:
        key = f"{NOUNS[kind]}:{info['name']}" if info["name"] in shared else info["name"]
        lines += [f"## `{info['name']}` {{ #{_anchor(info['name'])} }}", "",
                  component_markdown(kind, info, key, notes.get(info["name"], ""))]
    return "\n".join(lines)


def _anchor(name: str) -> str:
    return re.sub(r"[^\w-]", "-", name).lower()


def controls_markdown(problems: list[str]) -> str:
    """Which controls each controller and metric reads (and what else it needs), and which
    controls each dataset provides: a table per kind, each name linking to its section."""
    tables = {
        "controllers": ("Controllers", ("Reads", "Needs of the backbone", "Topic space")),
        "metrics": ("Metrics", ("Reads", "Needs references", "Needs a judge", "Topic space")),
        "datasets": ("Datasets", ("Controls on every example", "Controls on some examples")),
    }
    lines = []
    for kind, (title, columns) in tables.items():
        lines += [f"## {title}", "", f"| {NOUNS[kind]} | " + " | ".join(column.lower() for column in columns) + " |",
                  "|---|" + "---|" * len(columns)]
        for name in _registry(kind).names():
            info = describe_component(kind, name, problems)
            if info is None:
                continue
            facts = dict(info["facts"])
            cells = [_cell(facts.get(column, "")) or ("no" if column.startswith("Needs") else "") for column in columns]
            lines.append(f"| [`{name}`]({kind}.md#{_anchor(name)}) | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# the Python API

# shown first, in this order; the other names follow alphabetically within their group
FIRST = ("run", "RunSettings", "evaluate", "sweep", "train", "TrainSettings", "recipes", "RunResult")


def api_markdown(module_name: str, problems: list[str]) -> str:
    """A mkdocstrings entry (``::: module.NAME``) for every name in ``module.__all__``, grouped
    into functions, classes, errors and constants."""
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001
        problems.append(f"cannot import {module_name}: {exc}")
        return ""
    names = list(getattr(module, "__all__", ()))
    if not names:
        problems.append(f"{module_name} has no __all__ to document")
    groups: dict[str, list[str]] = {"Functions": [], "Classes": [], "Errors": [], "Constants": []}
    for name in names:
        value = getattr(module, name)
        if inspect.isclass(value) and issubclass(value, BaseException):
            groups["Errors"].append(name)
        elif inspect.isclass(value):
            groups["Classes"].append(name)
        elif callable(value):
            groups["Functions"].append(name)
        else:
            groups["Constants"].append(name)
    def order(name):
        return (FIRST.index(name) if name in FIRST else len(FIRST), name.lower())

    lines = []
    for group, members in groups.items():
        if not members:
            continue
        lines += [f"## {group}", ""]
        for name in sorted(members, key=order):
            lines += [f"::: {module_name}.{name}", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# recipes


def recipes_markdown(problems: list[str]) -> str:
    """A section per shipped recipe: its one-line description and its whole file (the header
    says which table of the paper it mirrors and what differs)."""
    import ctrlkit

    lines = []
    for recipe in ctrlkit.recipes():
        if not (recipe.description or "").strip():
            problems.append(f"recipe '{recipe.name}' has no description")
        path = Path(recipe.path)
        shown = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
        lines += [f"### `{recipe.name}`", "", recipe.description or "", "",
                  f'??? note "{shown}"', "", "    ```toml"]
        lines += [f"    {line}" if line else "" for line in path.read_text(encoding="utf-8").rstrip().splitlines()]
        lines += ["    ```", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# JSON Schemas


def _type(spec: dict) -> str:
    if "$ref" in spec:
        return f"see `{spec['$ref'].rsplit('/', 1)[-1]}`"
    if "const" in spec:
        return f"always `{json.dumps(spec['const'])}`"
    if "enum" in spec:
        return "one of " + ", ".join(f"`{json.dumps(value)}`" for value in spec["enum"])
    kinds = spec.get("type")
    if kinds is None:
        return "any" if not spec.get("oneOf") and not spec.get("anyOf") else "one of several shapes"
    text = " or ".join(kinds) if isinstance(kinds, list) else kinds
    if spec.get("items", {}).get("type"):
        text += f" of {spec['items']['type']}"
    return text


def schema_markdown(name: str, problems: list[str]) -> str:
    """The top-level fields of a schema (required or not, type, description), then the schema."""
    path = SCHEMAS / f"{name}.schema.json"
    if not path.is_file():
        problems.append(f"no schema {path.relative_to(ROOT)}")
        return ""
    text = path.read_text(encoding="utf-8")
    schema = json.loads(text)
    required = set(schema.get("required", ()))
    lines = [f"`{path.relative_to(ROOT).as_posix()}`: {schema.get('title', '')}", ""]
    if schema.get("description"):
        lines += [schema["description"], ""]
    lines += ["| field | required | type | what it holds |", "|---|---|---|---|"]
    for field, spec in schema.get("properties", {}).items():
        lines.append(f"| `{field}` | {'yes' if field in required else ''} | {_cell(_type(spec))} | "
                     f"{_cell(spec.get('description', ''))} |")
    lines += ["", f'??? note "The whole schema: {path.name}"', "", "    ```json"]
    lines += [f"    {line}" if line else "" for line in text.rstrip().splitlines()]
    lines += ["    ```", ""]
    return "\n".join(lines)
