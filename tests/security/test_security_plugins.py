"""A broken plugin is reported and left out; it never ends, hangs or hijacks ctrlkit.

Plugins that fail at import are real distributions: a ``*.dist-info`` folder with
``entry_points.txt`` and a module, put on the PYTHONPATH of a fresh ``python -m ctrlkit``
process (no pip install). Hook and registration failures are checked in process with the
``throwaway_plugins`` fixture, and once end to end.
"""

import gc
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

import ctrlkit
from ctrlkit.errors import CtrlkitError, DuplicateComponentError, PluginLoadError
from ctrlkit.listing import describe
from ctrlkit.plugins import get_registry

from helpers import run_ctrlkit

FAST = {"CTRLKIT_PLUGIN_TIMEOUT": "1"}
"""For tests with plugins that hang at import; ctrlkit's own plugins import in well under 0.1 s."""


def _distributions(root, **sources):
    """Plugin distributions ``ctrlkit-NAME`` (one per keyword, ``_`` for ``-``) whose module is
    the given source; returns the environment of a ctrlkit process that has them installed."""
    root.mkdir(parents=True, exist_ok=True)
    for key, source in sources.items():
        dist, module = "ctrlkit-" + key.replace("_", "-"), f"zoo_{key}"
        (root / f"{module}.py").write_text(textwrap.dedent(source))
        info = root / f"zoo_{key}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[ctrlkit]\n{dist} = {module}\n")
    return {"PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}


def _lines_naming(stderr, name):
    return [line for line in stderr.splitlines() if f"'{name}'" in line]


def _rows(env):
    result = run_ctrlkit("plugins", env=env)
    assert result.returncode == 0, result.stderr
    return {row["name"]: row for row in json.loads(result.stdout)}


IMPORT_FAILURES = {
    "exits": ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
    "interrupts": ("raise KeyboardInterrupt\n", "KeyboardInterrupt"),
    "generator_exit": ("raise GeneratorExit('closing')\n", "GeneratorExit: closing"),
    "odd_base": ("class Odd(BaseException):\n    pass\n\nraise Odd('odd\\nmessage')\n", "Odd: odd message"),
    "hangs": ("import threading\nthreading.Event().wait()\n", "import did not finish within 1 s"),
}


def test_whatever_a_plugin_does_at_import_it_is_one_reported_line_and_every_command_works(tmp_path):
    env = {**_distributions(tmp_path, **{key: source for key, (source, _) in IMPORT_FAILURES.items()}), **FAST}
    started = time.monotonic()
    help_ = run_ctrlkit("--help", env=env)
    assert time.monotonic() - started < 15  # a 1 s timeout, and the interpreter exits with the import hung
    assert help_.returncode == 0, help_.stderr
    assert "  run " in help_.stdout and "  plugins " in help_.stdout
    for key, (_, error) in IMPORT_FAILURES.items():
        name = "ctrlkit-" + key.replace("_", "-")
        lines = _lines_naming(help_.stderr, name)
        assert len(lines) == 1 and f"plugin '{name}' failed to load ({error}" in lines[0], help_.stderr
    listing = run_ctrlkit("list", "controllers", env=env)
    assert listing.returncode == 0 and "  tag  (ctrlkit-controllers)" in listing.stdout
    rows = _rows(env)
    assert "ctrlkit-metrics" in rows
    for key, (_, error) in IMPORT_FAILURES.items():
        assert rows["ctrlkit-" + key.replace("_", "-")]["error"].startswith(error)


def test_a_malformed_entry_point_and_a_module_loaded_twice_are_one_line_each(tmp_path):
    env = _distributions(tmp_path, malformed="", first="""
        import ctrlkit


        @ctrlkit.hookimpl
        def register_controllers(register):
            register("first-one", "ctrlkit_controllers.tag:Tag")
    """)
    (tmp_path / "zoo_malformed-0.1.dist-info" / "entry_points.txt").write_text("[ctrlkit]\nctrlkit-malformed = a:b:c\n")
    again = tmp_path / "zoo_again-0.1.dist-info"
    again.mkdir()
    (again / "METADATA").write_text("Metadata-Version: 2.1\nName: ctrlkit-again\nVersion: 0.1\n")
    (again / "entry_points.txt").write_text("[ctrlkit]\nctrlkit-again = zoo_first\n")
    listing = run_ctrlkit("list", "controllers", env=env)
    assert listing.returncode == 0 and "  first-one  (" in listing.stdout and "  tag  (" in listing.stdout
    assert _lines_naming(listing.stderr, "ctrlkit-malformed") == [
        "ctrlkit: plugin 'ctrlkit-malformed' failed to load (its entry point value 'a:b:c' is not 'module' or "
        "'module:attr'); continuing without it"]
    loaded_twice = [line for line in listing.stderr.splitlines() if "is the same object as plugin" in line]
    assert len(loaded_twice) == 1, listing.stderr
    assert "'ctrlkit-again'" in loaded_twice[0] and "'ctrlkit-first'" in loaded_twice[0]


HOOK_FAILURES = """
    import sys

    import click

    import ctrlkit


    class Odd(BaseException):
        pass


    @ctrlkit.hookimpl
    def register_controllers(register):
        register("half-registered", "ctrlkit_controllers.tag:Tag")
        raise RuntimeError("controllers broke")


    @ctrlkit.hookimpl
    def register_metrics(register):
        sys.exit(2)


    @ctrlkit.hookimpl
    def register_datasets(register):
        raise KeyboardInterrupt


    @ctrlkit.hookimpl
    def register_backbones(register):
        raise GeneratorExit


    @ctrlkit.hookimpl
    def register_topic_vectorizers(register):
        raise Odd("vectorizers broke")


    @ctrlkit.hookimpl
    def register_commands(cli):
        @cli.command()
        def half_added():
            click.echo("should not exist")
        sys.exit("commands broke")
"""


def test_a_run_with_the_built_ins_works_beside_plugins_that_exit_hang_or_fail_in_their_hooks(tmp_path):
    env = {**_distributions(tmp_path, exits="raise SystemExit(0)\n", hangs="import time\ntime.sleep(600)\n",
                            hooks_raise=HOOK_FAILURES), **FAST}
    result = run_ctrlkit("run", "--limit", "1", "--no-baseline", "-m", "rouge", "--no-cache",
                         "-o", str(tmp_path / "out"), env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "out" / "results.json").read_text())["n_examples"] == 1
    assert len(_lines_naming(result.stderr, "ctrlkit-exits")) == 1
    assert len(_lines_naming(result.stderr, "ctrlkit-hangs")) == 1
    hooks = sorted(line.split(": ")[2].split()[0] for line in _lines_naming(result.stderr, "ctrlkit-hooks-raise"))
    assert hooks == ["register_backbones", "register_commands", "register_controllers", "register_datasets",
                     "register_metrics"], result.stderr  # each once; a run needs no vectorizer


