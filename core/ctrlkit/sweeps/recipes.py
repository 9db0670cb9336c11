"""Recipes: a paper's protocol as data, one TOML file each under ``ctrlkit/recipes/`` (package data).

A recipe is a sweep configuration (:mod:`ctrlkit.sweeps.settings`, variants included) with a
header comment saying which table of the paper it mirrors and what differs, and three keys of
its own: ``description`` (one line, which ``ctrlkit recipes`` lists), ``needs`` (settings the
user must give, each with a hint: ``needs = { backbones = "a chat backbone" }``) and ``kind``.
``ctrlkit sweep --recipe NAME`` runs it; the settings given beside it win over the recipe's
(:func:`ctrlkit.sweeps.settings.overlay`), and the recipe's options for a component the user
replaced (``--backbones`` without the recipe's backbone) are left out rather than refused.

``kind = "meta-eval"`` is a recipe whose table correlates metrics with human scores rather than
comparing systems (FD): the dataset already holds every system's output, so there is nothing to
generate and no grid to cross. It runs :func:`ctrlkit.evaluate` on the dataset's own predictions
into the output folder, then :func:`ctrlkit.analyses.meta_evaluation.meta_evaluate` of every metric value
(and of the stored scores the recipe's ``compare`` names; those no row holds are named, not
correlated) against its ``human`` score, and :func:`ctrlkit.analyses.system_means.system_means` of
all of them, and writes ``meta-eval.json`` and ``table.md`` beside ``results.json``: one command,
one folder, one file of tables (the correlations, then each system's means), as a sweep recipe gives. Settings that only a generation has (controllers, backbones, seed, ...)
are refused in one line.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any, Mapping

from ..component_options import split_key
from ..digest import data_digest
from ..errors import ConfigurationError, OptionError, UnknownComponentError
from ..files import atomic_write_json, atomic_write_text
from ..markdown import escape_markdown, markdown_table
from .config import read_config
from .settings import (SETTINGS, DEFAULT_DATASETS, Refused, check_settings, name_list, one_line, overlay,
                       sweep_components)
from .variants import check_variants

KINDS = ("sweep", "meta-eval")
OWN_KEYS = ("description", "kind", "needs")
"""Keys a recipe file has beside the settings of its kind."""
META_EVAL_SETTINGS = ("datasets", "data", "split", "topics", "metrics", "options", "judge", "limit")
"""The sweep settings a meta-eval recipe takes (those of :func:`ctrlkit.evaluate`)."""
META_EVAL_KEYS = ("human", "compare")
"""A meta-eval recipe's own: the dotted path of the human score, and stored scores correlated too."""
META_EVAL_FILE = "meta-eval.json"


@dataclass(frozen=True)
class Recipe:
    """A recipe as its file gives it: ``settings`` checked as a sweep configuration's (for a
    meta-eval recipe, ``human`` and ``compare`` among them), ``needs`` the settings the user gives."""

    name: str
    description: str
    kind: str
    path: Path
    settings: dict = field(repr=False)
    needs: dict = field(default_factory=dict)

    def record(self) -> dict[str, str]:
        """What a sweep records of the recipe it ran: its name, file and the digest of its bytes
        (a copy edited by hand keeps the name; the digest tells the two apart)."""
        return {"name": self.name, "file": self.path.name, "digest": data_digest(self.path)}


def recipe_folder():
    """The folder of the shipped recipe files (package data)."""
    return files("ctrlkit") / "recipes"


def recipes() -> list[Recipe]:
    """Every shipped recipe, by name."""
    return [load_recipe(Path(str(entry))) for entry in sorted(recipe_folder().iterdir(), key=lambda e: e.name)
            if entry.name.endswith(".toml")]


