"""The shape of the code, measured: modules per folder, the largest functions, import circles,
private names imported across modules, and the core modules the bundled plugins reach into.

    python scripts/architecture.py            # a readable summary
    python scripts/architecture.py --json     # the same, as JSON (to compare two commits)

Imports are read with ``ast`` (nothing is imported). An import inside a function counts: it is
how a circle is hidden, not how it is removed.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core" / "ctrlkit"
PLUGINS = sorted(p for p in (ROOT / "plugins").glob("*/ctrlkit_*") if p.is_dir())
TESTS = ROOT / "tests"


def module_name(path: Path, package_root: Path) -> str:
    parts = list(path.relative_to(package_root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(package_root: Path) -> dict[str, Path]:
    return {module_name(path, package_root): path for path in sorted(package_root.rglob("*.py"))}


def imports_of(name: str, path: Path) -> list[tuple[str, list[str]]]:
    """``(module imported, names taken from it)`` for every import in the file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.append((base, [alias.name for alias in node.names]))
    return found


def import_graph(table: dict[str, Path]) -> dict[str, set[str]]:
    graph = {}
    for name, path in table.items():
        targets = set()
        for module, names in imports_of(name, path):
            for candidate in [module, *(f"{module}.{n}" for n in names)]:
                if candidate in table and candidate != name:
                    targets.add(candidate)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def functions(table: dict[str, Path]) -> list[tuple[int, str]]:
    found = []
    for name, path in table.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.append((node.end_lineno - node.lineno + 1, f"{name}.{node.name}"))
    return sorted(found, reverse=True)


def private_imports(table: dict[str, Path], known: set[str]) -> list[str]:
    """``importer: module._name`` for each private name taken from another module we own."""
    found = []
    for name, path in table.items():
        for module, names in imports_of(name, path):
            if module.split(".")[0] in known and module != name:
                found += [f"{name}: {module}.{n}" for n in names if n.startswith("_") and not n.startswith("__")]
    return found


def tests_importing_tests(table: dict[str, Path]) -> list[str]:
    """``importer: module`` for each import, in any module under tests/, of a test module (a
    ``test_*.py`` anywhere under tests/, by whichever dotted name reaches it) or of a conftest.py:
    what tests share lives in tests/helpers/ and in fixtures."""
    tests = {path.stem for path in table.values() if path.name.startswith("test_")} | {"conftest"}
    found = []
    for name, path in table.items():
        for module, names in imports_of(name, path):
            if any(part in tests for part in module.split(".")):
                found.append(f"{name}: {module}")
            elif set(names) & tests:  # from tests.engine import test_run
                found += [f"{name}: {module}.{n}" for n in sorted(set(names) & tests)]
    return found


def measure() -> dict:
    core = modules(CORE)
    plugin_modules = {name: path for root in PLUGINS for name, path in modules(root).items()}
    test_modules = modules(TESTS)
    folders = Counter(str(path.parent.relative_to(ROOT)) for path in core.values())
    graph = import_graph(core)
    known = {"ctrlkit", *(root.name for root in PLUGINS)}
    reached = Counter()
    for name, path in plugin_modules.items():
        for module, _ in imports_of(name, path):
            if module.startswith("ctrlkit.") or module == "ctrlkit":
                reached[module] += 1
    test_imports = tests_importing_tests(test_modules)
    return {
        "core_modules": len(core),
        "core_lines": sum(len(p.read_text(encoding="utf-8").splitlines()) for p in core.values()),
        "modules_per_folder": dict(sorted(folders.items())),
        "largest_functions": [f"{lines} {name}" for lines, name in functions(core)[:10]],
        "functions_over_100_lines": sum(lines > 100 for lines, _ in functions(core)),
        "import_circles": circles(graph),
        # the package's __init__ re-exports its modules, so a module importing "from ctrlkit import X"
        # joins every circle; without it, the circles between the modules themselves
        "import_circles_between_modules": circles({name: targets - {"ctrlkit"} for name, targets in graph.items()
                                                   if name != "ctrlkit"}),
        "private_cross_module_imports": private_imports({**core, **plugin_modules}, known),
        "core_modules_plugins_import": dict(sorted(reached.items())),
        "test_modules": len(test_modules),
        "test_files": sum(path.name.startswith("test_") for path in test_modules.values()),
        "test_modules_per_folder": dict(sorted(Counter(str(path.parent.relative_to(ROOT))
                                                       for path in test_modules.values()).items())),
        "tests_importing_test_modules": test_imports,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the measures as JSON")
    found = measure()
    if parser.parse_args().json:
        print(json.dumps(found, indent=2))
        return
    print(f"core: {found['core_modules']} modules, {found['core_lines']} lines")
    for folder, count in found["modules_per_folder"].items():
        print(f"  {folder}: {count}")
    print(f"functions over 100 lines: {found['functions_over_100_lines']}; largest:")
    for line in found["largest_functions"]:
        print(f"  {line}")
    print(f"import circles: {len(found['import_circles'])}")
    for circle in found["import_circles"]:
        print(f"  {' <-> '.join(circle)}")
    print(f"import circles between modules (the package's __init__ left out): "
          f"{len(found['import_circles_between_modules'])}")
    for circle in found["import_circles_between_modules"]:
        print(f"  {' <-> '.join(circle)}")
    print(f"private names imported across modules: {len(found['private_cross_module_imports'])}")
    for line in found["private_cross_module_imports"]:
        print(f"  {line}")
    print(f"core modules the bundled plugins import: {len(found['core_modules_plugins_import'])}")
    for module, count in found["core_modules_plugins_import"].items():
        print(f"  {module}: {count}")
    print(f"test modules: {found['test_modules']} ({found['test_files']} test_*.py files); importing other "
          f"test modules: {len(found['tests_importing_test_modules'])}")
    for folder, count in found["test_modules_per_folder"].items():
        print(f"  {folder}: {count}")
    for line in found["tests_importing_test_modules"]:
        print(f"  {line}")


if __name__ == "__main__":
    main()
