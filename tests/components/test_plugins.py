import json
import os
import textwrap

import click
import pytest
from click.testing import CliRunner

import ctrlkit
from ctrlkit.errors import DuplicateComponentError
from ctrlkit.plugins import get_registry

from helpers import run_ctrlkit

PLUGIN_DISTRIBUTIONS = {
    "ctrlkit-controllers": ["register_controllers"],
    "ctrlkit-metrics": ["register_commands", "register_metrics"],
    "ctrlkit-datasets": ["register_commands", "register_datasets"],
}


def test_plugins_lists_the_three_distributions_with_versions_and_hooks():
    result = run_ctrlkit("plugins")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    for name, hooks in PLUGIN_DISTRIBUTIONS.items():
        assert rows[name]["hooks"] == hooks
        assert rows[name]["version"] == "0.1.0"


def test_builtins_are_plugins_too():
    rows = {row["name"]: row for row in json.loads(run_ctrlkit("plugins", "--all").stdout)}
    assert rows["ctrlkit.backbones"]["hooks"] == ["register_backbones"]
    assert rows["ctrlkit.vectorizers"]["hooks"] == ["register_topic_vectorizers"]


def _distribution(tmp_path, dist, module_source, entry_name=None):
    """A throwaway plugin distribution ``dist`` on a path of its own; returns the environment."""
    module = dist.replace("-", "_") + "_plugin"
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(module_source))
    info = tmp_path / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[ctrlkit]\n{entry_name or dist} = {module}\n")
    return {"PYTHONPATH": str(tmp_path)}


def test_plugins_are_told_apart_by_their_metadata_name_the_first_of_a_name_winning(tmp_path):
    """Egg-info folders named with hyphens all begin 'ctrlkit-', which importlib.metadata's own
    entry_points() takes for one name: each must still load. A second copy of a distribution later
    on the path is left out, as Python's import leaves out its module."""
    first, later = tmp_path / "first", tmp_path / "later"
    for dist in ("ctrlkit-zoo-a", "ctrlkit-zoo-b"):
        module = dist.replace("-", "_")
        info = first / f"{dist}.egg-info"
        info.mkdir(parents=True)
        (first / f"{module}.py").write_text("import ctrlkit\n\n\n@ctrlkit.hookimpl\ndef register_controllers(register):\n"
                                           f"    register({module!r}, 'ctrlkit_controllers.tag:Tag')\n")
        (info / "PKG-INFO").write_text(f"Metadata-Version: 1.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[ctrlkit]\n{dist} = {module}\n")
    copy = later / "ctrlkit_zoo_a-0.2.dist-info"
    copy.mkdir(parents=True)
    (copy / "METADATA").write_text("Metadata-Version: 2.1\nName: ctrlkit-zoo-a\nVersion: 0.2\n")
    (copy / "entry_points.txt").write_text("[ctrlkit]\nctrlkit-zoo-a-copy = ctrlkit_zoo_a\n")
    result = run_ctrlkit("plugins", env={"PYTHONPATH": os.pathsep.join([str(first), str(later)])})
    assert result.returncode == 0 and result.stderr == "", result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert {name: rows[name]["version"] for name in rows if "zoo" in name} == {"ctrlkit-zoo-a": "0.1",
                                                                             "ctrlkit-zoo-b": "0.1"}


def _broken_distribution(tmp_path):
    """A plugin distribution whose module raises on import."""
    return _distribution(tmp_path, "ctrlkit-broken", "raise RuntimeError('boom at import')\n")


def test_a_plugin_that_fails_to_import_is_reported_and_the_rest_works(tmp_path):
    env = _broken_distribution(tmp_path)
    listing = run_ctrlkit("list", "controllers", env=env)
    assert listing.returncode == 0
    assert "tag" in listing.stdout and "prepend" in listing.stdout
    assert "plugin 'ctrlkit-broken' failed to load (RuntimeError: boom at import)" in listing.stderr
    rows = {row["name"]: row for row in json.loads(run_ctrlkit("plugins", env=env).stdout)}
    assert rows["ctrlkit-broken"] == {"name": "ctrlkit-broken", "error": "RuntimeError: boom at import"}
    assert "ctrlkit-metrics" in rows


