"""The settings a sweep configuration file may hold, each checked for its type and range.

A file is written by hand, so it gets the forms the command line takes (``controllers =
"none,tag"`` as well as a list) and, for anything else, one line naming the file and the key,
before any work: a string iterated letter by letter, ``limit = -5`` silently dropping rows or a
``true`` taken for 1 would each give a table that looks right and is not.
"""

from __future__ import annotations

import difflib
import math
import re
from typing import Any, Callable, Mapping

from ..api import backbone_name
from ..component_options import split_key
from ..errors import ConfigurationError, OptionError
from ..engine.assembly import DEFAULT_METRICS, component_names
from ..engine.settings import MAX_SEED
from ..plugins import get_registry
from ..secrets import MASK, is_secret
from .variants import AXES

DEFAULT_DATASETS = ("sample",)  # what ctrlkit.sweep runs when no datasets are given
DEFAULT_BACKBONES = ("extractive",)  # and when no backbones are given
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class Refused(Exception):
    """A value that does not fit; the caller adds the file and the key (``below``: the part of the
    key under the setting, such as ``.tag.top_n`` in ``options``)."""

    def __init__(self, message: str, below: str = ""):
        super().__init__(message)
        self.below = below


def one_line(value: Any) -> str:
    if not isinstance(value, str):
        raise Refused(f"must be a string, got {_kind(value)}")
    if not value.strip():
        raise Refused("must not be empty")
    if _UNPRINTABLE.search(value):
        raise Refused(f"must be one line of printable text, got {_shown(value)}")
    return value.strip()


def name_list(value: Any) -> list[str]:
    """A list of names, or one string of comma-separated names as ``--controllers`` takes them."""
    if isinstance(value, str):
        value = [item for item in value.split(",") if item.strip()]
    elif not isinstance(value, list):
        raise Refused(f"must be a list of names or a comma-separated string, got {_kind(value)}")
    if not value:
        raise Refused("must name at least one")
    names = []
    for position, item in enumerate(value, 1):
        try:
            names.append(one_line(item))
        except Refused as refused:
            raise Refused(f"(item {position}) {refused}") from None
    return names


def _whole(minimum: int, maximum: int | None = None) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise Refused(f"must be a whole number, got {_kind(value)}")
        if value < minimum or (maximum is not None and value > maximum):
            bounds = f"from {minimum} to {maximum}" if maximum is not None else f"at least {minimum}"
            raise Refused(f"must be {bounds}, got {value}")
        return value
    return check


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise Refused(f"must be true or false, got {_kind(value)}")
    return value


def _options(value: Any) -> dict[str, dict[str, Any]]:
    """``{component: {option: value}}``, each value a string, number or true/false."""
    if not isinstance(value, dict):
        raise Refused(f"must be a table of components, got {_kind(value)}")
    checked = {}
    for component, options in value.items():
        name = _key(component)
        if not isinstance(options, dict):
            raise Refused(f"must be a table of options, got {_kind(options)}", f".{name}")
        checked[name] = _values(options, f".{name}")
    return checked


def _values(options: dict, above: str) -> dict[str, Any]:
    """``{option: value}``, each value a string, number or true/false (``above``: the key it is under)."""
    checked = {}
    for option, setting in options.items():
        below = f"{above}.{_key(option)}"
        secret = is_secret(_key(option))  # an error is printed and shared: a key is never shown
        if isinstance(setting, float) and not math.isfinite(setting):
            raise Refused(f"must be a finite number, got {MASK if secret else setting}", below)
        if not isinstance(setting, (str, int, float)):  # bool is an int
            raise Refused(f"must be a string, number or true/false, got "
                           f"{'a value' if secret else _kind(setting)}", below)
        if isinstance(setting, str) and _UNPRINTABLE.search(setting):
            raise Refused(f"must be one line of printable text, got {MASK if secret else _shown(setting)}", below)
        checked[_key(option)] = setting
    return checked


VARIANT_KEYS = ("of", "options")
VARIANT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
"""A variant is named where a component would be, and names its cells' folders: no comma (a list),
``+`` (a chain), ``:`` (a backbone's argument), space or other character a folder name would change."""


