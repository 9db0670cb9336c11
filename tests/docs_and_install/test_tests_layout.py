"""The tests are laid out as tests/README.md says: every test file in a folder named for the code
it tests, helpers/ without tests, and no test file importing another test file or a conftest.py
(what two of them share lives in helpers/ or in a fixture)."""

from importlib.util import module_from_spec, spec_from_file_location

from helpers import ROOT

TESTS = ROOT / "tests"


def test_every_test_file_is_in_a_folder_the_readme_names():
    readme = (TESTS / "README.md").read_text(encoding="utf-8")
    folders = {path.relative_to(TESTS).parts[0] for path in TESTS.rglob("test_*.py")}
    assert not [path.name for path in TESTS.glob("test_*.py")], "a test file directly in tests/"
    assert folders and all(f"| `{folder}/` |" in readme for folder in folders), sorted(folders)
    assert not list((TESTS / "helpers").rglob("test_*.py"))


def test_no_test_file_imports_another_test_file_or_a_conftest():
    spec = spec_from_file_location("architecture", ROOT / "scripts" / "architecture.py")
    architecture = module_from_spec(spec)
    spec.loader.exec_module(architecture)
    tests = architecture.modules(TESTS)
    assert len(tests) > 100
    assert architecture.tests_importing_tests(tests) == []
