"""The bundled plugins (and the example plugin) import from ctrlkit only the package's own names
and ctrlkit.plugin_api, and every name plugin_api offers resolves to the helper it names."""

import ast
import importlib
import subprocess
import sys

from helpers import ROOT

import ctrlkit.plugin_api as plugin_api

ALLOWED = {"ctrlkit", "ctrlkit.plugin_api"}


def _ctrlkit_imports(path):
    """``(line, module)`` of every import of a ctrlkit module in the file (inside functions too)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "ctrlkit":
            yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names if alias.name.split(".")[0] == "ctrlkit")


def test_plugins_import_only_the_package_and_plugin_api():
    sources = [*(ROOT / "plugins").glob("*/ctrlkit_*/**/*.py"),
               *(ROOT / "examples" / "ctrlkit-example-plugin").glob("ctrlkit_*/**/*.py")]
    assert len(sources) > 30
    reaching = [f"{path.relative_to(ROOT)}:{line}: {module}" for path in sources
                for line, module in _ctrlkit_imports(path) if module not in ALLOWED]
    assert reaching == []


def test_every_plugin_api_name_is_the_helper_of_its_module():
    offered = sorted(name for names in plugin_api._HOMES.values() for name in names)
    assert plugin_api.__all__ == offered and len(offered) >= 25
    for module, names in plugin_api._HOMES.items():
        home = importlib.import_module(f"ctrlkit.{module}")
        for name in names:
            assert getattr(plugin_api, name) is getattr(home, name), (module, name)
    try:
        plugin_api.no_such_helper
    except AttributeError as refused:
        assert "ctrlkit.plugin_api" in str(refused)
    else:
        raise AssertionError("an unknown name resolved")


def test_importing_plugin_api_loads_no_helper_module():
    """Names load on first use, so a plugin pays only for the helpers it imports."""
    code = ("import sys, ctrlkit.plugin_api; print(sorted(m for m in sys.modules if m.startswith('ctrlkit.') "
            "and m != 'ctrlkit.plugin_api'))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_each_plugin_distribution_describes_every_component_it_registers():
    """The package descriptions pip shows name what each distribution adds, so they cannot go stale."""
    import tomllib

    from ctrlkit.plugins import get_registry

    for kind, folder in (("controllers", "controllers"), ("metrics", "metrics"), ("datasets", "datasets")):
        project = tomllib.loads((ROOT / "plugins" / folder / "pyproject.toml").read_text())["project"]
        description = project["description"]
        registry = get_registry(kind)
        named = [name for name in registry.names() if registry.entry(name).plugin == f"ctrlkit-{folder}"]
        assert named, kind
        words = {word.strip(",()").lower() for word in description.replace("/", " ").split()}
        missing = [name for name in named if name.lower() not in words]
        assert missing == [], f"plugins/{folder}/pyproject.toml does not name {missing}"
