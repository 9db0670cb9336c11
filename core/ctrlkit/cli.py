"""The ``ctrlkit`` command: parses arguments and calls the library."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .cli_options import (BATCH_SIZE, BOOTSTRAP, DATA, DATASET, DEVICE, JUDGE, LIMIT, NO_CACHE, ONLY_TOPICS,
                          RAY_ADDRESS, RUN_EXECUTOR, SAMPLE, SET, SKIP_INVALID, SPLIT, STRICT_CONTROLS, SWEEP_EXECUTOR,
                          TOPIC_SOURCE_HELP, TOPICS, WORKERS, setting_option)
from .component_options import NOUNS, kind_of, qualified
from .errors import CtrlkitError
from .interrupted import exit_interrupted
from .markdown import visible
from .options import parse_assignments
from .outputs import output_folder
from .plugins import KINDS, add_plugin_commands, get_registry
from .progress import visible_output
from .training.schedules import SCHEDULES
from .training.settings import TrainSettings


class CtrlkitGroup(click.Group):
    """Adds plugin commands on first use and turns library errors into one-line messages."""

    _plugin_commands_added = False

    def _add_plugin_commands(self, ctx):
        if not CtrlkitGroup._plugin_commands_added:
            CtrlkitGroup._plugin_commands_added = True
            try:
                add_plugin_commands(self)
            except CtrlkitError as exc:
                raise click.ClickException(str(exc)) from None

    def list_commands(self, ctx):
        self._add_plugin_commands(ctx)
        return super().list_commands(ctx)

    def get_command(self, ctx, name):
        self._add_plugin_commands(ctx)
        return super().get_command(ctx, name)

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except click.ClickException as exc:  # a value given on the command line, quoted back
            exc.message = visible(exc.message)
            raise
        except KeyboardInterrupt:  # while the arguments are parsed: click would print "Aborted!" and exit 1
            exit_interrupted()

    def invoke(self, ctx):
        """Runs the command with its output shown as its tables are (``visible_output``); an error
        is one line, shown the same way, since it may quote a server or a name from data."""
        try:
            from .quiet import verbose

            with visible_output(stderr=not (ctx.params.get("verbose") or verbose())):
                return super().invoke(ctx)
        except CtrlkitError as exc:
            raise click.ClickException(visible(str(exc))) from None
        except click.ClickException as exc:
            exc.message = visible(exc.message)
            raise
        except KeyboardInterrupt:  # click's own handling would print "Aborted!" and exit 1
            exit_interrupted()


@click.group(cls=CtrlkitGroup)
@click.version_option(package_name="ctrlkit")
@click.option("-v", "--verbose", is_flag=True,
              help="Let the libraries ctrlkit drives print their own logs and progress bars (llama.cpp's loading "
                   "log, transformers' warnings); ctrlkit keeps them quiet otherwise.")
def cli(verbose):
    """Controllable summarization: steer a summarizer with a controller, measure it with metrics.

    \b
    ctrlkit run --controller tag --metric stas     run on the bundled sample
    ctrlkit list                                   what is installed, with options
    ctrlkit recipes                                papers' protocols: ctrlkit sweep --recipe NAME
    ctrlkit plugins                                installed plugin distributions
    """
    if verbose:
        import os

        from .quiet import VERBOSE_VARIABLE

        os.environ[VERBOSE_VARIABLE] = "1"  # read where each library is set up, in this process and its children


@cli.command()
@DATASET
@DATA
@SPLIT
@setting_option("controller", "-c", "--controller")
@setting_option("backbone", "-b", "--backbone")
@setting_option("metrics", "-m", "--metric", multiple=True)
@TOPICS
@ONLY_TOPICS
@setting_option("topic_source", metavar="oracle|topK")
@SET
@setting_option("baseline")
@click.option("--no-baseline", is_flag=True, help="Skip the baseline.")
@LIMIT
@SAMPLE
@setting_option("seed", type=int)
@BATCH_SIZE
@BOOTSTRAP
@click.option("-o", "--out", type=click.Path(file_okay=False),
              help="Output folder for results.json and samples.jsonl [default: runs/DATASET-CONTROLLER-TIME].")
@DEVICE
@JUDGE
@SKIP_INVALID
@STRICT_CONTROLS
@NO_CACHE
@RUN_EXECUTOR
@WORKERS
@RAY_ADDRESS
def run(out, assignments, device, skip_invalid, no_baseline, no_cache, **settings):
    """Generate summaries with a controller and score them; writes results.json and samples.jsonl."""
    from .engine.run import run as run_engine
    from .engine.settings import RunSettings

    dataset, backbone = settings["dataset"], settings["backbone"]
    with output_folder(out, f"{dataset}-{settings['controller']}") as out:
        result = run_engine(RunSettings(**{
            **settings, "metrics": settings["metrics"] or None, "baseline": None if no_baseline else settings["baseline"],
            "options": _options(assignments, backbone, device, dataset if skip_invalid else None),
            "out": out, "cache": not no_cache, "progress": True}))
    click.echo(result.table())
    click.echo(f"\n{describe_examples(result.results)}; results in {out}/results.json", err=True)


@cli.command()
@click.option("-p", "--predictions", type=click.Path(dir_okay=False),
              help='JSONL of {"id": ..., "prediction": ...}; other fields are kept under "given". '
                   "Default: the dataset's own predictions (fd).")
@DATASET
@DATA
@SPLIT
@click.option("-m", "--metric", "metrics", multiple=True,
              help="Metric (repeatable). Default: rouge, and stas when some example has a topic.")
@TOPICS
@SET
@JUDGE
@LIMIT
@SKIP_INVALID
@STRICT_CONTROLS
@BOOTSTRAP
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed of the bootstrap.")
@click.option("-o", "--out", type=click.Path(file_okay=False),
              help="Output folder [default: runs/DATASET-evaluate-TIME].")
def evaluate(predictions, dataset, data, split, metrics, topics, assignments, judge, limit, skip_invalid,
             strict_controls, bootstrap, seed, out):
    """Score existing predictions; writes results.json and samples.jsonl like ctrlkit run."""
    from .evaluation import evaluate as evaluate_predictions

    with output_folder(out, f"{dataset}-evaluate") as out:
        result = evaluate_predictions(
            predictions=predictions, dataset=dataset, data=data, split=split, metrics=metrics or None,
            topics=topics, options=_options(assignments, None, skip_invalid_in=dataset if skip_invalid else None),
            judge=judge, limit=limit, strict_controls=strict_controls, bootstrap=bootstrap, seed=seed, out=out,
            progress=True,
        )
    click.echo(result.table())
    click.echo(f"\n{describe_examples(result.results)}; results in {out}/results.json", err=True)


@cli.command("meta-eval")
@click.argument("samples", type=click.Path(exists=True, dir_okay=False))
@click.option("--human", required=True, help="Dotted path of the human score in each line, e.g. given.human.")
@click.option("--score", "scores", multiple=True,
              help="Dotted path of a metric score (repeatable). Default: every score under 'scores'.")
@click.option("--level", "levels", multiple=True, type=click.Choice(["global", "summary", "system"]),
              help="Correlation level (repeatable): global (all pairs pooled), summary (across systems within "
                   "each input, averaged), system (system means). Default: all three.")
@click.option("--resample", type=click.Choice(["inputs", "systems", "both"]), default="both", show_default=True,
              help="What each bootstrap resample draws (Deutsch et al. 2021: BOOT-INPUTS, BOOT-SYSTEMS, BOOT-BOTH).")
@click.option("--resamples", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Bootstrap resamples (and permutations for the p-values); 0 skips both.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the resamples and permutations.")
@click.option("--input-key", metavar="PATH", help="Dotted path naming each line's input (document) "
                                                   "[default: given.paper].")
@click.option("--system-key", metavar="PATH", help="Dotted path naming each line's system [default: given.system].")
@click.option("-o", "--out", type=click.Path(dir_okay=False), help="Also write the report as JSON here.")
def meta_eval(samples, human, scores, levels, resample, resamples, seed, input_key, system_key, out):
    """Correlate metric scores with human scores (Pearson, Spearman, Kendall) at global, summary and
    system level, each r with a 95% bootstrap interval and a p-value."""
    from .files import atomic_write_json, read_jsonl
    from .analyses.meta_evaluation import format_report, meta_evaluate
    from .outputs import refuse_writing_over_inputs

    refuse_writing_over_inputs([out], {"SAMPLES": samples})
    report = meta_evaluate((row for _, row in read_jsonl(samples)), human, scores, levels=levels or None,
                           resample=resample, resamples=resamples, seed=seed, input_key=input_key,
                           system_key=system_key)
    if "unavailable" in report["settings"]:
        click.echo(f"note: {report['settings']['unavailable']}", err=True)
    click.echo(format_report(report))
    if out:
        atomic_write_json(out, report)


@cli.command("agreement")
@click.argument("samples", type=click.Path(exists=True, dir_okay=False))
@click.option("--field", "fields", multiple=True, required=True, metavar="PATH",
              help="Dotted path of one rater's score in each line, e.g. given.human or given.human_list.1 "
                   "(repeat: two or more).")
@click.option("--level", "levels", multiple=True, type=click.Choice(["nominal", "ordinal", "interval"]),
              help="Krippendorff's alpha level of measurement (repeatable). Default: all three.")
@click.option("--resamples", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Bootstrap resamples for the intervals; 0 skips them.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the resamples.")
@click.option("--group-key", metavar="PATH",
              help="Resample the groups of lines sharing the value at this dotted path (e.g. given.paper) "
                   "[default: each line alone].")
@click.option("-o", "--out", type=click.Path(dir_okay=False), help="Also write the report as JSON here.")
def agreement_command(samples, fields, levels, resamples, seed, group_key, out):
    """Agreement between score fields: Krippendorff's alpha (nominal, ordinal, interval; all fields,
    missing values allowed) and Cohen's kappa (plain, linear, quadratic; each pair of fields), each
    with a 95% bootstrap interval."""
    from .analyses.agreement import agreement, format_report
    from .files import atomic_write_json, read_jsonl
    from .outputs import refuse_writing_over_inputs

    refuse_writing_over_inputs([out], {"SAMPLES": samples})
    report = agreement((row for _, row in read_jsonl(samples)), fields, levels=levels or None,
                       resamples=resamples, seed=seed, group_key=group_key)
    click.echo(format_report(report))
    if out:
        atomic_write_json(out, report)


@cli.command("report")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@click.option("--out", type=click.Path(dir_okay=False),
              help="HTML file to write; the Markdown goes beside it as FILE.md [default: DIR/report.html].")
@click.option("--examples", type=click.IntRange(min=0), default=5, show_default=True,
              help="Examples whose outputs are shown side by side.")
@click.option("--figures", type=click.Choice(["pdf", "png", "svg"]),
              help="Also write each figure as a file of this format, in a figures/ folder beside the report.")
def report_command(directory, out, examples, figures):
    """Write a self-contained HTML report (tables, figures, examples) and a Markdown one for a run or sweep folder."""
    from .report.write import write_report

    for path in write_report(directory, out=out, examples=examples, figures=figures):
        click.echo(path)


@cli.command()
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False),
              help="Sweep folder: cells/, table.md, table.csv, table.json. Rerun the same command to resume.")
@click.option("--recipe", metavar="NAME|FILE",
              help="A paper's protocol shipped with ctrlkit (see: ctrlkit recipes), or a recipe file; the settings "
                   "given here win over its own.")
@click.option("--config", "config_file", type=click.Path(exists=True, dir_okay=False),
              help="TOML or YAML with the settings below; those given here win (--set option by option).")
@click.option("--controllers", help="Comma-separated controllers (rows), e.g. none,prepend,tag,prepend+tag.")
@click.option("--metrics", help="Comma-separated metrics (columns). Default: rouge, and stas for each "
                                "dataset where some example has a topic.")
@click.option("--backbones", help="Comma-separated backbones. Default: extractive.")
@click.option("--datasets", help="Comma-separated datasets. Default: sample.")
@click.option("--data", "data_paths", multiple=True, metavar="[DATASET=]PATH",
              help="File a dataset reads; DATASET= may be left out when there is one dataset.")
@click.option("--split", help="Dataset split.")
@TOPICS
@ONLY_TOPICS
@click.option("--topic-source", metavar="oracle|topK", help=TOPIC_SOURCE_HELP + " [default: oracle]")
@SET
@JUDGE
@click.option("--limit", type=click.IntRange(min=1), help="Use only the first N examples of each dataset.")
@click.option("--sample", type=click.IntRange(min=1),
              help="Use N examples of each dataset drawn at random with the seed (as run does); not with --limit.")
@click.option("--seed", type=int, help="Random seed (the --sample draw too) [default: 0].")
@click.option("--batch-size", type=click.IntRange(min=1), help="Inputs per generation batch [default: 16].")
@click.option("--baseline", help="Controller each cell's run scores beside its own on the same examples, recorded "
                                 "in the cell's results.json as run does [default: no baseline].")
@click.option("--reference", help="Controller whose row each other row of its dataset and backbone is compared "
                                  "with (paired bootstrap and permutation test, Holm-corrected) [default: none].")
@click.option("--reference-backbone", metavar="BACKBONE",
              help="Compare backbones instead: each row is compared with this backbone's row of its dataset and "
                   "controller (a fine-tuned model against the one it was trained from); not with --reference.")
@click.option("--bootstrap", type=click.IntRange(min=0),
              help="Bootstrap resamples for each value's interval and the comparisons; 0 skips them "
                   "[default: 1000].")
@click.option("--device", help="Torch device for every backbone of the sweep that takes one (cpu, cuda, cuda:1).")
@NO_CACHE
@click.option("--overwrite", is_flag=True,
              help="Replace a sweep with other settings already in --out: its cells/, sweep.json, table.* and "
                   "report.* are removed first (other files stay).")
@SWEEP_EXECUTOR
@RAY_ADDRESS
def sweep(out, recipe, config_file, controllers, metrics, backbones, datasets, data_paths, split, topics, only_topics,
          topic_source, assignments, judge, limit, sample, seed, batch_size, baseline, reference, reference_backbone,
          bootstrap, device, no_cache, overwrite, executor, address):
    """Run a grid of controllers x backbones x datasets with the same metrics; write the paper's table.

    \b
    ctrlkit sweep --recipe passali-newts --data NEWTS_test_600.csv -o runs/newts   a paper's protocol
    ctrlkit sweep --controllers none,tag --metrics stas,rouge -o runs/mine         your own grid
    """
    from .sweeps.config import load_config
    from .sweeps.settings import overlay
    from .sweeps.sweep import sweep as run_sweep

    if recipe and config_file:
        raise click.UsageError("give --recipe or --config, not both (a recipe is a configuration; copy it and "
                               "pass the copy to --recipe to change it)")
    given = {"controllers": _comma(controllers), "metrics": _comma(metrics), "backbones": _comma(backbones),
             "datasets": _comma(datasets), "split": split, "topics": topics, "only_topics": only_topics,
             "topic_source": topic_source, "judge": judge, "limit": limit, "sample": sample, "seed": seed,
             "batch_size": batch_size, "baseline": baseline, "reference": reference,
             "reference_backbone": reference_backbone, "bootstrap": bootstrap, "device": device, "cache": False if no_cache else None, "options": parse_assignments(assignments) or None}
    settings = given if recipe else overlay(load_config(config_file) if config_file else {}, given)
    if data_paths:
        settings["data"] = _data_paths(data_paths)
    if not recipe and not settings.get("controllers"):
        raise click.UsageError("give --controllers, a --config with controllers, or a --recipe")
    rows = run_sweep(out=out, recipe=recipe, overwrite=overwrite, progress=True, executor=executor, address=address,
                     **settings)
    click.echo((Path(out) / "table.md").read_text(encoding="utf-8"), nl=False)
    if rows and "reused" not in rows[0]:  # a meta-eval recipe's rows: one per score
        click.echo(f"\n{len(rows)} scores correlated; results.json, samples.jsonl, meta-eval.json and table.md in "
                   f"{out}", err=True)
        return
    ran = [row for row in rows if not row["reused"]]
    generated = sum((row["cache"] or {}).get("misses", 0) for row in ran)
    click.echo(f"\n{len(rows)} cells ({len(rows) - len(ran)} reused), {generated} new generations; "
               f"table in {out}/table.md", err=True)


def _comma(text: str | None) -> list[str] | None:
    return [item.strip() for item in text.split(",") if item.strip()] if text else None


def _data_paths(items) -> dict[str, str] | str:
    """``DATASET=PATH`` items as a mapping, or one PATH as it is: the sweep gives it to its one
    dataset, or to the one component its datasets are variants of."""
    if len(items) == 1 and "=" not in items[0]:
        return items[0]
    paths = {}
    for item in items:
        name, sep, path = item.partition("=")
        if not sep:
            raise click.UsageError("with several --data, write each as --data DATASET=PATH")
        paths[name] = path
    return paths


@cli.command("recipes")
@click.argument("name", required=False)
def recipes_command(name):
    """Papers' protocols shipped as sweep configurations: run one with ctrlkit sweep --recipe NAME.

    With NAME, print that recipe's file (copy it, edit it, pass the copy to --recipe)."""
    from .sweeps.recipes import load_recipe, recipes

    if name:
        click.echo(load_recipe(name).path.read_text(encoding="utf-8"), nl=False)
        return
    found = recipes()
    width = max(len(recipe.name) for recipe in found)
    for recipe in found:
        needs = f" (needs --{', --'.join(recipe.needs)})" if recipe.needs else ""
        click.echo(f"{recipe.name:<{width}}  {recipe.description}{needs}")


