"""The JSON Schemas of the records ctrlkit writes (core/ctrlkit/json_schemas/), as validators; the
session fixture in conftest.py checks every results.json, sweep.json and table.json the tests'
runs leave behind against them."""

import json
from pathlib import Path

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource

SCHEMAS = Path(__file__).resolve().parents[2] / "core" / "ctrlkit" / "json_schemas"
RECORDS = {"results.json": "results", "sweep.json": "sweep", "table.json": "table"}
"""The file names checked, and the schema each follows."""


def validators() -> dict[str, Draft202012Validator]:
    """``{file name: validator}``, the schemas referring to one another by file name."""
    schemas = {path.name: json.loads(path.read_text(encoding="utf-8")) for path in SCHEMAS.glob("*.schema.json")}
    registry = Registry().with_resources((schema["$id"], Resource.from_contents(schema)) for schema in schemas.values())
    for schema in schemas.values():
        Draft202012Validator.check_schema(schema)
    return {file: Draft202012Validator(schemas[f"{name}.schema.json"], registry=registry,
                                       format_checker=FormatChecker())
            for file, name in RECORDS.items()}


def problems(root: Path) -> list[str]:
    """One line per record under ``root`` that ctrlkit wrote (it carries ``schema_version``) and its
    schema refuses; a file a test wrote or damaged on purpose lacks the key, or is no JSON object."""
    checks = validators()
    found = []
    for file, validator in checks.items():
        for path in sorted(root.rglob(file)):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, ValueError):
                continue
            if not isinstance(record, dict) or "schema_version" not in record:
                continue
            for error in validator.iter_errors(record):
                where = "/".join(str(part) for part in error.absolute_path) or "(top)"
                found.append(f"{path}: {where}: {error.message[:300]}")
    return found


def checked_count(root: Path) -> int:
    return sum(1 for file in RECORDS for path in root.rglob(file) if path.is_file())