def _variants(value: Any) -> dict[str, dict[str, Any]]:
    """``{name: {"of": component, "options": {...}}}``: the options of one component as
    ``{option: value}``, of a chain of controllers (``of = "prepend+tag"``) per link as
    ``{link: {option: value}}``. The components are checked against the registries later
    (:func:`ctrlkit.sweeps.variants.check_variants`)."""
    if not isinstance(value, dict):
        raise Refused(f"must be a table of variants, got {_kind(value)}")
    checked = {}
    for key, variant in value.items():
        name = _key(key)
        if not VARIANT_NAME.fullmatch(name):
            raise Refused("is not a variant's name: ASCII letters, digits, '-', '_' and '.' (it is named where a component "
                           "would be, and names its cells' folders)", f".{name}")
        if not isinstance(variant, dict):
            raise Refused(f"must be a table with 'of' and 'options', got {_kind(variant)}", f".{name}")
        unknown = [item for item in variant if item not in VARIANT_KEYS]
        if unknown:
            raise Refused(f"is not a key of a variant (keys: {', '.join(VARIANT_KEYS)})",
                           f".{name}.{_key(unknown[0])}")
        if "of" not in variant:
            raise Refused("is missing: the component the variant runs, e.g. of = \"prompt\"", f".{name}.of")
        try:
            of = one_line(variant["of"])
        except Refused as refused:
            raise Refused(str(refused), f".{name}.of") from None
        links = component_names(of)
        options = variant.get("options", {})
        if not isinstance(options, dict):
            raise Refused(f"must be a table of options, got {_kind(options)}", f".{name}.options")
        if len(links) == 1:
            checked[name] = {"of": of, "options": _values(options, f".{name}.options")}
            continue
        per_link = {}
        for link, values in options.items():
            below = f".{name}.options.{_key(link)}"
            if _key(link) not in links:
                raise Refused(f"names no link of the chain '{of}'; the options of a chain are given per link, "
                               f"e.g. options = {{ {links[-1]} = {{ ... }} }}", below)
            if not isinstance(values, dict):
                raise Refused(f"must be a table of the options of '{_key(link)}', got {_kind(values)}", below)
            per_link[_key(link)] = _values(values, below)
        checked[name] = {"of": of, "options": per_link}
    return checked


def _data(value: Any) -> dict[str, str] | str:
    """``{dataset: path}``, or one path for a sweep of one dataset (resolved in :func:`check_settings`)."""
    if isinstance(value, str):
        return one_line(value)
    if not isinstance(value, dict):
        raise Refused(f"must be a path or a table of dataset = path, got {_kind(value)}")
    paths = {}
    for dataset, path in value.items():
        try:
            paths[_key(dataset)] = one_line(path)
        except Refused as refused:
            raise Refused(str(refused), f".{_key(dataset)}") from None
    return paths