def train_option(name: str, *flags: str, **extra):
    """The option of ``ctrlkit train`` for the :class:`TrainSettings` field ``name``."""
    return setting_option(name, *flags, of=TrainSettings, **extra)


@cli.command()
@train_option("backbone", "-b", "--backbone")
@train_option("out", "-o", "--out", type=click.Path(file_okay=False))
@train_option("controller", "-c", "--controller")
@DATASET
@DATA
@train_option("split")
@train_option("eval_split")
@TOPICS
@train_option("holdout_topics", metavar="A,B")
@SET
@train_option("epochs", type=click.IntRange(min=1))
@train_option("max_steps", type=click.IntRange(min=0))
@train_option("lr", type=float)
@train_option("schedule", type=click.Choice(SCHEDULES))
@train_option("warmup_steps", type=click.IntRange(min=0), metavar="N")
@train_option("warmup_ratio", type=float, metavar="R")
@train_option("weight_decay", type=float)
@train_option("max_grad_norm", type=float)
@train_option("bf16")
@train_option("batch_size", type=click.IntRange(min=1))
@train_option("grad_accum", type=click.IntRange(min=1))
@train_option("patience", type=click.IntRange(min=0))
@train_option("save_every", type=click.IntRange(min=0))
@train_option("max_target_tokens", type=click.IntRange(min=1))
@train_option("limit", type=click.IntRange(min=1))
@train_option("seed", type=int)
@train_option("peft", type=click.Choice(["lora", "prefix"]))
@train_option("lora_rank", type=int)
@train_option("lora_alpha", type=float)
@train_option("lora_dropout", type=float)
@train_option("lora_targets", metavar="A,B")
@train_option("prefix_length", type=int)
@train_option("lorahub_budget", type=int)
@train_option("lorahub_l1", type=float)
@DEVICE
@STRICT_CONTROLS
def train(assignments, device, **settings):
    """Fine-tune a backbone with a controller applied to its training inputs (resumable)."""
    from .training.trainer import train as train_backbone

    backbone, out = settings["backbone"], settings["out"]
    record = train_backbone(TrainSettings(**settings, options=_options(assignments, backbone, device), progress=True))
    if "lorahub" in record:
        found = ", ".join(f"{name} {weight:.4f}" for name, weight in record["lorahub"]["weights"].items())
        click.echo(f"lorahub: weights {found} on {record['n_pairs']} pairs; loss {record['lorahub']['start_loss']:.4f} "
                   f"-> {record['lorahub']['loss']:.4f}; merge in {out} (use --backbone "
                   f"{backbone.partition(':')[0]}:{out})")
        return
    last = record["losses"][-1] if record["losses"] else None
    click.echo(f"{record['steps']} steps on {record['n_pairs']} pairs; last loss {last}; "
               f"model in {out} (use --backbone {backbone.partition(':')[0]}:{out})")


