"""Sweep variants: one registered component with other options, as a cell of its own.

    controllers = ["zero-shot", "few-shot", "hard"]
    [variants.few-shot]
    of = "prompt"
    options = { template = "few-shot", shots = 3 }

A variant is named where a component would be (``controllers``, ``backbones``, ``datasets``);
its cells run the component ``of`` names (a chain of controllers too, ``of = "prepend+tag"``, its
options then given per link: ``options = { tag = { top_n = 50 } }``; a backbone with its
argument, ``of = "hf:facebook/bart-large"``), with the sweep's ``options`` for that component
overridden by the variant's own. Its name labels its cells (the folder, the table's row) and the
cell's results.json records what it ran under ``config.variants``. Without variants, the same
component with two settings would need two sweeps, and two tables where the paper prints one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..api import backbone_name
from ..component_options import Component, RunOptions, qualified
from ..errors import ConfigurationError, CtrlkitError
from ..options import resolve_options
from ..engine.assembly import component_names
from ..plugins import get_registry

AXES = {"controllers": "controller", "backbones": "backbone", "datasets": "dataset"}
"""The settings a variant may be named in, and what one of their items is called."""


@dataclass(frozen=True)
class Entry:
    """One item of a sweep's controllers, backbones or datasets: its ``label`` (as given: the
    table's name for it), the component ``spec`` a run gets, and, for a variant, the options that
    override the sweep's (``{(kind, name): {option: value}}``) and what results.json records."""

    label: str
    spec: str
    overrides: dict = field(default_factory=dict)
    record: dict | None = None


def entries(kind: str, names: Sequence[str], variants: Mapping[str, dict]) -> list[Entry]:
    """The items of setting ``kind`` (``"controllers"``), each resolved through ``variants``."""
    found = []
    for name in names:
        variant = variants.get(name)
        if variant is None:
            found.append(Entry(name, name))
            continue
        found.append(Entry(name, variant["of"], _overrides(kind, variant),
                           {"name": name, "of": variant["of"], "options": variant["options"]}))
    return found


def _overrides(kind: str, variant: dict) -> dict:
    links = _links(kind, variant["of"])
    if len(links) == 1:
        return {(kind, links[0]): dict(variant["options"])} if variant["options"] else {}
    return {(kind, link): dict(values) for link, values in variant["options"].items() if values}


def _links(kind: str, spec: str) -> list[str]:
    """The registered names a spec runs: a chain's links, a backbone's name without its argument."""
    if kind == "controllers":
        return component_names(spec)
    return [backbone_name(spec) if kind == "backbones" else spec]


def cell_options(options: Mapping, components: Sequence[Component], cell: Sequence[Entry]) -> dict:
    """The options a cell's run gets: the sweep's ``options``, and where an entry of the ``cell``
    is a variant, its options over the sweep's for its component. A cell without a variant gets
    the sweep's options as they are; one with a variant gets every component's options
    (``components``: those of the cell) under its qualified name, so an override replaces the
    sweep's value whatever key the sweep gave it under."""
    overrides = {component: values for entry in cell for component, values in entry.overrides.items()}
    if not overrides:
        return dict(options)
    routed = RunOptions(options, [*components, *overrides], strict=False)
    merged = {component: {**routed.of(*component), **overrides.get(component, {})}
              for component in routed.components}
    return {qualified(component): values for component, values in merged.items() if values}


def recorded(cell: Sequence[Entry]) -> dict:
    """``config.variants`` of a cell's results.json: per axis that is a variant, what it ran."""
    return {AXES[kind]: entry.record for kind, entry in zip(AXES, cell) if entry.record is not None}


def check_variants(settings: Mapping[str, Any], where: str) -> None:
    """Refuse, in one line naming ``where`` and the key, a variant named as a registered component,
    one whose ``of`` is no component of the kind it is used as (or of any kind it could be), one
    with an option its component does not take, one named as the baseline or as a link of a
    chain, and one used as two kinds."""
    variants = settings.get("variants") or {}
    used = {kind: list(settings.get(kind) or ()) for kind in AXES}
    registries = {kind: get_registry(kind) for kind in AXES}
    for spec in used["controllers"]:
        links = _links("controllers", spec)
        inside = [link for link in links if link in variants] if len(links) > 1 else []
        if inside:
            raise ConfigurationError(f"{where}: setting 'controllers': the chain '{spec}' has the variant "
                                     f"'{inside[0]}' as a link; a variant is a whole controller: give it of = \"{spec}\" with the "
                                     f"variant's options for its links")
    if settings.get("baseline") in variants:
        raise ConfigurationError(f"{where}: setting 'baseline' names the variant '{settings['baseline']}'; the "
                                 f"baseline is a registered controller (name the variant among the controllers for "
                                 f"a row of its own)")
    for name, variant in variants.items():
        key = f"variants.{name}"
        taken = [AXES[kind] for kind, registry in registries.items() if name in registry.names()]
        if taken:
            raise ConfigurationError(f"{where}: setting '{key}': '{name}' is a registered {taken[0]}; give the "
                                     f"variant a name of its own")
        kinds = [kind for kind in AXES if name in used[kind]]
        if len(kinds) > 1:
            raise ConfigurationError(f"{where}: setting '{key}' is named as a {AXES[kinds[0]]} and as a "
                                     f"{AXES[kinds[1]]}; a variant is one component")
        if not kinds:  # not run by this sweep (a recipe's, replaced on the command line): of some kind
            kinds = [kind for kind in AXES if all(link in registries[kind].names()
                                                  for link in _links(kind, variant["of"]))][:1]
            if not kinds:
                raise ConfigurationError(f"{where}: setting '{key}.of': '{variant['of']}' is no registered "
                                         f"controller, backbone or dataset")
        _check_variant(kinds[0], key, variant, registries[kinds[0]], where)


def _check_variant(kind: str, key: str, variant: dict, registry, where: str) -> None:
    """``variant['of']`` names components of ``kind`` that take its options."""
    links = _links(kind, variant["of"])
    if len(links) > 1 and kind != "controllers":
        raise ConfigurationError(f"{where}: setting '{key}.of': '{variant['of']}' is a chain, and only "
                                 f"controllers chain")
    for link in links:
        try:
            factory = registry.entry(link).load(registry.kind)
        except CtrlkitError as exc:
            raise ConfigurationError(f"{where}: setting '{key}.of': {exc}") from None
        given = variant["options"] if len(links) == 1 else variant["options"].get(link, {})
        try:
            resolve_options(link, getattr(factory, "options", ()), given)
        except CtrlkitError as exc:
            below = ".options" if len(links) == 1 else f".options.{link}"
            raise ConfigurationError(f"{where}: setting '{key}{below}': {exc}") from None
