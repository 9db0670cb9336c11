"""Command-line options that several commands share, and the Ray executor's, declared once so that
they read alike and cli.py stays a parser. An option that sets a field of :class:`RunSettings`
takes its name, default and help from the field (:func:`setting_option`)."""

from dataclasses import MISSING

import click

from .engine.settings import RunSettings, Settings


def setting_option(name: str, *flags: str, of: type[Settings] = RunSettings, **extra):
    """The option for the field ``name`` of the settings class ``of`` (``--batch-size`` for
    ``batch_size`` unless ``flags`` say otherwise), with the field's default and help; a field
    without a default is a required option."""
    default = of.default(name)
    if default is False:
        extra.setdefault("is_flag", True)
    elif default is not None:
        extra.setdefault("default", default)
        extra.setdefault("show_default", True)
    elif of.__dataclass_fields__[name].default is MISSING:
        extra.setdefault("required", True)
    return click.option(*(flags or ["--" + name.replace("_", "-")]), name, help=of.help(name), **extra)


DATASET = setting_option("dataset", "-d", "--dataset")
DATA = setting_option("data")
SPLIT = setting_option("split")
TOPICS = setting_option("topics", type=click.Path(dir_okay=False))
SET = click.option("--set", "assignments", multiple=True, metavar="COMPONENT.OPTION=VALUE",
                   help="Set a component option, e.g. --set tag.top_n=50 (repeatable). Where two components "
                        "of the run share a name and both take the option, name the kind too: "
                        "--set dataset:hf.path=DIR, --set backbone:hf.device=cpu.")
JUDGE = setting_option("judge")
LIMIT = setting_option("limit", type=click.IntRange(min=1))
SAMPLE = setting_option("sample", type=click.IntRange(min=1))
DEVICE = click.option("--device", help="Torch device for a neural backbone (cpu, cuda, cuda:1); default: CUDA when present.")
SKIP_INVALID = click.option("--skip-invalid", is_flag=True,
                            help="Leave out invalid dataset rows (counted) instead of stopping.")


def _executor(on_ray: str):
    return click.option("--executor", metavar="NAME", default="local", show_default=True,
                        help="Where the work runs: local (here), ray (a Ray cluster; pip install 'ctrlkit[ray]'), "
                             "or a plugin's (ctrlkit list executors). On Ray: " + on_ray)


RUN_EXECUTOR = _executor("the summaries are generated there, data-parallel on --workers; scoring and outputs "
                         "stay here, and the results are the same.")
SWEEP_EXECUTOR = _executor("each cell is a task there, several at a time, written here as it finishes (here: "
                           "one after another). The results are the same either way; a sweep begun with one "
                           "resumes with the other.")
WORKERS = click.option("--workers", type=click.IntRange(min=1), metavar="N",
                       help="With --executor ray: Ray workers generating at once, each holding one backbone on a "
                            "CPU, or on a GPU for a CUDA model; the examples are shared among them by a hash of "
                            "their id [default: 1].")
RAY_ADDRESS = click.option("--address", metavar="HOST:PORT",
                           help="With --executor ray: the Ray cluster (the address ray start --head prints) "
                                "[default: $RAY_ADDRESS, else a new local Ray instance].")
NO_CACHE = click.option("--no-cache", is_flag=True,
                        help="Generate (and judge) everything again, never touching the shared cache.")
BATCH_SIZE = setting_option("batch_size", type=click.IntRange(min=1))
BOOTSTRAP = setting_option("bootstrap", type=click.IntRange(min=0), metavar="N")
STRICT_CONTROLS = setting_option("strict_controls")
ONLY_TOPICS = setting_option("only_topics", metavar="A,B")
TOPIC_SOURCE_HELP = RunSettings.help("topic_source")
