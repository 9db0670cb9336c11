"""The ``ctrlkit`` command: parses arguments and calls the library."""

from __future__ import annotations

import json
from pathlib import Path

import click

from .cli_options import (BATCH_SIZE, BOOTSTRAP, DATA, DATASET, DEVICE, JUDGE, LIMIT, NO_CACHE, ONLY_TOPICS,
                          RAY_ADDRESS, RUN_EXECUTOR, SAMPLE, SET, SKIP_INVALID, SPLIT, STRICT_CONTROLS, SWEEP_EXECUTOR,
                          TOPIC_SOURCE_HELP, TOPICS, WORKERS)
from .component_options import NOUNS, kind_of, qualified
from .errors import CtrlkitError
from .interrupted import exit_interrupted
from .options import parse_assignments
from .outputs import output_folder
from .plugins import KINDS, add_plugin_commands, get_registry
from .training.schedules import SCHEDULES


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
        except KeyboardInterrupt:  # while the arguments are parsed: click would print "Aborted!" and exit 1
            exit_interrupted()

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except CtrlkitError as exc:
            raise click.ClickException(str(exc)) from None
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
@click.option("-c", "--controller", default="none", show_default=True,
              help="Controller, or a chain applied right to left: prepend+tag.")
@click.option("-b", "--backbone", default="extractive", show_default=True, help="Summarizer backbone.")
@click.option("-m", "--metric", "metrics", multiple=True,
              help="Metric (repeatable). Default: rouge, and stas when some example has a topic.")
@TOPICS
@ONLY_TOPICS
@click.option("--topic-source", default="oracle", show_default=True, metavar="oracle|topK", help=TOPIC_SOURCE_HELP)
@SET
@click.option("--baseline", default="none", show_default=True,
              help="Controller run and scored beside it on the same examples.")
@click.option("--no-baseline", is_flag=True, help="Skip the baseline.")
@LIMIT
@SAMPLE
@click.option("--seed", type=int, default=0, show_default=True,
              help="Random seed (the --sample draw and the bootstrap too), recorded in results.json.")
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
def run(dataset, data, split, controller, backbone, metrics, topics, only_topics, topic_source, assignments, baseline,
        no_baseline, limit, sample, seed, batch_size, bootstrap, out, device, judge, skip_invalid, strict_controls,
        no_cache, executor, workers, address):
    """Generate summaries with a controller and score them; writes results.json and samples.jsonl."""
    from .engine.run import run as run_pipeline

    with output_folder(out, f"{dataset}-{controller}") as out:
        result = run_pipeline(
            dataset=dataset, data=data, split=split, controller=controller, backbone=backbone,
            metrics=metrics or None, topics=topics, only_topics=only_topics, topic_source=topic_source, judge=judge,
            options=_options(assignments, backbone, device, dataset if skip_invalid else None),
            baseline=None if no_baseline else baseline, limit=limit, sample=sample, seed=seed, batch_size=batch_size,
            bootstrap=bootstrap, out=out, cache=not no_cache, strict_controls=strict_controls, progress=True,
            executor=executor, workers=workers, address=address,
        )
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

    report = meta_evaluate((row for _, row in read_jsonl(samples)), human, scores, levels=levels or None,
                           resample=resample, resamples=resamples, seed=seed, input_key=input_key,
                           system_key=system_key)
    if "unavailable" in report["settings"]:
        click.echo(f"note: {report['settings']['unavailable']}", err=True)
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


@cli.command()
@click.option("-b", "--backbone", required=True, help="Trainable backbone and its base model: hf:PATH_OR_HUB_ID.")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False),
              help="Folder for the trained model; run it with --backbone hf:OUT. Rerun to resume.")
@click.option("-c", "--controller", default="none", show_default=True, help="Controller applied to every input.")
@DATASET
@DATA
@click.option("--split", help="Split to train on [default: train; all of a file that is itself one split, "
                               "such as MACSum's val.json, or of a dataset without splits].")
@click.option("--eval-split", help="Split scored after each epoch; the best model is kept.")
@TOPICS
@click.option("--holdout-topics", metavar="A,B",
              help="Leave out of training (and of --eval-split) every example whose topic or topic_id is one of "
                   "these (comma-separated); recorded with the model, for zero-shot evaluation (run --only-topics).")
@SET
@click.option("--epochs", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--max-steps", type=click.IntRange(min=0), default=0, show_default=True,
              help="Stop after this many optimizer steps (0: run all epochs).")
