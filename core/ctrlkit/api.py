"""One call per component: ``get_metric("stas", vectorizer="embedding")``."""

from __future__ import annotations

from typing import Any, Mapping

from .components import ControllerChain
from .errors import ConfigurationError, OptionError
from .plugins import get_registry


def get_controller(spec: str, **options: Any):
    """A controller by name, or a chain ``"prepend+tag"``; for a chain, pass options per
    controller: ``get_controller("prepend+tag", tag={"top_n": 50})``."""
    return create_controller(spec, options if "+" in spec else {spec: options})


def create_controller(spec: str, options_by_name: Mapping[str, Mapping[str, Any]]):
    """A controller, or a chain ``"prepend+tag"``, each link taking its options from
    ``options_by_name[link]`` (``{"tag": {"top_n": 50}}``)."""
    names = [name.strip() for name in spec.split("+")]
    registry = get_registry("controllers")
    controllers = [registry.create(name, **options_by_name.get(name, {})) for name in names]
    return controllers[0] if len(controllers) == 1 else ControllerChain(controllers)


def get_metric(name: str, **options: Any):
    """A metric by name with its options: ``get_metric("stas", vectorizer="embedding")``."""
    return get_registry("metrics").create(name, **options)


def get_backbone(spec: str, **options: Any):
    """A backbone by name, or ``"name:ARGUMENT"`` (``hf:facebook/bart-large``), where the argument
    sets the option the backbone names in ``spec_option`` (usually the model)."""
    name, _, argument = spec.partition(":")
    registry = get_registry("backbones")
    if argument:
        option = getattr(registry.entry(name).load(registry.kind), "spec_option", None)
        if option is None:
            raise OptionError(f"backbone '{name}' takes no argument after ':' (got {spec!r})")
        if options.get(option, argument) != argument:
            raise OptionError(f"backbone '{spec}' and option '{name}.{option}={options[option]}' disagree; give one")
        options = {**options, option: argument}
    return registry.create(name, **options)


def backbone_name(spec: str) -> str:
    """``"hf:facebook/bart-large"`` -> ``"hf"``: the name its ``--set`` options use."""
    return spec.partition(":")[0]


def get_dataset(name: str, **options: Any):
    """A dataset by name with its options: ``get_dataset("newts", path="NEWTS_test_600.csv")``."""
    return get_registry("datasets").create(name, **options)


def get_vectorizer(name: str, **options: Any):
    """A topic vectorizer by name (``tfidf``, ``embedding``) with its options."""
    return get_registry("vectorizers").create(name, **options)


def get_executor(name: str, **options: Any):
    """An executor by name (``local``, ``ray``, or one a plugin registers)."""
    registry = get_registry("executors")
    if name not in registry.names():
        raise ConfigurationError(f"unknown executor {name!r}; choose one of {', '.join(registry.names())}")
    return registry.create(name, **options)