@cli.group()
def analyze():
    """Analyses that take several runs: interference between control attributes."""


@analyze.command("interference")
@DATASET
@DATA
@SPLIT
@click.option("-c", "--controller", required=True,
              help="Controller that reads every changed attribute, e.g. length+prepend.")
@click.option("-b", "--backbone", default="extractive", show_default=True, help="Summarizer backbone.")
@click.option("--attributes", required=True, help="Comma-separated attributes, changed one at a time: length,topic.")
@click.option("-m", "--metric", "metrics", multiple=True, required=True, help="Metric (repeatable).")
@TOPICS
@SET
@JUDGE
@LIMIT
@SAMPLE
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed that picks the changed values and the --sample draw.")
@BATCH_SIZE
@click.option("-o", "--out", type=click.Path(file_okay=False),
              help="Output folder [default: runs/DATASET-interference-TIME].")
@DEVICE
@SKIP_INVALID
@NO_CACHE
def analyze_interference(dataset, data, split, controller, backbone, attributes, metrics, topics, assignments, judge,
                         limit, sample, seed, batch_size, out, device, skip_invalid, no_cache):
    """Change one attribute at a time and report how far each metric moves: CCSBench's change
    amplitude CA = |m_new - m| / |m|. Writes interference.json and the heatmap interference.svg."""
    from .analyses.interference import format_matrix, interference

    with output_folder(out, f"{dataset}-interference") as out:
        report = interference(
            dataset=dataset, data=data, split=split, controller=controller, backbone=backbone,
            attributes=[name.strip() for name in attributes.split(",") if name.strip()], metrics=metrics,
            options=_options(assignments, backbone, device, dataset if skip_invalid else None), topics=topics,
            judge=judge, limit=limit, sample=sample, seed=seed, batch_size=batch_size, out=out,
            cache=not no_cache, progress=True,
        )
    click.echo(format_matrix(report))
    click.echo(f"\n{report['n_examples']} examples; results in {out}/interference.json and interference.svg", err=True)