def test_strict_plugins_makes_a_failed_import_an_error(tmp_path):
    env = {**_broken_distribution(tmp_path), "CTRLKIT_STRICT_PLUGINS": "1"}
    result = run_ctrlkit("list", env=env)
    assert result.returncode != 0
    assert "Plugin 'ctrlkit-broken' failed to load: RuntimeError: boom at import" in result.stderr
    assert "Traceback" not in result.stderr


def test_load_plugins_selects_which_distributions_load(tmp_path):
    env = {"CTRLKIT_LOAD_PLUGINS": "ctrlkit-metrics"}
    assert "stas  (ctrlkit-metrics)" in run_ctrlkit("list", "metrics", env=env).stdout
    assert run_ctrlkit("list", "controllers", env=env).stdout == "controllers:\n  (none installed)\n"
    none = run_ctrlkit("run", "--controller", "tag", env={"CTRLKIT_LOAD_PLUGINS": ""}, cwd=tmp_path)
    assert none.returncode != 0
    assert "Unknown dataset 'sample'. Available: none" in none.stderr
    # built-ins still load
    assert "extractive" in run_ctrlkit("list", "backbones", env={"CTRLKIT_LOAD_PLUGINS": ""}).stdout


def test_registering_an_existing_name_names_both_plugins(throwaway_plugins):
    class Rival:
        @ctrlkit.hookimpl
        def register_controllers(self, register):
            register("tag", ctrlkit.Controller)

    throwaway_plugins(Rival(), "rival-plugin")
    with pytest.raises(DuplicateComponentError, match="'tag' is registered by both plugin 'ctrlkit-controllers' "
                                                      "and plugin 'rival-plugin'"):
        get_registry("controllers").create("tag")


def test_each_registration_hook_adds_components(throwaway_plugins):
    class Shout(ctrlkit.Controller):
        """Upper-cases the source."""

        def apply(self, example, model_input):
            return model_input.replace(source=model_input.source.upper())

    class Everything:
        @ctrlkit.hookimpl
        def register_controllers(self, register):
            register("shout", Shout)

        @ctrlkit.hookimpl
        def register_metrics(self, register):
            register("extra-metric", "ctrlkit_metrics.rouge:Rouge")

        @ctrlkit.hookimpl
        def register_datasets(self, register):
            register("extra-dataset", "ctrlkit_datasets.sample:Sample")

        @ctrlkit.hookimpl
        def register_backbones(self, register):
            register("extra-backbone", "ctrlkit.backbones.extractive:ExtractiveBackbone")

        @ctrlkit.hookimpl
        def register_topic_vectorizers(self, register):
            register("extra-vectorizer", "ctrlkit.vectorizers.tfidf:TfidfVectorizer")

    throwaway_plugins(Everything(), "everything")
    assert isinstance(ctrlkit.get_controller("shout"), Shout)
    assert ctrlkit.get_metric("extra-metric").name == "extra-metric"
    assert len(ctrlkit.get_dataset("extra-dataset").load("test")) == 120
    assert ctrlkit.get_backbone("extra-backbone").options["max_words"] == 60
    assert ctrlkit.get_vectorizer("extra-vectorizer").has_terms


def test_register_commands_adds_a_cli_command(throwaway_plugins):
    from ctrlkit.cli import CtrlkitGroup, cli

    class Commands:
        @ctrlkit.hookimpl
        def register_commands(self, cli):
            @cli.command()
            def hello():
                """Say hello."""
                click.echo("hello from a plugin")

    throwaway_plugins(Commands(), "commands")
    CtrlkitGroup._plugin_commands_added = False
    try:
        result = CliRunner().invoke(cli, ["hello"])
        assert result.exit_code == 0 and result.output == "hello from a plugin\n"
    finally:
        cli.commands.pop("hello", None)


def test_a_misspelt_hook_is_refused():
    from pluggy import PluginValidationError

    from ctrlkit.plugins import pm

    class Misspelt:
        @ctrlkit.hookimpl
        def register_controller(self, register):
            pass

    pm.register(Misspelt(), name="misspelt")
    try:
        with pytest.raises(PluginValidationError):
            pm.check_pending()
    finally:
        pm.unregister(name="misspelt")


