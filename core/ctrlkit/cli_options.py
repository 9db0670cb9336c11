"""Command-line options that several commands share, and the Ray executor's, declared once so that
they read alike and cli.py stays a parser."""

import click

from .uncertainty import DEFAULT_RESAMPLES

DATASET = click.option("-d", "--dataset", default="sample", show_default=True,
                       help="Dataset name (see: ctrlkit list datasets).")
DATA = click.option("--data", help="File or folder the dataset reads (its 'path' option).")
SPLIT = click.option("--split", help="Dataset split (default: the dataset's own default).")
TOPICS = click.option("--topics", type=click.Path(dir_okay=False),
                      help='JSONL of {"topic": ..., "text": ...} defining the topics (default: the dataset\'s).')
SET = click.option("--set", "assignments", multiple=True, metavar="COMPONENT.OPTION=VALUE",
                   help="Set a component option, e.g. --set tag.top_n=50 (repeatable). Where two components "
                        "of the run share a name and both take the option, name the kind too: "
                        "--set dataset:hf.path=DIR, --set backbone:hf.device=cpu.")
JUDGE = click.option("--judge", help="Backbone that judge metrics (fm, focus) ask, e.g. openai:gpt-4o.")
LIMIT = click.option("--limit", type=click.IntRange(min=1), help="Use only the first N examples.")
SAMPLE = click.option("--sample", type=click.IntRange(min=1),
                      help="Use N examples drawn at random with the seed; not with --limit.")
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
BATCH_SIZE = click.option("--batch-size", type=click.IntRange(min=1), default=16, show_default=True,
                          help="Inputs per generation batch.")
BOOTSTRAP = click.option("--bootstrap", type=click.IntRange(min=0), default=DEFAULT_RESAMPLES, show_default=True,
                         metavar="N", help="Bootstrap resamples for each corpus value's 95% interval, and with a "
                                           "baseline the paired difference's interval and permutation p-value; "
                                           "examples sharing a document are resampled together. 0 skips them.")
STRICT_CONTROLS = click.option("--strict-controls", is_flag=True,
                               help="Refuse the run when any example lacks a control a component reads "
                                    "(default: such examples are left uncontrolled, or unscored, and counted).")
ONLY_TOPICS = click.option("--only-topics", metavar="A,B",
                           help="Keep only the examples whose topic or topic_id is one of these (comma-separated), "
                                "before --limit: zero-shot evaluation on the topics a model was trained without "
                                "(train --holdout-topics). NEWTS topics are word lists holding commas: name them "
                                "by topic_id.")
TOPIC_SOURCE_HELP = ("Requested topic: oracle (the gold topic) or topK (top1, top3): each document's K topics "
                     "nearest to it in the tf-idf topic space, K examples per document, each scored against its "
                     "own topic; reference metrics score only those with a reference for it.")