@click.option("--lr", type=float, default=5e-5, show_default=True,
              help="AdamW learning rate (the peak one, with --schedule linear or cosine).")
@click.option("--schedule", type=click.Choice(SCHEDULES), default="constant", show_default=True,
              help="Learning rate after the warmup: constant, or a linear or cosine decay to 0 at the end of the "
                   "last optimizer step (max_steps, or epochs x steps per epoch).")
@click.option("--warmup-steps", type=click.IntRange(min=0), metavar="N",
              help="Raise the learning rate linearly from 0 to --lr over the first N optimizer steps, before "
                   "any --schedule (default: no warmup).")
@click.option("--warmup-ratio", type=float, metavar="R",
              help="The warmup as a fraction in [0, 1) of all optimizer steps, rounded up; not with --warmup-steps.")
@click.option("--weight-decay", type=float, default=0.01, show_default=True,
              help="AdamW's decoupled weight decay (the default is torch's: a training.json that records no "
                   "weight_decay was trained with it).")
@click.option("--max-grad-norm", type=float, default=0.0, show_default=True,
              help="Clip the gradients' global norm to this before each optimizer step (0: no clipping).")
@click.option("--bf16", is_flag=True,
              help="Run the forward pass and loss under bfloat16 autocast, the weights and optimizer staying "
                   "float32 (CUDA with bfloat16 only).")
@click.option("--batch-size", type=click.IntRange(min=1), default=8, show_default=True)
@click.option("--grad-accum", type=click.IntRange(min=1), default=1, show_default=True,
              help="Batches per optimizer step.")
@click.option("--patience", type=click.IntRange(min=0), default=0, show_default=True,
              help="Stop after this many evaluations without improvement (0: never).")
@click.option("--save-every", type=click.IntRange(min=0), default=0, show_default=True,
              help="Checkpoint every N steps (always at each epoch's end).")
@click.option("--max-target-tokens", type=click.IntRange(min=1), default=128, show_default=True)
@click.option("--limit", type=click.IntRange(min=1), help="Train on the first N examples only.")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--peft", type=click.Choice(["lora", "prefix"]),
              help="Train an adapter (peft) instead of the whole model: LoRA or prefix tuning; the output folder "
                   "holds the adapter and names the base model.")
@click.option("--lora-rank", type=int, help="LoRA rank [default: 8].")
@click.option("--lora-alpha", type=float, help="LoRA scale alpha (the update is scaled by alpha/rank) [default: 16].")
@click.option("--lora-dropout", type=float, help="Dropout on LoRA's input [default: 0.05].")
@click.option("--lora-targets", metavar="A,B",
              help="Modules LoRA adapts, e.g. q_proj,v_proj [default: those peft knows for the architecture].")
@click.option("--prefix-length", type=int, help="Virtual tokens of prefix tuning [default: 20].")
@DEVICE
@STRICT_CONTROLS
def train(backbone, out, controller, dataset, data, split, eval_split, topics, holdout_topics, assignments, epochs,
          max_steps, lr, schedule, warmup_steps, warmup_ratio, weight_decay, max_grad_norm, bf16, batch_size,
          grad_accum, patience, save_every, max_target_tokens, limit, seed, peft, lora_rank, lora_alpha, lora_dropout,
          lora_targets, prefix_length, device, strict_controls):
    """Fine-tune a backbone with a controller applied to its training inputs (resumable)."""
    from .training.trainer import train as train_backbone

    record = train_backbone(
        backbone=backbone, out=out, controller=controller, dataset=dataset, data=data, split=split,
        eval_split=eval_split, topics=topics, holdout_topics=holdout_topics,
        options=_options(assignments, backbone, device), epochs=epochs,
        max_steps=max_steps, lr=lr, schedule=schedule, warmup_steps=warmup_steps, warmup_ratio=warmup_ratio,
        weight_decay=weight_decay, max_grad_norm=max_grad_norm, bf16=bf16, batch_size=batch_size,
        grad_accum=grad_accum, patience=patience, save_every=save_every, max_target_tokens=max_target_tokens,
        limit=limit, seed=seed, strict_controls=strict_controls, peft=peft, lora_rank=lora_rank,
        lora_alpha=lora_alpha, lora_dropout=lora_dropout, lora_targets=lora_targets, prefix_length=prefix_length,
        progress=True,
    )
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