def test_a_plugin_with_a_misspelt_hook_is_reported_and_left_out(tmp_path):
    env = _distribution(tmp_path, "ctrlkit-typo", """
        import ctrlkit

        @ctrlkit.hookimpl
        def register_controler(register):
            register("typo", "x:y")
    """)
    result = run_ctrlkit("list", "controllers", env=env)
    assert result.returncode == 0 and "tag" in result.stdout
    assert "plugin 'ctrlkit-typo' failed to load (PluginValidationError" in result.stderr


def test_a_factory_that_cannot_be_imported_is_shown_and_refused_in_one_line(tmp_path):
    env = _distribution(tmp_path, "ctrlkit-ghost", """
        import ctrlkit

        @ctrlkit.hookimpl
        def register_controllers(register):
            register("ghost", "nonexistent_module:Ghost")
    """)
    listing = run_ctrlkit("list", "controllers", env=env)
    assert listing.returncode == 0
    assert ("ghost  (ctrlkit-ghost)  unavailable: controller 'ghost' of plugin 'ctrlkit-ghost' cannot be imported "
            "from 'nonexistent_module:Ghost': ModuleNotFoundError") in listing.stdout
    run = run_ctrlkit("run", "-c", "ghost", env=env, cwd=tmp_path)
    assert run.returncode == 1 and run.stderr.startswith("Error: controller 'ghost' of plugin 'ctrlkit-ghost'")


def test_an_entry_point_name_taken_twice_hides_neither_plugin(tmp_path):
    env = _distribution(tmp_path, "ctrlkit-impostor", """
        import ctrlkit

        @ctrlkit.hookimpl
        def register_metrics(register):
            register("novelty", "ctrlkit_metrics.rouge:Rouge")
    """, entry_name="ctrlkit-metrics")
    listing = run_ctrlkit("list", "metrics", env=env)
    assert listing.returncode == 0, listing.stderr
    assert "rouge  (ctrlkit-metrics)" in listing.stdout and "novelty  (ctrlkit-impostor)" in listing.stdout


def test_load_plugins_warns_about_names_that_match_nothing():
    result = run_ctrlkit("list", "controllers", env={"CTRLKIT_LOAD_PLUGINS": "ctrlkit_controllers"})
    assert "CTRLKIT_LOAD_PLUGINS names 'ctrlkit_controllers', which is not installed" in result.stderr


@pytest.mark.parametrize("value", ["1e10", "1e300", "3601", "9.3e9"])
def test_a_plugin_timeout_too_large_to_wait_is_one_line_not_every_plugin_unloaded(value, monkeypatch):
    from ctrlkit.errors import ConfigurationError
    from ctrlkit.plugin_import import import_timeout

    monkeypatch.setenv("CTRLKIT_PLUGIN_TIMEOUT", value)
    with pytest.raises(ConfigurationError, match=rf"^CTRLKIT_PLUGIN_TIMEOUT must be at most 3600 seconds \(an hour\), "
                                                 rf"not '{value}'$"):
        import_timeout()
    monkeypatch.setenv("CTRLKIT_PLUGIN_TIMEOUT", "3600")
    assert import_timeout() == 3600.0


def test_an_import_given_a_wait_beyond_what_a_thread_can_wait_still_loads():
    from importlib.metadata import EntryPoint

    from ctrlkit.plugin_import import import_entry_point

    entry_point = EntryPoint(name="tag", value="ctrlkit_controllers.tag:Tag", group="ctrlkit")
    assert import_entry_point(entry_point, 1e300).__name__ == "Tag"


def test_a_huge_plugin_timeout_from_the_command_line_is_one_line():
    result = run_ctrlkit("list", env={"CTRLKIT_PLUGIN_TIMEOUT": "1e10"})
    assert result.returncode == 1
    assert result.stderr == "Error: CTRLKIT_PLUGIN_TIMEOUT must be at most 3600 seconds (an hour), not '1e10'\n"