def test_strict_plugins_turns_an_exit_or_a_hang_at_import_into_one_line(tmp_path):
    for key, source, error in [("exits", "import sys\nsys.exit(3)\n", "SystemExit: 3"),
                               ("spins", "while True:\n    pass\n", "import did not finish within 1 s")]:
        env = {**_distributions(tmp_path / key, **{key: source}), **FAST, "CTRLKIT_STRICT_PLUGINS": "1"}
        result = run_ctrlkit("list", env=env)
        assert result.returncode == 1
        assert result.stderr.startswith(f"Error: Plugin 'ctrlkit-{key}' failed to load: {error}")
        assert len(result.stderr.splitlines()) == 1, result.stderr


def test_ctrl_c_while_a_plugin_hangs_at_import_still_interrupts_at_once(tmp_path):
    started = tmp_path / "import-started"
    env = _distributions(tmp_path / "site", hangs=f"""
        import pathlib
        import time

        pathlib.Path({str(started)!r}).touch()
        time.sleep(600)
    """)
    process = subprocess.Popen([sys.executable, "-m", "ctrlkit", "--help"], env={**os.environ, **env},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=5)  # well before the 10 s default timeout
    finally:
        process.kill()
    # the command's own answer to Ctrl-C, wherever it lands (was click's "Aborted!" and 1 while parsing)
    assert process.returncode == 130 and stderr.strip() == "Interrupted; rerun the same command to resume.", stderr


