"""``ctrlkit list``: every option explained once, kinds singular or plural, shared names qualified."""

import re

import pytest
from click.testing import CliRunner

from ctrlkit.cli import cli
from ctrlkit.plugins import KINDS, get_registry


def listing(*args) -> str:
    result = CliRunner().invoke(cli, ["list", *args])
    assert result.exit_code == 0, result.output
    return result.output


def declared_options():
    for kind in KINDS:
        registry = get_registry(kind)
        for name in registry.names():
            for option in getattr(registry.entry(name).load(), "options", ()):
                yield kind, name, option


def test_every_option_has_a_help_that_does_not_state_the_default():
    options = list(declared_options())
    assert len(options) > 100  # every installed component's options, not none
    for kind, name, option in options:
        assert option.help.strip(), f"{kind} {name}.{option.name} has no help"
        assert not re.search(r"\bdefault\b", option.help), \
            f"{kind} {name}.{option.name}: the listing prints the default; the help must not state another"


def test_each_listed_option_shows_its_help_and_one_default():
    lines = [line.strip() for line in listing().splitlines() if line.strip().startswith("--set ")]
    assert len(lines) == len(list(declared_options()))
    for line in lines:
        head, _, rest = line.partition("  ")
        assert re.fullmatch(r"--set [\w:-]+\.\w+=(STR|INT|FLOAT|BOOL)( \[.+\])?", head), line
        help_text, defaults = rest.rsplit(" (default: ", 1)[0], re.findall(r"\bdefault\b", rest)
        assert help_text.strip() and len(defaults) == 1, line


@pytest.mark.parametrize("kind", ["controller", "controllers", "Metric", "dataset", "backbones", "vectorizer"])
def test_a_kind_may_be_singular_or_plural(kind):
    plural = kind.lower() if kind.lower().endswith("s") else kind.lower() + "s"
    assert listing(kind).splitlines()[0] == f"{plural}:"


def test_a_name_two_kinds_share_shows_the_qualified_form():
    datasets, backbones = listing("dataset"), listing("backbone")
    assert "--set dataset:hf.document_field=STR" in datasets and "--set hf.document_field" not in datasets
    assert "--set backbone:hf.device=STR" in backbones and "--set hf-causal.device=STR" in backbones
    assert "--set csv.document_field=STR" in datasets  # a name only one kind has stays plain
    assert "--set dataset:hf.path=DIR" in datasets.splitlines()[-1]


def test_an_unknown_kind_is_refused():
    result = CliRunner().invoke(cli, ["list", "models"])
    assert result.exit_code == 2 and "'models' is not one of" in result.output