def describe_examples(results: dict) -> str:
    """``654 examples of split 'test' (how the split was made)``: what a run scored, in words."""
    config = results["config"]
    text = f"{results['n_examples']} examples"
    if config.get("split"):
        text += f" of split '{config['split']}'"
    if config.get("split_origin"):
        text += f" ({config['split_origin']})"
    picks = results.get("topic_picks")
    if picks:
        nearest = "nearest topic" if picks["per_document"] == 1 else f"{picks['per_document']} nearest topics"
        text += f", requesting the {nearest} of each of {picks['documents']} documents"
    return text


def _options(assignments, backbone: str | None, device: str | None = None, skip_invalid_in: str | None = None) -> dict:
    """``--set`` assignments, plus the shortcuts --device (for the backbone) and --skip-invalid
    (for the dataset)."""
    options = parse_assignments(assignments)
    if device:
        options.setdefault(qualified(("backbones", backbone.partition(":")[0])), {})["device"] = device
    if skip_invalid_in:
        options.setdefault(qualified(("datasets", skip_invalid_in)), {})["skip_invalid"] = True
    return options


@cli.command("list")
@click.argument("kind", required=False, type=click.Choice([*KINDS, *NOUNS], case_sensitive=False))
def list_components(kind):
    """List installed controllers, metrics, datasets, backbones and vectorizers, with their options.

    A name two kinds share (the hf dataset and the hf backbone) shows its options as
    --set KIND:NAME.OPTION=VALUE, which names one of them where both are in a run."""
    from .listing import SHARED_NOTE, describe, shared_names

    registries = {name: get_registry(name) for name in KINDS}
    shared = shared_names(registries.values())
    for i, name in enumerate([kind_of(kind)] if kind else KINDS):
        if i:
            click.echo()
        click.echo(describe(name, registries[name], shared))
    if shared:
        click.echo(f"\n{SHARED_NOTE}")


@cli.command()
@click.option("--all", "include_builtins", is_flag=True, help="Include ctrlkit's built-in plugin modules.")
def plugins(include_builtins):
    """Installed plugin distributions as JSON: name, version, hooks (and errors of failed ones)."""
    from .plugins import plugin_report

    click.echo(json.dumps(plugin_report(include_builtins), indent=2))


@cli.group("plugin")
def plugin_group():
    """Write plugins: ctrlkit plugin new NAME."""


@plugin_group.command("new")
@click.argument("name")
@click.option("--dir", "directory", default=".", show_default=True, type=click.Path(file_okay=False),
              help="Folder in which ctrlkit-NAME/ is created.")
def plugin_new(name, directory):
    """Write ctrlkit-NAME/: a plugin distribution with an example controller, metric and tests."""
    from .scaffold import new_plugin

    target = new_plugin(name, directory)
    click.echo(f"wrote {target}; next: pip install -e '{target}[test]' && python -m pytest {target}")


def main():
    try:
        cli(prog_name="ctrlkit")
    except KeyboardInterrupt:  # before click's own handling begins
        exit_interrupted()
