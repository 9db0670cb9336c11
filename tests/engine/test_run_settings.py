"""RunSettings and TrainSettings declare each setting once: the library's keyword, the command's
option (name, default, help) and the key results.json or training.json records."""

from dataclasses import fields

import pytest
from click.testing import CliRunner

import ctrlkit
from ctrlkit import RunSettings
from ctrlkit.cli import cli
from ctrlkit.errors import OptionError
from ctrlkit import TrainSettings

# settings the command line sets its own way: --set (options), --no-cache (cache), always on (progress),
# a sweep's (strict_options); and -o, whose default folder the command makes
SET_OTHERWISE = {"options", "cache", "progress", "strict_options", "out"}


def _options_of(command: str) -> dict:
    return {parameter.name: parameter for parameter in cli.commands[command].params}


@pytest.mark.parametrize("command, settings", [("run", RunSettings), ("train", TrainSettings)])
def test_every_setting_is_an_option_of_the_command_with_the_fields_default_and_help(command, settings):
    options = _options_of(command)
    for item in fields(settings):
        if item.name in SET_OTHERWISE or item.name in ("executor", "workers", "address"):
            continue  # the executor's options explain where the work runs (cli_options)
        assert item.name in options, f"ctrlkit {command} has no option for setting '{item.name}'"
        option = options[item.name]
        assert option.help == settings.help(item.name)
        default = settings.default(item.name)
        if option.required:
            assert default is None, item.name
        elif option.multiple or default is None:
            assert option.default in (None, ()) or repr(option.default).endswith("UNSET"), item.name
        elif default is not False:
            assert option.default == default, item.name


def test_results_json_records_every_recorded_setting_under_its_own_name(tmp_path):
    result = ctrlkit.run(controller="tag", metrics=["stas"], limit=2, bootstrap=0, cache=False, seed=3, batch_size=2)
    config = result.results["config"]
    recorded = RunSettings(controller="tag", metrics=["stas"], limit=2, bootstrap=0, seed=3, batch_size=2).recorded()
    assert set(recorded) <= set(config)
    for name in ("dataset", "controller", "limit", "seed", "batch_size", "topic_source", "strict_controls"):
        assert config[name] == recorded[name], name
    assert not {"out", "cache", "progress", "strict_options", "address"} & set(config)


def test_a_run_from_settings_equals_the_run_from_the_same_keywords():
    settings = RunSettings(controller="tag", metrics=["stas"], limit=3, bootstrap=0, cache=False)
    from_settings = ctrlkit.run(settings)
    from_keywords = ctrlkit.run(controller="tag", metrics=["stas"], limit=3, bootstrap=0, cache=False)
    assert from_settings.metrics == from_keywords.metrics
    changed = ctrlkit.run(settings, limit=2)
    assert changed.results["n_examples"] == 2 and changed.results["config"]["limit"] == 2


@pytest.mark.parametrize("given, named", [({"limit": 0}, "limit"), ({"batch_size": -1}, "batch_size"),
                                          ({"seed": -1}, "seed"), ({"topic_source": "top0"}, "topic source"),
                                          ({"sample": 2, "limit": 2}, "limit")])
def test_a_wrong_setting_is_refused_when_the_settings_are_made_naming_it(given, named):
    with pytest.raises(Exception) as refused:
        RunSettings(**given)
    assert named in str(refused.value)


def test_an_unknown_keyword_of_run_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match="topn"):
        ctrlkit.run(topn=3)


def test_the_command_lines_settings_reach_results_json_unchanged(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["run", "--controller", "tag", "--metric", "stas", "--limit", "2", "--seed", "4",
                                      "--bootstrap", "0", "--no-cache", "--no-baseline", "-o", str(out)])
    assert result.exit_code == 0, result.output
    import json

    config = json.loads((out / "results.json").read_text())["config"]
    assert (config["controller"], config["limit"], config["seed"], config["baseline"]) == ("tag", 2, 4, None)


def test_train_settings_refuse_a_wrong_rate_and_normalise_held_out_topics():
    with pytest.raises(Exception, match="lr"):
        TrainSettings(backbone="hf:x", out="o", lr=0)
    with pytest.raises(OptionError, match="seed"):
        TrainSettings(backbone="hf:x", out="o", seed=2**40)
    assert TrainSettings(backbone="hf:x", out="o", holdout_topics="a, b").holdout_topics == ["a", "b"]
