"""Names and text from data, written into Markdown (a sweep's table.md, a report's .md), render
as the text they are: no HTML, link, image, emphasis, heading, list, or extra table cell or row.

The Markdown is rendered with markdown-it (CommonMark plus GFM tables and strikethrough), and
the tokens are read back, so each test checks what a reader would see rather than the source.
"""

import json

import pytest
from hypothesis import given, settings, strategies as st

import ctrlkit
from ctrlkit.markdown import escape_markdown
from ctrlkit.report.write import write_report
from ctrlkit.sweeps.sweep import sweep
from ctrlkit.types import MetricResult

markdown_it = pytest.importorskip("markdown_it")

HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    "[click](javascript:alert(3))",
    "![pixel](http://127.0.0.1:9/track.png)",
    "a | b | c",
    "two\nlines | and\r\na row",
    "# a heading ###",
    "1. a list",
    "- a bullet",
    "> a quote",
    "`code` *em* _em_ **strong** ~~gone~~",
    "<http://127.0.0.1:9/autolink>",
    "&lt;b&gt; stays text &amp; so does this",
    "back\\slash\\",
    "[ref]: http://127.0.0.1:9/ref",
]
# Characters that would move or hide text in a terminal or an editor: shown as U+FFFD instead.
HIDDEN = ["\x1b[2J\x1b[31mred", "abc\u202edcba", "nul\x00byte"]
BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def _render(text: str):
    return markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"]).parse(text)


def _normalized(text: str) -> str:
    """What the reader should see: one line, tabs as spaces, trimmed."""
    return " ".join(str(text).splitlines()).replace("\t", " ").strip()


def _plain(inline) -> str:
    """The text of an inline token, refusing anything but text (no link, image, HTML, emphasis, code)."""
    kinds = {child.type for child in inline.children}
    assert kinds <= {"text", "text_special"}, (inline.content, kinds)
    return "".join(child.content for child in inline.children)


def _tables(tokens) -> list[list[list[str]]]:
    """Each table's rows, each row's cells as the inline source they hold."""
    tables, row = [], None
    for token in tokens:
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
            tables[-1].append(row)
        elif token.type == "inline" and row is not None:
            row.append(token)
        elif token.type == "tr_close":
            row = None
    return tables


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_renders_as_itself_in_a_paragraph_a_heading_and_a_table_cell(text):
    escaped = escape_markdown(text)
    assert "\n" not in escaped and "\r" not in escaped
    for source in (escaped, f"### {escaped}", f"| name |\n|---|\n| {escaped} |"):
        tokens = _render(source)
        inline = [token for token in tokens if token.type == "inline"]
        assert [token.type for token in tokens if token.type.endswith("_open")][0] in (
            "paragraph_open", "heading_open", "table_open"), source
        assert _plain(inline[-1]) == _normalized(text), source
        assert not any(token.type in ("html_block", "code_block", "bullet_list_open", "ordered_list_open",
                                      "blockquote_open", "hr") for token in tokens), source


@pytest.mark.parametrize("text", ["don't say \"no\"", "a > b, b >= c", "R&D, AT&T", "café 5% (ok) {x}: y?",
                                  "2026-11-25T17:39:58+00:00", "1-2 of 3"])
def test_text_markdown_does_not_need_is_written_as_it_is(text):
    """Quotes, a > inside a line, an & that starts no character reference: no entity, no backslash."""
    assert escape_markdown(text) == text


def test_only_less_than_and_a_reference_ampersand_become_entities():
    assert escape_markdown("it's <b>&amp; \"so\"") == "it's &lt;b>&amp;amp; \"so\""
    assert escape_markdown("> quoted") == "\\> quoted"


@pytest.mark.parametrize("text", HIDDEN)
def test_control_and_bidi_characters_are_shown_as_replacement_characters(text):
    escaped = escape_markdown(text)
    assert not any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f or 0x202a <= ord(c) <= 0x202e for c in escaped)
    assert "\ufffd" in escaped


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters=BIDI) | st.sampled_from(
    "\n\t\r|\\`*_[]()!<>&#;-+=.:~$ 1"), max_size=40))
def test_any_text_renders_as_itself_in_a_table_cell(text):
    escaped = escape_markdown(text)
    tables = _tables(_render(f"| a | b |\n|---|---:|\n| {escaped} | 1 |\n"))
    assert len(tables) == 1 and len(tables[0]) == 2 and len(tables[0][1]) == 2
    assert _plain(tables[0][1][0]) == _normalized(text)


# ---------------------------------------------------------------------------------------------
# A sweep whose components a plugin named with every payload
# ---------------------------------------------------------------------------------------------

CONTROLLER = "ctl|<script>alert(1)</script>[x](javascript:alert(2))"
DATASET = "ds|![pixel](http://127.0.0.1:9/p.png)|extra"  # registered names hold no spaces
METRIC = "met<img/src=x/onerror=alert(3)>"
VALUES = ["v|w", "line\nbreak", "# h", "1. item", "[l](http://127.0.0.1:9/)", "**bold**"]