@pytest.mark.parametrize("value", ["abc", "0", "-1", "nan", "inf"])
def test_a_bad_plugin_timeout_is_one_line(value):
    result = run_ctrlkit("list", env={"CTRLKIT_PLUGIN_TIMEOUT": value})
    assert result.returncode == 1
    assert result.stderr == f"Error: CTRLKIT_PLUGIN_TIMEOUT must be a positive number of seconds, not '{value}'\n"


def test_the_plugin_timeout_bounds_a_slow_plugin_and_can_be_raised_for_it(tmp_path):
    env = _distributions(tmp_path, slow="""
        import time

        import ctrlkit

        time.sleep(1.5)


        @ctrlkit.hookimpl
        def register_controllers(register):
            register("slow", "ctrlkit_controllers.tag:Tag")
    """)
    bounded = run_ctrlkit("list", "controllers", env={**env, **FAST})
    assert bounded.returncode == 0 and "slow" not in bounded.stdout and "  tag  (" in bounded.stdout
    assert "plugin 'ctrlkit-slow' failed to load (import did not finish within 1 s" in bounded.stderr
    waited = run_ctrlkit("list", "controllers", env={**env, "CTRLKIT_PLUGIN_TIMEOUT": "20"})
    assert waited.returncode == 0 and "  slow  (ctrlkit-slow)" in waited.stdout, waited.stderr


def test_a_distribution_whose_metadata_cannot_be_read_is_reported_and_the_rest_load(tmp_path):
    env = _distributions(tmp_path, garbled="")
    (tmp_path / "zoo_garbled-0.1.dist-info" / "entry_points.txt").write_bytes(b"[ctrlkit]\nx = y\xff\xfe\n")
    listing = run_ctrlkit("list", "metrics", env=env)
    assert listing.returncode == 0 and "  rouge  (ctrlkit-metrics)" in listing.stdout
    lines = _lines_naming(listing.stderr, "ctrlkit-garbled")
    assert len(lines) == 1 and "metadata cannot be read: UnicodeDecodeError" in lines[0]


def test_a_plugin_whose_metadata_is_not_utf8_is_reported_and_the_rest_load(tmp_path):
    env = _distributions(tmp_path, mangled="")
    (tmp_path / "zoo_mangled-0.1.dist-info" / "METADATA").write_bytes(b"Metadata-Version: 2.1\nName: x\xff\n")
    listing = run_ctrlkit("list", "metrics", env=env)
    assert listing.returncode == 0 and "  rouge  (ctrlkit-metrics)" in listing.stdout, listing.stderr
    lines = [line for line in listing.stderr.splitlines() if "zoo_mangled-0.1.dist-info" in line]
    assert len(lines) == 1 and "metadata cannot be read: UnicodeDecodeError" in lines[0], listing.stderr


def test_a_distribution_without_a_name_is_known_by_its_entry_point(tmp_path):
    env = _distributions(tmp_path, nameless="")
    (tmp_path / "zoo_nameless-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nVersion: 0.1\n")
    assert _rows(env)["ctrlkit-nameless"] == {"name": "ctrlkit-nameless", "hooks": []}


