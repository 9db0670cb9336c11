"""Commands the metrics plugin adds to ``ctrlkit``: training the focus classifier, so that focus
F1 can be measured offline, with no judge."""

import click

import ctrlkit


@ctrlkit.hookimpl
def register_commands(cli):
    @cli.command("train-focus-classifier")
    @click.argument("data", type=click.Path(exists=True, dir_okay=False))
    @click.argument("out", type=click.Path(dir_okay=False))
    def train_focus_classifier_command(data, out):
        """Train the focus metric's classifier on DATA, JSONL lines {"summary": ..., "label":
        "empirical"|"conceptual"}, and save it as JSON at OUT (--set focus.labeller=classifier
        --set focus.classifier=OUT)."""
        from .focus import train_focus_classifier

        counts = train_focus_classifier(data, out)
        click.echo(f"trained on {counts['empirical']} empirical and {counts['conceptual']} conceptual summaries; "
                   f"classifier in {out}")
