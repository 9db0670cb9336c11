"""Commands the datasets plugin adds to ``ctrlkit``: ``ctrlkit data ...`` builds new datasets from
installed ones, written as JSONL that the ``jsonl`` dataset reads back, and counts what a dataset
holds (``ctrlkit data stats``)."""

import json

import click

import ctrlkit
from ctrlkit.plugin_api import RunOptions, split_key
from ctrlkit.plugin_api import parse_assignments


@ctrlkit.hookimpl
def register_commands(cli):
    @cli.group("data")
    def data():
        """Build training data from a dataset, or count what it holds."""

    @data.command("topic-mix")
    @click.option("-d", "--dataset", default="sample", show_default=True,
                  help="Topic-labelled dataset with references (see: ctrlkit list datasets).")
    @click.option("--data", "path", help="File the dataset reads (its 'path' option).")
    @click.option("--split", help="Dataset split [default: train; a file that is itself one split, such as "
                                  "MACSum's val.json, or a dataset without splits: all of it].")
    @click.option("--set", "assignments", multiple=True, metavar="DATASET.OPTION=VALUE",
                  help="Set a dataset option, e.g. --set newts.topic_label=id (repeatable).")
    @click.option("-o", "--out", required=True, type=click.Path(dir_okay=False), help="JSONL file to write.")
    @click.option("--seed", type=int, default=0, show_default=True, help="Seed of the pairing.")
    @click.option("--topics-from", type=click.Choice(["gold", "words"]), default="gold", show_default=True,
                  help="gold: the dataset's topic labels; words: the topic whose vocabulary the article's "
                       "words hit most (the paper's assignment), dropping ties.")
    @click.option("--vocabulary", type=click.Path(dir_okay=False),
                  help="CSV of topic vocabularies, one column of words per topic named in the header "
                       "(with --topics-from words) [default: the examples' topic_words].")
    def topic_mix_command(dataset, path, split, assignments, out, seed, topics_from, vocabulary):
        """Super-articles interleaving two articles on different topics, each paired with either
        article's summary and topic (Passali & Tsoumakas); read them back with --dataset jsonl.
        Examples without a topic are left out and counted."""
        from .topic_mix import topic_mix

        mix = topic_mix(out, dataset, path, split, _dataset_options(assignments, dataset), seed, topics_from,
                        vocabulary)
        used = 2 * len(mix.pairs)
        if mix.skipped:
            click.echo(f"{mix.skipped} invalid rows skipped")
        if mix.assignment is not None:
            click.echo(mix.assignment.summary())
        click.echo(f"{used + len(mix.unpaired)} articles, {used} used in {len(mix.pairs)} pairs: "
                   f"{used} examples in {out}")
        for topics, count in mix.unpaired_by_topics().items():
            click.echo(f"unpaired on {topics}: {count}")

    @data.command("stats")
    @click.option("-d", "--dataset", default="sample", show_default=True,
                  help="Dataset to count (see: ctrlkit list datasets).")
    @click.option("--data", "path", help="File or folder the dataset reads (its 'path' option).")
    @click.option("--split", help="Only this split (default: every split the dataset has).")
    @click.option("--set", "assignments", multiple=True, metavar="DATASET.OPTION=VALUE",
                  help="Set a dataset option, e.g. --set ccsbench.length_unit=words (repeatable).")
    @click.option("--skip-invalid", is_flag=True, help="Leave out invalid rows (counted) instead of stopping.")
    @click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
    def stats_command(dataset, path, split, assignments, skip_invalid, as_json):
        """Examples per subset and split, and how many carry references and each control
        (for CCSBench: rows per subset folder and split, as in the paper's Table 1)."""
        from .stats import dataset_stats, format_stats

        options = _dataset_options(assignments, dataset)
        if skip_invalid:
            options["skip_invalid"] = True
        stats = dataset_stats(dataset, path, [split] if split is not None else None, **options)
        click.echo(json.dumps(stats, indent=2, ensure_ascii=False) if as_json else format_stats(stats))


def _dataset_options(assignments, dataset: str) -> dict:
    """The ``--set`` options of ``dataset`` (as ``NAME.OPTION`` or ``dataset:NAME.OPTION``); any
    other component's are refused, as only the dataset takes part."""
    options = parse_assignments(assignments)
    for key in options:
        kind, name = split_key(key)
        if name != dataset or kind not in (None, "datasets"):
            raise ctrlkit.OptionError(f"--set {key}.*: only options of dataset '{dataset}' apply here")
    return RunOptions(options, [("datasets", dataset)]).of("datasets", dataset)