def test_registration_hooks_that_raise_anything_are_reported_and_every_command_works(tmp_path):
    env = _distributions(tmp_path, hooks_raise=HOOK_FAILURES)
    help_ = run_ctrlkit("--help", env=env)
    assert help_.returncode == 0 and "  run " in help_.stdout and "half-added" not in help_.stdout
    assert _lines_naming(help_.stderr, "ctrlkit-hooks-raise") == [
        "ctrlkit: plugin 'ctrlkit-hooks-raise': register_commands raised SystemExit: commands broke; "
        "what it registered is left out"]
    listing = run_ctrlkit("list", env=env)
    assert listing.returncode == 0, listing.stderr
    for shown in ["  tag  (ctrlkit-controllers)", "  rouge  (ctrlkit-metrics)", "  sample  (ctrlkit-datasets)",
                  "  extractive  (ctrlkit.backbones)", "  tfidf  (ctrlkit.vectorizers)"]:
        assert shown in listing.stdout
    assert "half-registered" not in listing.stdout
    lines = _lines_naming(listing.stderr, "ctrlkit-hooks-raise")
    assert len(lines) == 6, listing.stderr
    for hook, error in [("register_controllers", "RuntimeError: controllers broke"),
                        ("register_metrics", "SystemExit: 2"), ("register_datasets", "KeyboardInterrupt"),
                        ("register_backbones", "GeneratorExit"),
                        ("register_topic_vectorizers", "Odd: vectorizers broke"),
                        ("register_commands", "SystemExit: commands broke")]:
        assert f"ctrlkit: plugin 'ctrlkit-hooks-raise': {hook} raised {error}; what it registered is left out" in lines
    row = _rows(env)["ctrlkit-hooks-raise"]
    assert row["version"] == "0.1" and len(row["hooks"]) == 6
    assert row["error"].count(" raised ") == 6 and "register_metrics raised SystemExit: 2" in row["error"]
    strict = run_ctrlkit("list", env={**env, "CTRLKIT_STRICT_PLUGINS": "1"})
    assert strict.returncode == 1 and len(strict.stderr.splitlines()) == 1
    assert strict.stderr.startswith("Error: Plugin 'ctrlkit-hooks-raise': register_commands raised SystemExit")


def test_a_command_that_clashes_with_a_built_in_is_refused_and_the_built_in_kept(tmp_path):
    env = _distributions(tmp_path, hijack="""
        import click

        import ctrlkit


        @ctrlkit.hookimpl
        def register_commands(cli):
            @cli.command()
            def run():
                click.echo("hijacked run")

            cli.add_command(click.Command("list", callback=lambda: click.echo("hijacked list")))

            @cli.command()
            def hello():
                click.echo("hello from a plugin")
    """)
    run = run_ctrlkit("run", "--help", env=env)
    assert run.returncode == 0 and "Generate summaries with a controller" in run.stdout and "hijacked" not in run.stdout
    lines = _lines_naming(run.stderr, "ctrlkit-hijack")
    assert lines == [f"ctrlkit: plugin 'ctrlkit-hijack': register_commands replaces or removes the command "
                     f"'{name}', which ctrlkit already has; the existing one is kept" for name in ("list", "run")]
    assert run_ctrlkit("list", "controllers", env=env).stdout.startswith("controllers:\n")
    assert run_ctrlkit("hello", env=env).stdout == "hello from a plugin\n"
    assert "replaces or removes the command 'run'" in _rows(env)["ctrlkit-hijack"]["error"]


def test_hooks_that_take_the_wrong_arguments_or_are_generators_are_reported(tmp_path):
    env = _distributions(tmp_path, wrong_args="""
        import ctrlkit


        @ctrlkit.hookimpl
        def register_controllers(reg):
            reg("wrong", "ctrlkit_controllers.tag:Tag")
    """, generator="""
        import ctrlkit


        @ctrlkit.hookimpl
        def register_controllers(register):
            register("lazy", "ctrlkit_controllers.tag:Tag")
            yield
    """)
    listing = run_ctrlkit("list", "controllers", env=env)
    assert listing.returncode == 0 and "  tag  (ctrlkit-controllers)" in listing.stdout
    assert "wrong" not in listing.stdout and "lazy" not in listing.stdout
    assert "plugin 'ctrlkit-wrong-args' failed to load (PluginValidationError" in listing.stderr
    assert _lines_naming(listing.stderr, "ctrlkit-generator") == [
        "ctrlkit: plugin 'ctrlkit-generator': register_controllers is a generator function, so its body never "
        "ran; a hook must be a plain function"]


