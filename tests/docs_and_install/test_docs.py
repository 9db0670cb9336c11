"""The plugin docs keep up with the code: every hook is documented with its exact signature and
tested through a registered plugin, and every Python block of docs/ compiles."""

import ast
import inspect
import re

import pytest

from ctrlkit import hookspecs
from ctrlkit.plugins import pm

from helpers import ROOT

DOCS = ROOT / "docs"
TESTS = ROOT / "tests"


def _hooks() -> dict[str, str]:
    """Hook name -> signature, for every function pluggy reads as a ctrlkit hookspec."""
    return {name: str(inspect.signature(function)) for name, function in vars(hookspecs).items()
            if inspect.isfunction(function) and pm.parse_hookspec_opts(hookspecs, name) is not None}


def test_the_hooks_are_found():
    assert "register_controllers" in _hooks() and "register_commands" in _hooks()
    assert _hooks()["register_commands"] == "(cli)"


def test_every_hook_has_a_section_with_its_exact_signature_in_hooks_md():
    sections = re.findall(r"^## `(\w+)(\(.*\))`$", (DOCS / "hooks.md").read_text(encoding="utf-8"), re.MULTILINE)
    documented = dict(sections)
    missing = [f"{name}{signature}" for name, signature in _hooks().items() if documented.get(name) != signature]
    assert not missing, f"docs/hooks.md has no section '## `HOOK(ARGS)`' for: {', '.join(missing)}"
    stale = sorted(set(documented) - set(_hooks()))
    assert not stale, f"docs/hooks.md documents hooks that hookspecs.py does not define: {', '.join(stale)}"


def test_every_hook_section_has_an_example_implementing_it():
    text = (DOCS / "hooks.md").read_text(encoding="utf-8")
    for name, signature in _hooks().items():
        section = text.split(f"## `{name}{signature}`", 1)[1].split("\n## ", 1)[0]
        assert re.search(rf"```python\n.*@ctrlkit\.hookimpl\ndef {name}{re.escape(signature)}:", section, re.DOTALL), (
            f"the section of {name} in docs/hooks.md has no Python example implementing it")


def _hookimpls_in_tests() -> set[str]:
    """Names of the @hookimpl functions defined inside a test's body (a plugin the test
    registers), over every test_*.py under tests/."""
    found = set()
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tests = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]
        for test in tests:
            found.update(node.name for node in ast.walk(test) if isinstance(node, ast.FunctionDef)
                         and any("hookimpl" in ast.unparse(decorator) for decorator in node.decorator_list))
    return found


def test_every_hook_is_implemented_by_a_plugin_some_test_registers():
    untested = sorted(set(_hooks()) - _hookimpls_in_tests())
    assert not untested, f"no test implements hook(s) {', '.join(untested)} in a plugin it registers"


def _python_blocks() -> list[tuple[str, str]]:
    """``(source, "file.md:line")`` of every fenced Python block in docs/."""
    blocks = []
    for path in sorted(DOCS.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
            blocks.append((match.group(1), f"{path.name}:{text.count(chr(10), 0, match.start()) + 2}"))
    return blocks


def test_every_doc_has_python_blocks():
    assert {where.partition(":")[0] for _, where in _python_blocks()} == {path.name for path in DOCS.glob("*.md")}


@pytest.mark.parametrize("source, where", _python_blocks(), ids=[where for _, where in _python_blocks()])
def test_every_python_block_of_the_docs_compiles(source, where):
    compile(source, where, "exec")


def _test_file(path: str):
    """The file ``tests/FOLDER/test_x.py`` names; ``tests/test_x.py`` (no folder) names the one
    ``test_x.py`` anywhere under tests/, and None when there is none or more than one."""
    if (ROOT / path).is_file():
        return ROOT / path
    found = sorted(TESTS.rglob(path.rpartition("/")[2])) if path.count("/") == 1 else []
    return found[0] if len(found) == 1 else None


def test_every_test_named_in_reliability_md_exists():
    """Each guarantee in docs/reliability.md names the tests that hold it; a renamed or removed
    test would leave the promise unheld without a word."""
    text = (DOCS / "reliability.md").read_text(encoding="utf-8")
    named, current = [], None
    for match in re.finditer(r"`(tests/(?:\w+/)*(test_\w+)\.py)(?:::(\w+))?`|`::(\w+)`", text):
        if match[1]:
            current = match[1]
            if match[3]:
                named.append((current, match[3]))
        elif current:
            named.append((current, match[4]))
    assert len(named) > 100
    missing = []
    for path, test in named:
        file = _test_file(path)
        source = file.read_text(encoding="utf-8") if file else ""
        if not re.search(rf"^def {test}\(", source, re.MULTILINE):
            missing.append(f"{path}::{test}")
    assert not missing, f"docs/reliability.md names tests that do not exist: {', '.join(missing)}"


# Words that speak to the docs' writers or tell the project's history: a reader has no "before"
# to compare with and no issue tracker open.
WRITERS_WORDS = re.compile(r"\bissue \d+|\bhardening round|\bas before\b|\bbefore this\b|\bTODO\b|\bFIXME\b|\bXXX\b",
                           re.IGNORECASE)


@pytest.mark.parametrize("path", ["README.md", *sorted(f"docs/{path.name}" for path in DOCS.glob("*.md"))])
def test_the_docs_speak_to_their_readers_not_to_their_writers(path):
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    found = [f"{path}:{number}: {line.strip()}" for number, line in enumerate(lines, 1) if WRITERS_WORDS.search(line)]
    assert not found, "\n".join(found)