class _Named(ctrlkit.Controller):
    """Leaves the input as it is; its name is the attack."""

    def apply(self, example, model_input):
        return model_input


class _Constant(ctrlkit.Metric):
    def compute(self, predictions, examples):
        return MetricResult(per_example={}, corpus={name: 0.5 + i / 10 for i, name in enumerate(VALUES)})


class _Hostile:
    @ctrlkit.hookimpl
    def register_controllers(self, register):
        register(CONTROLLER, _Named)

    @ctrlkit.hookimpl
    def register_metrics(self, register):
        register(METRIC, _Constant)

    @ctrlkit.hookimpl
    def register_datasets(self, register):
        register(DATASET, "ctrlkit_datasets.sample:Sample")


def test_a_sweep_table_of_hostile_names_renders_as_text(throwaway_plugins, tmp_path, monkeypatch):
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    throwaway_plugins(_Hostile(), "hostile-names")
    rows = sweep(out=str(tmp_path / "s"), controllers=["none", CONTROLLER], datasets=[DATASET],
                 metrics=[METRIC], limit=2)
    assert len(rows) == 2
    text = (tmp_path / "s" / "table.md").read_text(encoding="utf-8")
    table_part, _, note = text.partition("\n\n")
    assert len(table_part.splitlines()) == 4  # header, rule, two rows: no name broke a line
    assert note.startswith("Each value with its 95% bootstrap interval") and "|" not in note
    tables = _tables(_render(text))
    assert len(tables) == 1
    header, *body = tables[0]
    assert [_plain(cell) for cell in header] == ["dataset", "backbone", "controller",
                                                 *(_normalized(f"{METRIC}.{v}") for v in VALUES)]
    assert [[_plain(cell) for cell in row[:3]] for row in body] == [[_normalized(DATASET), "extractive", c]
                                                                    for c in ("none", CONTROLLER)]
    assert all(len(row) == 3 + len(VALUES) for row in body)  # no | opened an extra cell

    # the report of that sweep, in Markdown, holds the same names as text
    _, markdown_path = write_report(tmp_path / "s")
    report_tables = _tables(_render(markdown_path.read_text(encoding="utf-8")))
    assert [_plain(row[0]) for row in report_tables[0][1:]] == ["none", CONTROLLER]
    assert [_plain(cell) for cell in report_tables[0][0][1:]] == [_normalized(f"{METRIC}.{v}") for v in VALUES]


def test_a_run_report_keeps_hostile_controls_ids_interference_and_predictions_as_text(tmp_path):
    """Control names start a line in the Markdown report: a heading, list or quote there is refused;
    interference attributes and values stay in their cells."""
    folder = tmp_path / "run"
    folder.mkdir()
    controls = {"# heading": "1. item", "- bullet": "> quote", "1) number": "=== underline"}
    (folder / "results.json").write_text(json.dumps({
        "config": {"dataset": "jsonl", "controller": "tag", "backbone": "extractive"},
        "metrics": {"rouge": {"rouge1": 0.5}}, "n_examples": 1}))
    (folder / "samples.jsonl").write_text(json.dumps({
        "id": "1. first ###", "controls": controls, "prediction": "- predicted\n# heading",
        "scores": {"rouge": {"rouge1": 0.5}}}) + "\n")
    attributes, values = ["# topic", "len|gth"], ["[v](http://127.0.0.1:9/)", "two\nlines"]
    (folder / "interference.json").write_text(json.dumps({
        "attributes": attributes, "values": values, "n_examples": "- 1",
        "matrix": {a: {v: 0.5 for v in values} for a in attributes}}))
    _, markdown_path = write_report(folder)
    tokens = _render(markdown_path.read_text(encoding="utf-8"))
    interference = _tables(tokens)[1]
    assert [_plain(cell) for cell in interference[0]] == ["attribute", *map(_normalized, values)]
    assert [[_plain(cell) for cell in row] for row in interference[1:]] == [[a, "0.5000", "0.5000"] for a in attributes]
    assert [t.type for t in tokens if t.type.endswith("_open") and t.type.startswith(("bullet", "ordered"))] \
        == ["bullet_list_open"]  # only the report's own list of outputs
    headings = [tokens[i + 1] for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert [_plain(h) for h in headings] == ["ctrlkit report: run", "Scores", "Interference", "Examples",
                                             "1. first ###"]
    paragraphs = [_plain(tokens[i + 1]) for i, t in enumerate(tokens) if t.type == "paragraph_open" and not t.level]
    assert "# heading: 1. item; - bullet: > quote; 1) number: === underline" in paragraphs
    assert "Examples: - 1" in paragraphs
    assert not any(t.type in ("blockquote_open", "hr") for t in tokens)