# In process: what a loaded plugin registers


def _plugin(**registrations):
    """A plugin object whose register_controllers registers ``name=factory`` pairs (a list of
    pairs under ``pairs`` when a name repeats or is not an identifier)."""
    pairs = registrations.pop("pairs", []) + list(registrations.items())

    class Plugin:
        @ctrlkit.hookimpl
        def register_controllers(self, register):
            for name, factory in pairs:
                register(name, factory)

    return Plugin()


class Fine(ctrlkit.Controller):
    """Leaves the input as it is."""

    def apply(self, example, model_input):
        return model_input


@pytest.mark.parametrize("factory, problem", [
    (42, "42 (int) is neither a class nor a 'module:attr' string"),
    (None, "None (NoneType) is neither a class nor a 'module:attr' string"),
    ("no_colon", "'no_colon' is not a 'module:attr' string"),
    ("a:b:c", "'a:b:c' is not a 'module:attr' string"),
    ("", "'' is not a 'module:attr' string"),
    ("pkg.mod:", "'pkg.mod:' is not a 'module:attr' string"),
    ("my-pkg:Thing", "'my-pkg:Thing' is not a 'module:attr' string"),
])
def test_a_factory_that_cannot_work_is_refused_at_registration_naming_plugin_and_name(
        throwaway_plugins, caplog, factory, problem):
    plugin = f"bad-factory-{abs(hash(repr(factory)))}"
    throwaway_plugins(_plugin(broken=factory, fine=Fine), plugin)
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        registry = get_registry("controllers")
    message = f"controller 'broken' of plugin '{plugin}' is refused: {problem}"
    assert f"ctrlkit: plugin '{plugin}': {message}" in [record.getMessage() for record in caplog.records]
    with pytest.raises(PluginLoadError) as refused:
        registry.create("broken")
    assert str(refused.value) == message
    assert isinstance(registry.create("fine"), Fine) and isinstance(registry.create("tag"), ctrlkit.Controller)
    assert f"  broken  ({plugin})  unavailable: {message}" in describe("controllers", registry).splitlines()


def test_a_well_formed_factory_string_is_still_imported_only_when_used(throwaway_plugins, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "lazy_probe_module.py").write_text("import ctrlkit\nLOADED = True\nValue = 42\n"
                                                   "class Probe(ctrlkit.Controller):\n"
                                                   "    def apply(self, example, model_input):\n"
                                                   "        return model_input\n")
    throwaway_plugins(_plugin(probe="lazy_probe_module:Probe", constant="lazy_probe_module:Value",
                              dotted="lazy_probe_module:Probe.apply"), "lazy-strings")
    registry = get_registry("controllers")
    assert "lazy_probe_module" not in sys.modules
    assert registry.create("probe").name == "probe"
    with pytest.raises(PluginLoadError, match="controller 'constant' of plugin 'lazy-strings' is "
                                              "'lazy_probe_module:Value', which is a int, not a class or function"):
        registry.create("constant")
    assert callable(registry.entry("dotted").load())


