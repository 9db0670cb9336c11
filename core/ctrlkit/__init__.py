"""ctrlkit: steer a summarizer toward a topic, an entity, keywords, a length, a readability
level or an empirical focus, and measure how well the steering worked."""

import importlib
import sys
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

_HOMES = {
    "api": ("create_controller", "get_backbone", "get_controller", "get_dataset", "get_executor", "get_metric",
            "get_vectorizer"),
    "components": ("Backbone", "Controller", "ControllerChain", "Dataset", "Executor", "Metric", "Vectorizer"),
    "errors": ("ConfigurationError", "CtrlkitError", "DatasetError", "DuplicateComponentError", "OptionError",
               "PluginLoadError", "UnknownComponentError"),
    "hookspecs": ("hookimpl",),
    "options": ("Option",),
    "types": ("SEP", "TAG", "Example", "MetricResult", "ModelInput"),
    "engine.run": ("run",),  # numpy and scikit-learn load only when a run is asked for
    "engine.recording": ("RunResult",),
    "engine.settings": ("RunSettings",),
    "evaluation": ("evaluate",),
    "training.trainer": ("train",),
    "training.settings": ("TrainSettings",),
    "sweeps.sweep": ("sweep",),
    "sweeps.recipes": ("recipes",),  # the papers' protocols; ctrlkit.sweep(recipe=NAME) runs one
    "topics": ("TopicSpace",),
}
"""The module each public name lives in. Every one loads on first use, so that importing the
package (which ``ctrlkit`` and ``python -m ctrlkit`` do before the command's own code can catch a
Ctrl-C) takes a few milliseconds, not the 150 ms of pluggy and the plugin machinery."""

__all__ = [
    "Backbone", "ConfigurationError", "Controller", "ControllerChain", "CtrlkitError", "Dataset",
    "DatasetError", "DuplicateComponentError", "Example", "Executor", "Metric", "MetricResult", "ModelInput",
    "Option", "OptionError", "PluginLoadError", "RunResult", "RunSettings", "SEP", "TAG", "TopicSpace", "TrainSettings",
    "UnknownComponentError", "Vectorizer", "create_controller", "get_backbone", "get_controller",
    "evaluate", "get_dataset", "get_executor", "get_metric", "get_vectorizer", "hookimpl", "recipes", "run",
    "sweep", "train",
]

if TYPE_CHECKING:  # what editors and type checkers read; at run time, __getattr__ below
    from .api import (create_controller, get_backbone, get_controller, get_dataset, get_executor, get_metric,
                      get_vectorizer)
    from .components import Backbone, Controller, ControllerChain, Dataset, Executor, Metric, Vectorizer
    from .errors import (ConfigurationError, CtrlkitError, DatasetError, DuplicateComponentError, OptionError,
                         PluginLoadError, UnknownComponentError)
    from .evaluation import evaluate
    from .training.settings import TrainSettings
    from .training.trainer import train
    from .hookspecs import hookimpl
    from .options import Option
    from .engine.recording import RunResult
    from .engine.run import run
    from .engine.settings import RunSettings
    from .sweeps.recipes import recipes
    from .sweeps.sweep import sweep
    from .topics import TopicSpace
    from .types import SEP, TAG, Example, MetricResult, ModelInput


def lazy_names(module: str, homes: Mapping[str, Sequence[str]]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for ``module``: each name of ``homes`` (``{"text": ("sentences",)}``,
    the homes under the ``ctrlkit`` package) is imported from its home when first asked for, then
    kept in the module like any other name. It lives here, not in a module of its own, because
    importing the package loads none of its modules (:mod:`ctrlkit.plugin_api` uses it too)."""
    home_of = {name: home for home, names in homes.items() for name in names}
    namespace = vars(sys.modules[module])

    def __getattr__(name):
        home = home_of.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"ctrlkit.{home}"), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(home_of))

    return __getattr__, __dir__


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