def load_recipe(recipe: str | Path) -> Recipe:
    """A shipped recipe by name, or a recipe file (a copy of one, edited): its settings checked
    in one line naming the file and the key, as a configuration's are."""
    path = _path(recipe)
    where = str(path)
    raw = read_config(path)
    own = {key: raw.pop(key) for key in OWN_KEYS if key in raw}
    if "description" not in own:
        raise ConfigurationError(f"{where}: key 'description' is missing (one line saying what the recipe runs)")
    try:
        description = one_line(own["description"])
    except Refused as refused:
        raise ConfigurationError(f"{where}: key 'description' {refused} (one line saying what the recipe runs)") \
            from None
    kind = own.get("kind", "sweep")
    if kind not in KINDS:
        raise ConfigurationError(f"{where}: key 'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
    needs = _needs(own.get("needs", {}), where)
    extra = {key: raw.pop(key) for key in META_EVAL_KEYS if key in raw} if kind == "meta-eval" else {}
    if kind == "meta-eval":
        _refuse_unused(raw, META_EVAL_SETTINGS, where, "a meta-eval recipe")
    settings = check_settings(raw, where)
    check_variants(settings, where)
    if kind == "meta-eval":
        settings.update(_meta_eval_keys(extra, where))
    return Recipe(path.stem, description, kind, path, settings, needs)


def _path(recipe: str | Path) -> Path:
    known = {entry.name[:-len(".toml")]: Path(str(entry)) for entry in recipe_folder().iterdir()
             if entry.name.endswith(".toml")}
    if str(recipe) in known:
        return known[str(recipe)]
    path = Path(recipe)
    if path.suffix in (".toml", ".yaml", ".yml") or path.is_file():
        if not path.is_file():
            raise ConfigurationError(f"{path}: no such recipe file")
        return path
    close = difflib.get_close_matches(str(recipe), known, n=3)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise UnknownComponentError(f"Unknown recipe '{recipe}'.{hint} Available: {', '.join(sorted(known))} "
                                f"(ctrlkit recipes), or a recipe file")


def _needs(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}: key 'needs' must be a table of setting = \"hint\"")

    needs = {}
    for setting, hint in value.items():
        if setting not in SETTINGS:
            raise ConfigurationError(f"{where}: key 'needs.{setting}' names no setting")
        try:
            needs[setting] = one_line(hint)
        except Refused as refused:
            raise ConfigurationError(f"{where}: key 'needs.{setting}' {refused}") from None
    return needs


def _refuse_unused(settings: Mapping, allowed, where: str, what: str) -> None:
    extra = [key for key in settings if key not in allowed and key not in META_EVAL_KEYS]
    if extra:
        raise ConfigurationError(f"{where}: {what} takes no setting '{extra[0]}' (it takes "
                                 f"{', '.join([*allowed, *META_EVAL_KEYS])})")


def _meta_eval_keys(extra: dict, where: str) -> dict:
    if "human" not in extra:
        raise ConfigurationError(f"{where}: key 'human' is missing (the dotted path of the human score, "
                                 f"e.g. given.human)")
    try:
        human = one_line(extra["human"])
    except Refused as refused:
        raise ConfigurationError(f"{where}: key 'human' {refused} (the dotted path of the human score, "
                                 f"e.g. given.human)") from None
    try:
        compare = name_list(extra["compare"]) if "compare" in extra else []
    except Refused as refused:
        raise ConfigurationError(f"{where}: key 'compare' {refused}") from None
    return {"human": human, "compare": compare}


def given_settings(given: Mapping[str, Any]) -> dict:
    """The settings a call gave beside a recipe (None: not given), those naming things as lists."""
    given = {key: value for key, value in given.items() if value is not None}
    given.update(_name_lists(given))
    return given


def _name_lists(given: Mapping) -> dict:
    """The settings of ``given`` that name things, each as a list (a call may give one
    comma-separated string or a tuple, as :func:`ctrlkit.sweep` takes them), checked as a
    configuration's are: the recipe's settings are overlaid by list, never by letter."""
    names = {key: list(value) if isinstance(value, tuple) else value for key, value in given.items()
             if SETTINGS.get(key) is name_list}
    return check_settings(names, "sweep")


def overlaid(recipe: Recipe, given: dict) -> dict:
    """The recipe's settings with ``given`` over them; the recipe's options for components the
    result no longer names are left out. A setting the recipe needs and nobody gave is refused."""
    settings = overlay({key: value for key, value in recipe.settings.items() if key != "options"},
                       {key: value for key, value in given.items() if key != "options"})
    named = _component_names(settings)
    kept = {key: values for key, values in (recipe.settings.get("options") or {}).items() if _named(key, named)}
    settings = overlay({**settings, "options": kept}, {"options": given.get("options")})
    if not settings["options"]:
        del settings["options"]
    for setting, hint in recipe.needs.items():
        if setting not in settings:
            raise ConfigurationError(f"recipe '{recipe.name}' needs --{setting.replace('_', '-')}: {hint}")
    return settings


def _component_names(settings: Mapping) -> dict[str, set[str]]:
    """The registered names each kind of component of ``settings`` has (through its variants)."""
    named: dict[str, set[str]] = {}
    for kind, name in sweep_components(settings):
        named.setdefault(kind, set()).add(name)
    return named


def _named(key: str, named: dict[str, set[str]]) -> bool:
    try:
        kind, name = split_key(key)
    except OptionError:
        return True  # kept, and refused by the run in its own words
    return any(name in names for found, names in named.items() if kind in (None, found))


