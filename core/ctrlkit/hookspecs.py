"""The hooks a ctrlkit plugin can implement. Each receives a callback and returns nothing."""

from pluggy import HookimplMarker, HookspecMarker

hookspec = HookspecMarker("ctrlkit")
hookimpl = HookimplMarker("ctrlkit")
"""Marks a plugin's function as the implementation of the hook of the same name:
``@hookimpl`` above ``def register_controllers(register): ...``."""


@hookspec
def register_controllers(register):
    """Register controllers: ``register("tag", TagController)`` or ``register("tag", "pkg.mod:Tag")``."""


@hookspec
def register_metrics(register):
    """Register metrics: ``register("stas", "pkg.mod:Stas")``."""


@hookspec
def register_datasets(register):
    """Register datasets: ``register("newts", "pkg.mod:Newts")``."""


@hookspec
def register_backbones(register):
    """Register backbones (summarizers, also usable as judges)."""


@hookspec
def register_topic_vectorizers(register):
    """Register topic vectorizers, the text representations a TopicSpace is built on."""


@hookspec
def register_executors(register):
    """Register executors, where a run's generation and a sweep's cells run: ``register("slurm",
    "pkg.mod:SlurmExecutor")`` for a subclass of ``ctrlkit.Executor``."""


@hookspec
def register_commands(cli):
    """Add commands to the ``ctrlkit`` click group: ``@cli.command() def mycmd(): ...``."""
