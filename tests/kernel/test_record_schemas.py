"""The JSON Schemas of results.json, sweep.json and table.json: what ctrlkit writes follows them
(the session fixture checks every record the suite leaves), and they refuse what breaks the format."""

import json

import pytest

import ctrlkit
from ctrlkit.results import SCHEMA_VERSION

from helpers.record_schemas import problems, validators


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    out = tmp_path_factory.mktemp("schemas") / "sweep"
    ctrlkit.sweep(out=str(out), controllers=["none", "tag"], metrics=["stas", "rouge"], limit=6, bootstrap=50)
    return out


def test_a_sweep_and_its_cells_follow_their_schemas(swept):
    records = [swept / "sweep.json", swept / "table.json", *swept.glob("cells/*/results.json")]
    assert len(records) == 4
    for path in records:
        assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION
    assert problems(swept) == []


@pytest.mark.parametrize("file, damage, where", [
    ("results.json", lambda r: r["metrics"]["stas"].update(stas="0.8"), "metrics/stas/stas"),
    ("results.json", lambda r: r.update(surprise=1), "(top)"),
    ("table.json", lambda r: r["rows"][1]["paired"]["stas"]["stas"].update(p=1.5), "rows/1/paired/stas/stas/p"),
    ("results.json", lambda r: r.update(schema_version=2), "schema_version"),
    ("sweep.json", lambda r: r["settings"].update(controllers=[]), "settings/controllers"),
    ("table.json", lambda r: r["columns"][0].update(better="sideways"), "columns/0/better"),
    ("table.json", lambda r: r["comparisons"].update(correction="bonferroni"), "comparisons/correction"),
])
def test_the_schemas_refuse_a_broken_record(swept, tmp_path, file, damage, where):
    source = swept / file if file != "results.json" else next(swept.glob("cells/*tag/results.json"))
    record = json.loads(source.read_text())
    damage(record)
    (tmp_path / file).write_text(json.dumps(record))
    found = problems(tmp_path)
    assert found and all(f": {where}: " in line for line in found), found
    (tmp_path / file).unlink()  # the session's own check must not see the damaged copy


def test_every_schema_is_a_valid_draft_2020_12_schema():
    assert set(validators()) == {"results.json", "sweep.json", "table.json"}  # check_schema ran for each
