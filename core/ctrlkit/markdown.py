"""Text from data (names a plugin or a user chose, ids, predictions) written into Markdown.

Every Markdown file ctrlkit writes (a sweep's table.md, a report's .md) passes each heading and
cell through :func:`escape_markdown`, so that rendered (on GitHub, in an editor's preview) a name
reads as the text it is: no HTML (renderers pass raw HTML through), no link or image, no
emphasis, no extra table column or row, no heading, list or code block it was not meant to be.
"""

from __future__ import annotations

import re

# Inline syntax anywhere in a line: code, emphasis, links and images, table cells, strikethrough,
# math ($ on GitHub), a heading's closing #s; the backslash first so escapes are not doubled.
_INLINE = "\\`*_[]|~$#"
# An & that starts a named character reference (&lt;), which a renderer would decode; a numeric
# one (&#60;) cannot form, its # being escaped.
_REFERENCE = re.compile(r"&(?=[A-Za-z][A-Za-z0-9]*;)")
# Block syntax that only counts at the start of a line: lists (- + 1. 1)), setext underlines (=),
# quotes (>); its punctuation is escaped (a backslash before a digit would show), and only there:
# a date (2026-11-25) starts no block.
_LINE_START = re.compile(r"^(\d+(?=[.)])|)([-+=.)>])")
# Characters that move or hide text when shown: C0/C1 controls (terminal escapes included, since
# the sweep prints table.md; a lone CR, which rewrites a line) and the bidirectional overrides,
# isolates and marks of "Trojan Source".
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """``text`` with the characters that move or hide text when shown (terminal escapes, bidi
    overrides) replaced by U+FFFD: what a terminal table or a Markdown cell may show of a name."""
    return _HIDDEN.sub("\ufffd", text)


def escape_markdown(text) -> str:
    """``text`` (any value; None reads ``undefined``) as one line of literal Markdown text."""
    text = " ".join(str("undefined" if text is None else text).splitlines()).replace("\t", " ")
    text = visible(text).strip()
    for character in _INLINE:
        text = text.replace(character, "\\" + character)
    # An entity for < (no tag, comment or autolink can start; every Markdown renderer decodes &lt;,
    # not all honour a backslash before <), and for an & that would start one; quotes, > and other
    # text stay as they are. After the backslashes, which the entities' own # must not get.
    text = _REFERENCE.sub("&amp;", text).replace("<", "&lt;")
    return _LINE_START.sub(lambda match: match[1] + "\\" + match[2], text, count=1)


def markdown_table(header: list[str], rows: list[list[str]], text_columns: int = 1) -> list[str]:
    """The lines of a table: ``text_columns`` columns of text, then right-aligned numbers.
    The cells must already be Markdown (escaped with :func:`escape_markdown` where they are data)."""
    rule = ["---"] * text_columns + ["---:"] * (len(header) - text_columns)
    return ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|",
            *("| " + " | ".join(row) + " |" for row in rows)]
