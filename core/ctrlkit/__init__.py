"""ctrlkit: steer a summarizer toward a topic, an entity, keywords, a length, a readability
level or an empirical focus, and measure how well the steering worked."""

from .api import create_controller, get_backbone, get_controller, get_dataset, get_metric, get_vectorizer
from .components import Backbone, Controller, ControllerChain, Dataset, Metric, Vectorizer
from .errors import (
    ConfigurationError,
    CtrlkitError,
    DatasetError,
    DuplicateComponentError,
    OptionError,
    PluginLoadError,
    UnknownComponentError,
)
from .hookspecs import hookimpl
from .options import Option
from .types import SEP, TAG, Example, MetricResult, ModelInput

__all__ = [
    "Backbone", "ConfigurationError", "Controller", "ControllerChain", "CtrlkitError", "Dataset",
    "DatasetError", "DuplicateComponentError", "Example", "Metric", "MetricResult", "ModelInput",
    "Option", "OptionError", "PluginLoadError", "RunResult", "SEP", "TAG", "TopicSpace",
    "UnknownComponentError", "Vectorizer", "create_controller", "get_backbone", "get_controller",
    "evaluate", "get_dataset", "get_metric", "get_vectorizer", "hookimpl", "recipes", "run",
]


def __dir__():
    # run, evaluate, recipes, RunResult and TopicSpace load on first use (below), yet are part of the module
    return sorted(set(globals()) | set(__all__))


def __getattr__(name):
    # numpy and scikit-learn load only when a run or a topic space is asked for
    if name in ("run", "RunResult"):
        from . import pipeline

        return getattr(pipeline, name)
    if name == "evaluate":
        from .evaluation import evaluate

        return evaluate
    if name == "recipes":  # the papers' protocols (ctrlkit.recipe); ctrlkit.sweep.sweep(recipe=NAME) runs one
        from .recipe import recipes

        return recipes
    if name == "TopicSpace":
        from .topics import TopicSpace

        return TopicSpace
    raise AttributeError(f"module 'ctrlkit' has no attribute {name!r}")
