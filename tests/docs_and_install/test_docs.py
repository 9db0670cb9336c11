"""The docs keep up with the code: every hook is documented with its exact signature and tested
through a registered plugin, every Python block of the README and of docs/ compiles, and the
generated reference pages list every registered component and every public name."""

import ast
import importlib.util
import inspect
import re

import pytest

import ctrlkit
from ctrlkit import hookspecs
from ctrlkit.plugins import KINDS, get_registry, pm

from helpers import ROOT

DOCS = ROOT / "docs"
TESTS = ROOT / "tests"
# the README and every page of the docs site, its subfolders included
DOC_FILES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


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
    """``(source, "path.md:line")`` of every fenced Python block in the README and docs/."""
    blocks = []
    for path in DOC_FILES:
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
            where = f"{path.relative_to(ROOT).as_posix()}:{text.count(chr(10), 0, match.start()) + 2}"
            blocks.append((match.group(1), where))
    return blocks


def test_every_doc_has_python_blocks():
    """Every guide (docs/*.md) and the README show Python; the reference pages under docs/reference/
    are generated or hold tables, and need none."""
    with_blocks = {where.rpartition(":")[0] for _, where in _python_blocks()}
    assert {"README.md", *(f"docs/{path.name}" for path in DOCS.glob("*.md"))} <= with_blocks


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


@pytest.mark.parametrize("path", [path.relative_to(ROOT).as_posix() for path in DOC_FILES])
def test_the_docs_speak_to_their_readers_not_to_their_writers(path):
    lines = (ROOT / path).read_text(encoding="utf-8").splitlines()
    found = [f"{path}:{number}: {line.strip()}" for number, line in enumerate(lines, 1) if WRITERS_WORDS.search(line)]
    assert not found, "\n".join(found)


# The docs site's generator (docs/hooks_gen.py, an mkdocs hook that imports no mkdocs): the
# reference pages are made from the registry when the site is built, so they list what is
# registered; these tests check it without building the site.


def _generator():
    spec = importlib.util.spec_from_file_location("ctrlkit_docs_hooks_gen", DOCS / "hooks_gen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_component_kind_has_a_reference_page_in_the_site():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for kind in KINDS:
        page = DOCS / "reference" / f"{kind}.md"
        assert page.is_file(), f"no reference page for {kind}: docs/reference/{kind}.md"
        assert f"<!-- generated: components {kind} -->" in page.read_text(encoding="utf-8")
        assert f"reference/{kind}.md" in nav, f"mkdocs.yml's nav lacks reference/{kind}.md"


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_generated_component_pages_list_every_registered_component(kind):
    generator = _generator()
    problems = []
    page = generator.render((DOCS / "reference" / f"{kind}.md").read_text(encoding="utf-8"), problems)
    assert not problems, "\n".join(problems)  # a component without a description, stale notes, ...
    headings = re.findall(r"^## `([^`]+)` \{ #", page, re.MULTILINE)
    assert headings == get_registry(kind).names()
    for name in headings:  # each section holds its generated part, whatever notes follow
        section = page.split(f"## `{name}` {{", 1)[1].split("\n## ", 1)[0]
        assert re.search(r"\*\*[\w ]+:\*\* ", section) or kind == "executors", f"{kind} '{name}': no generated facts"
        assert "| option |" in section or "No options." in section


def test_the_table_of_controls_lists_what_each_controller_and_metric_reads():
    problems = []
    table = _generator().controls_markdown(problems)
    assert not problems
    for kind in ("controllers", "metrics"):
        registry = get_registry(kind)
        for name in registry.names():
            row = re.search(rf"^\| \[`{re.escape(name)}`\]\({kind}\.md#[^)]*\) \| ([^|]*)\|", table, re.MULTILINE)
            assert row, f"{kind} '{name}' is not in the table of controls"
            reads = registry.create(name).reads
            assert all(f"`{control}`" in row.group(1) for control in reads), (name, row.group(1), reads)


def test_a_component_without_a_description_fails_the_docs_build(throwaway_plugins):
    class Undocumented(ctrlkit.Controller):
        def apply(self, example, model_input):
            return model_input

    class Plugin:
        @ctrlkit.hookimpl
        def register_controllers(self, register):
            register("undocumented", Undocumented)

    throwaway_plugins(Plugin(), "undocumented-docs")
    problems = []
    page = _generator().components_markdown("controllers", "\n## no-such-controller\n\nStale notes.\n", problems)
    assert "## `undocumented`" in page
    assert any("'undocumented'" in problem and "no description" in problem for problem in problems)
    assert any("'no-such-controller'" in problem and "no installed plugin" in problem for problem in problems)


@pytest.mark.parametrize("module", ["ctrlkit", "ctrlkit.plugin_api"])
def test_the_python_api_pages_document_every_public_name(module):
    problems = []
    page = _generator().api_markdown(module, problems)
    assert not problems
    documented = re.findall(rf"^::: {re.escape(module)}\.(\w+)$", page, re.MULTILINE)
    assert sorted(documented) == sorted(importlib.import_module(module).__all__)


def test_every_page_of_docs_is_in_the_site_nav():
    yaml = pytest.importorskip("yaml")
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def pages(nav):
        for item in nav:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            yield from (pages(value) if isinstance(value, list) else [value])

    in_nav = set(pages(config["nav"]))
    on_disk = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert on_disk == in_nav