@pytest.mark.parametrize("name, problem", [
    (42, "the name 42 (int) is not a string"),
    (None, "the name None (NoneType) is not a string"),
    ("", "the name '' is empty or holds spaces or control characters"),
    ("two words", "the name 'two words' is empty or holds spaces or control characters"),
    ("bell\a", "the name 'bell\\x07' is empty or holds spaces or control characters"),
])
def test_a_name_that_cannot_be_typed_is_refused_and_the_rest_listed(throwaway_plugins, caplog, name, problem):
    plugin = f"bad-name-{abs(hash(repr(name)))}"
    throwaway_plugins(_plugin(pairs=[(name, Fine)], fine=Fine), plugin)
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        registry = get_registry("controllers")
    assert f"plugin '{plugin}': a controller of plugin '{plugin}' is refused: {problem}" in caplog.text
    assert "fine" in registry.names() and "tag" in registry.names() and name not in registry.names()
    assert "  fine  (" in describe("controllers", registry)


def test_a_name_registered_twice_is_unusable_with_one_line_and_the_rest_works(throwaway_plugins, caplog):
    throwaway_plugins(_plugin(pairs=[("twice", Fine), ("twice", Fine)], once=Fine), "twice-plugin")
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        registry = get_registry("controllers")
        get_registry("controllers")  # reported once, however often the registry is built
    assert caplog.text.count("controller 'twice' is registered by plugin 'twice-plugin' twice") == 1
    with pytest.raises(DuplicateComponentError,
                       match="^controller 'twice' is registered by plugin 'twice-plugin' twice$"):
        registry.create("twice")
    assert isinstance(registry.create("once"), Fine) and registry.create("tag").name == "tag"


def test_a_rival_for_a_built_in_name_makes_only_that_name_unusable(throwaway_plugins):
    throwaway_plugins(_plugin(tag=Fine, mine=Fine), "rival-of-tag")
    registry = get_registry("controllers")
    with pytest.raises(DuplicateComponentError, match="both plugin 'ctrlkit-controllers' and plugin 'rival-of-tag'"):
        ctrlkit.get_controller("tag")
    assert isinstance(registry.create("mine"), Fine) and registry.create("prepend").name == "prepend"
    assert "  tag  (ctrlkit-controllers)  unavailable: controller 'tag' is registered by both" in describe(
        "controllers", registry)


def test_strict_plugins_makes_a_refused_registration_an_error(throwaway_plugins, monkeypatch):
    throwaway_plugins(_plugin(answer=42), "strict-answer")
    monkeypatch.setenv("CTRLKIT_STRICT_PLUGINS", "1")
    with pytest.raises(PluginLoadError, match="^Plugin 'strict-answer': controller 'answer' of plugin "
                                              "'strict-answer' is refused: 42 \\(int\\)"):
        get_registry("controllers")


def test_a_hook_that_returns_a_value_still_registers_and_an_async_hook_is_reported(throwaway_plugins, caplog):
    class Returns:
        @ctrlkit.hookimpl
        def register_controllers(self, register):
            register("returned", Fine)
            return ["something"]

    class Async:
        @ctrlkit.hookimpl
        async def register_controllers(self, register):
            register("awaited", Fine)

    throwaway_plugins(Returns(), "returns-a-value")
    throwaway_plugins(Async(), "async-hook")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with caplog.at_level(logging.WARNING, logger="ctrlkit"):
            registry = get_registry("controllers")
        gc.collect()
    assert not [warning for warning in caught if "never awaited" in str(warning.message)]
    assert "returned" in registry.names() and "awaited" not in registry.names()
    assert ("plugin 'async-hook': register_controllers is a coroutine function, so its body never ran"
            in caplog.text)
    assert "returns-a-value" not in caplog.text


def test_the_plugins_report_carries_a_loaded_plugins_hook_errors(throwaway_plugins):
    from ctrlkit.plugins import plugin_report

    class Raises:
        @ctrlkit.hookimpl
        def register_metrics(self, register):
            raise ValueError("no metrics today")

    throwaway_plugins(Raises(), "reported-raiser")
    row = {row["name"]: row for row in plugin_report()}["reported-raiser"]
    assert row == {"name": "reported-raiser", "hooks": ["register_metrics"],
                   "error": "register_metrics raised ValueError: no metrics today; what it registered is left out"}


