"""What ctrlkit writes for other programs to show: a spreadsheet never reads a name in table.csv
as a formula, and a terminal never runs an escape sequence from a name in the printed table."""
import csv

import pytest

from ctrlkit.results import format_table
from ctrlkit.sweeps.table import write_table

FORMULAS = ["=HYPERLINK(\"http://127.0.0.1:9/\",\"x\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(1)", "\tx", "\rx"]


@pytest.mark.hand_made_records  # write_table given rows made by hand
def test_names_that_a_spreadsheet_would_run_are_written_as_text(tmp_path):
    rows = [{"dataset": name, "backbone": "extractive", "controller": name, "run": None,
             "metrics": {"m": {name: 0.5, "plain": -0.25}}} for name in FORMULAS]
    write_table(tmp_path, rows)
    with open(tmp_path / "table.csv", newline="", encoding="utf-8") as file:
        table = list(csv.reader(file))
    header, body = table[0], table[1:]
    for cell in [*header[3:], *(row[0] for row in body), *(row[2] for row in body)]:
        assert cell[:1] not in ("=", "+", "-", "@", "\t", "\r"), cell
    assert {row[0] for row in body} == {"'" + name for name in FORMULAS}
    assert all(row[header.index("m.plain")] == "-0.25" for row in body)  # numbers stay numbers
    assert header[:3] == ["dataset", "backbone", "controller"] and "m.plain" in header


def test_the_printed_table_shows_no_terminal_escape_or_bidi_override():
    hostile = "v\x1b]8;;http://127.0.0.1:9/\x07link\x1b[2J\u202etxt\nnext"
    results = {"config": {"controller": "c\x1b[31m"}, "n_examples": 2,
               "metrics": {"m": {hostile: 0.5, "plain": 0.25}}}
    table = format_table(results)
    assert not any(char in table for char in "\x1b\x07\u202e")
    assert len(table.splitlines()) == 4  # header, rule and two rows: the newline made no extra row
    assert "\ufffd" in table and "plain" in table and "0.5000" in table