def _key(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or _UNPRINTABLE.search(value):
        raise Refused(f"has a key that is not a name: {_shown(value)}")
    return value.strip()


SETTINGS: dict[str, Callable[[Any], Any]] = {
    "controllers": name_list, "metrics": name_list, "backbones": name_list, "datasets": name_list, "data": _data,
    "split": one_line, "topics": one_line, "only_topics": name_list, "topic_source": one_line, "options": _options,
    "judge": one_line, "limit": _whole(1), "sample": _whole(1), "seed": _whole(0, MAX_SEED), "batch_size": _whole(1),
    "baseline": one_line, "device": one_line, "cache": _flag, "variants": _variants, "reference": one_line,
    "reference_backbone": one_line, "bootstrap": _whole(0),
}


def check_settings(settings: Mapping, where: str) -> dict:
    """``settings`` with each value in its one form (lists of names, ``{dataset: path}``), or a
    :class:`ConfigurationError` naming ``where`` (the file) and the key. A null value is left out."""
    checked = {}
    for key, value in settings.items():
        if key not in SETTINGS:
            close = difflib.get_close_matches(str(key), SETTINGS, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            raise ConfigurationError(f"{where}: unknown setting {_shown(key)}.{hint} Known: {', '.join(SETTINGS)}")
        if value is None:
            continue
        try:
            checked[key] = SETTINGS[key](value)
        except Refused as refused:
            raise ConfigurationError(f"{where}: setting '{key}{refused.below}' {refused}") from None
    if "limit" in checked and "sample" in checked:
        raise ConfigurationError(f"{where}: settings 'limit' and 'sample' cannot both be given: sample draws N "
                                 f"random examples, limit takes the first N")
    datasets = checked.get("datasets", list(DEFAULT_DATASETS))
    # a dataset variant reads the file given for it, else the one given for its component
    components = {(checked.get("variants") or {}).get(name, {}).get("of", name) for name in datasets}
    if isinstance(checked.get("data"), str):
        if len(datasets) != 1 and len(components) != 1:
            raise ConfigurationError(f"{where}: setting 'data' is one path but the sweep has {len(datasets)} "
                                     f"datasets; write data = {{ DATASET = \"PATH\" }} (--data DATASET=PATH)")
        checked["data"] = {datasets[0] if len(datasets) == 1 else next(iter(components)): checked["data"]}
    unused = [name for name in checked.get("data", {}) if name not in datasets and name not in components]
    if unused and "datasets" in checked:
        raise ConfigurationError(f"{where}: setting 'data' names dataset '{unused[0]}', which the sweep does not "
                                 f"run (datasets: {', '.join(datasets)})")
    return checked


def sweep_components(settings: Mapping) -> list[tuple[str, str]]:
    """Every component that checked ``settings`` name, through their variants and the defaults: the
    datasets, the backbones (the judge too), the controllers' links (the baseline's too), the
    metrics and every installed topic vectorizer (which ones a cell uses is known only once its
    controller and metrics are made). The options a sweep is given must each fit one of them."""
    variants = settings.get("variants") or {}

    def specs(kind: str, default=()) -> list[str]:
        return [variants[name]["of"] if name in variants else name for name in settings.get(kind) or default]

    judge, baseline = settings.get("judge"), settings.get("baseline")
    return [*(("datasets", spec) for spec in specs("datasets", DEFAULT_DATASETS)),
            *(("backbones", backbone_name(spec)) for spec in [*specs("backbones", DEFAULT_BACKBONES),
                                                              *([judge] if judge else [])]),
            *(("controllers", name) for spec in [*specs("controllers"), *([baseline] if baseline else [])]
              for name in component_names(spec)),
            *(("metrics", name) for name in settings.get("metrics") or DEFAULT_METRICS),
            *(("vectorizers", name) for name in get_registry("vectorizers").names())]


EXCLUSIVE = ("limit", "sample")
"""Two ways to choose the examples: one given over a file replaces the file's choice, whichever it was."""


def overlay(base: Mapping, given: Mapping) -> dict:
    """The settings of a file (``base``: a configuration or recipe) with those ``given`` (the
    command line's, a call's) over them: a given value replaces the file's; ``options`` are
    merged option by option, so ``--set tag.top_n=5`` keeps the file's other options, and win over
    the file's variants too (a given option is taken out of every variant of that component, so
    ``--set prompt.shots=5`` reaches a recipe's few-shot row); a given ``limit`` or ``sample``
    replaces the file's ``limit`` and ``sample`` both. None is not given."""
    given = {key: value for key, value in given.items() if value is not None}
    settings = dict(base)
    if isinstance(given.get("options"), Mapping) and isinstance(settings.get("variants"), Mapping) \
            and "variants" not in given:
        settings["variants"] = _yielding(settings["variants"], given["options"], settings)
    if any(key in given for key in EXCLUSIVE):
        for key in EXCLUSIVE:
            settings.pop(key, None)
    for key, value in given.items():
        if key == "options" and isinstance(settings.get(key), Mapping) and isinstance(value, Mapping):
            merged = {name: dict(values) for name, values in settings[key].items()}
            for name, values in value.items():
                merged[name] = {**merged.get(name, {}), **values}
            value = merged
        settings[key] = value
    return settings


def _yielding(variants: Mapping, given: Mapping, settings: Mapping) -> dict:
    """``variants`` without the options ``given`` sets for their components (``{key: {option:
    value}}``, a key a plain or qualified component name): those then come from the sweep's
    options, where the given value is."""
    kinds = {name: kind for kind in AXES for name in settings.get(kind) or () if name in variants}
    given_for = {}
    for key, values in given.items():
        try:
            kind, name = split_key(key)
        except OptionError:
            continue  # refused later, in the run's own words
        given_for.setdefault(name, []).append((kind, set(values)))
    yielded = {}
    for name, variant in variants.items():
        of, options = variant["of"], variant["options"]
        links = component_names(of)
        chain = len(links) > 1
        if not chain:  # a backbone's options are set by its name without its argument (hf:PATH: hf)
            links = list(dict.fromkeys([links[0], backbone_name(links[0])]))

        def overridden(link: str) -> set:
            return {option for kind, options_given in given_for.get(link, ()) if kind in (None, kinds.get(name, kind))
                    for option in options_given}

        if chain:
            options = {link: {option: value for option, value in values.items() if option not in overridden(link)}
                       for link, values in options.items()}
        else:
            taken = set().union(*(overridden(link) for link in links))
            options = {option: value for option, value in options.items() if option not in taken}
        yielded[name] = {**variant, "options": options}
    return yielded


def _kind(value: Any) -> str:
    """A wrong value as the file shows it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return f"the string {_shown(value)}"
    return {list: "a list", dict: "a table"}.get(type(value), f"a {type(value).__name__} ({_shown(str(value))})")


def _shown(text: Any) -> str:
    """``text`` quoted on one line, cut at 60 characters."""
    text = repr(str(text))
    return text if len(text) <= 60 else text[:56] + "...'"