# In process: components whose classes misbehave when listed or built


def test_components_whose_declarations_or_modules_raise_are_listed_as_unavailable(
        throwaway_plugins, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "exits_on_import.py").write_text("import sys\nsys.exit('module gone')\n")
    (tmp_path / "class_body_raises.py").write_text(
        "import ctrlkit\nclass Broken(ctrlkit.Controller):\n    options = (ctrlkit.Option('n', int, 'x', 'bad'),)\n"
        "    raise RuntimeError('class body broke')\n")

    class RaisingOptions(type):
        @property
        def options(cls):
            raise RuntimeError("options broke")

    class DeclaresBadly(Fine, metaclass=type("M", (RaisingOptions, type(Fine)), {})):
        """Its options raise."""

    class OptionsAreNotOptions(Fine):
        """Its options are not Options."""

        options = (42,)

    class InitRaises(Fine):
        """Fails only when built."""

        def __init__(self, **options):
            raise RuntimeError("init broke")

    throwaway_plugins(_plugin(exits="exits_on_import:Thing", body="class_body_raises:Broken",
                              declares=DeclaresBadly, not_options=OptionsAreNotOptions, init=InitRaises),
                      "misbehaving")
    registry = get_registry("controllers")
    lines = describe("controllers", registry).splitlines()
    assert ("  exits  (misbehaving)  unavailable: controller 'exits' of plugin 'misbehaving' cannot be imported "
            "from 'exits_on_import:Thing': SystemExit: module gone") in lines
    assert ("  body  (misbehaving)  unavailable: controller 'body' of plugin 'misbehaving' cannot be imported "
            "from 'class_body_raises:Broken': RuntimeError: class body broke") in lines
    assert ("  declares  (misbehaving)  unavailable: its declarations cannot be read: RuntimeError: options broke"
            in lines)
    assert ("  not_options  (misbehaving)  unavailable: its declarations cannot be read: AttributeError: 'int' "
            "object has no attribute 'choices'") in lines
    assert "  init  (misbehaving)  Fails only when built." in lines
    assert any(line.startswith("  tag  (ctrlkit-controllers)") for line in lines)
    for name, error in [("declares", "RuntimeError: options broke"), ("init", "RuntimeError: init broke"),
                        ("not_options", "AttributeError")]:
        with pytest.raises(CtrlkitError, match=f"^controller '{name}' of plugin 'misbehaving' cannot be "
                                               f"created: {error}"):
            registry.create(name)


def test_a_component_that_fails_to_build_ends_a_run_with_one_line(tmp_path):
    env = _distributions(tmp_path, init_raises="""
        import ctrlkit


        class Boom(ctrlkit.Controller):
            def __init__(self, **options):
                raise RuntimeError("init broke")


        @ctrlkit.hookimpl
        def register_controllers(register):
            register("boom", Boom)
    """)
    result = run_ctrlkit("run", "-c", "boom", "--limit", "1", "-o", str(tmp_path / "out"), env=env)
    assert result.returncode == 1
    assert result.stderr == ("Error: controller 'boom' of plugin 'ctrlkit-init-raises' cannot be created: "
                             "RuntimeError: init broke\n")


class _ExitsWhenBuilt(ctrlkit.Controller):
    def __init__(self, **options):
        sys.exit("a plugin's controller gave up")


class _ExitingComponents:
    @ctrlkit.hookimpl
    def register_controllers(self, register):
        register("exits-when-built", _ExitsWhenBuilt)


def test_a_component_that_exits_in_its_init_is_one_error_not_the_end_of_ctrlkit(throwaway_plugins):
    throwaway_plugins(_ExitingComponents(), "exiting-components")
    with pytest.raises(ctrlkit.PluginLoadError, match="'exits-when-built' of plugin .* cannot be created: SystemExit"):
        ctrlkit.get_controller("exits-when-built")