def meta_evaluate_recipe(recipe: Recipe, out: str, given: dict, progress: bool) -> list[dict]:
    """Evaluate the dataset's own predictions into ``out``, then correlate every score with the
    human one; writes meta-eval.json and table.md there."""
    from ..evaluation import evaluate
    from ..analyses.meta_evaluation import lookup, meta_evaluate, numeric_paths
    from ..analyses.system_means import means_markdown, system_means

    refused = [key for key in given if key not in META_EVAL_SETTINGS]
    if refused:
        raise ConfigurationError(f"recipe '{recipe.name}' scores the dataset's own predictions (evaluate, then "
                                 f"meta-eval), so --{refused[0].replace('_', '-')} does not apply (it takes "
                                 f"{', '.join('--' + key for key in META_EVAL_SETTINGS if key != 'options')}, --set)")
    human, compare = recipe.settings["human"], recipe.settings["compare"]
    base = {key: value for key, value in recipe.settings.items() if key not in META_EVAL_KEYS}
    settings = overlaid(Recipe(recipe.name, recipe.description, recipe.kind, recipe.path, base, recipe.needs), given)
    settings = check_settings(settings, f"recipe '{recipe.name}'")
    [dataset, *more] = settings.get("datasets", list(DEFAULT_DATASETS))
    if more:
        raise ConfigurationError(f"recipe '{recipe.name}' evaluates one dataset, got {len(more) + 1}")
    result = evaluate(dataset=dataset, data=(settings.get("data") or {}).get(dataset), split=settings.get("split"),
                      metrics=settings.get("metrics"), topics=settings.get("topics"), options=settings.get("options"),
                      judge=settings.get("judge"), limit=settings.get("limit"), out=out, progress=progress)
    held = [path for path in compare if any(lookup(row, path) is not None for row in result.samples)]
    paths = [*dict.fromkeys(path for row in result.samples for path in numeric_paths(row)), *held]
    report = meta_evaluate(result.samples, human, paths)
    settings = report["settings"]
    absent = [path for path in compare if path not in held]
    keys = {human, settings["input_key"], settings["system_key"]}
    unlisted = [path for path in dict.fromkeys(path for row in result.samples for path in numeric_paths(row, "given"))
                if path not in compare and path not in keys]
    means = None
    if settings["input_key"] is not None:
        means = system_means(result.samples, [human, *paths], input_key=settings["input_key"],
                             system_key=settings["system_key"], resamples=settings["resamples"], seed=settings["seed"])
    atomic_write_json(Path(out) / META_EVAL_FILE, {"recipe": recipe.record(), **report, "compare_absent": absent,
                                                   "compare_unlisted": unlisted,
                                                   **({"system_means": means} if means else {})})
    rows = [{"score": path, **levels} for path, levels in report["correlations"].items()]
    text = _markdown(rows, settings, absent, unlisted)
    if means:
        text += "\n" + "\n".join(means_markdown(means, [human, *paths])) + "\n"
    atomic_write_text(Path(out) / "table.md", text)
    return rows


def _markdown(rows: list[dict], settings: dict, absent: list[str], unlisted: list[str]) -> str:
    """The correlations as a Markdown table: one row per score and level, each correlation's r,
    95% interval and p; an undefined one says why. ``absent``: the compared paths no row holds;
    ``unlisted``: the numbers the data store under ``given`` that the recipe does not compare."""
    from ..correlations import CORRELATIONS

    body = []
    for row in rows:
        for level in settings["levels"]:
            result = row[level]
            n = result.get({"global": "n", "summary": "inputs", "system": "systems"}[level])
            if "undefined" in result:
                cells = [f"undefined: {result['undefined']}"] + [""] * 8
            else:
                cells = [cell for name in CORRELATIONS for cell in _cells(result[name])]
            body.append([escape_markdown(row["score"]), level, str(n), *cells])
    header = ["score", "level", "n"] + [column for name in CORRELATIONS for column in (name, "95% CI", "p")]
    lines = markdown_table(header, body, text_columns=2)
    intro = (f"Correlation with the human score {escape_markdown(settings['human'])} (n: pairs, inputs or systems; "
             f"95% CI: {settings['resamples']} BOOT-{settings['resample'].upper()} resamples, seed {settings['seed']}; "
             f"p: analytic for global, permutation within inputs for summary and system level):")
    note = ["", f"Not in these data, so not correlated: {escape_markdown(', '.join(absent))}."] if absent else []
    if unlisted:
        note += ["", f"Stored in these data but not in the recipe's compare list, so not correlated: "
                     f"{escape_markdown(', '.join(unlisted))} (ctrlkit meta-eval --score PATH correlates any of them)."]
    return "\n".join([intro, "", *lines, *note]) + "\n"


def _cells(value: dict) -> list[str]:
    """r, its interval and p (printed as runs print it, :func:`ctrlkit.statistics_text.p_value_text`)."""
    from ..statistics_text import p_value_text

    low, high = value.get("low"), value.get("high")
    return [f"{value['r']:.4f}", f"[{low:.4f}, {high:.4f}]" if None not in (low, high) else "",
            p_value_text(value) if value.get("p") is not None else ""]
