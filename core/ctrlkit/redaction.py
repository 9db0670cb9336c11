"""Masking a secret in text a server sent back, in the forms that servers and logs turn it into.

A hostile or careless server can echo an API key in an error or even in an answer: verbatim,
broken across lines or spaced out (whitespace, ``+`` or invisible characters between any two
characters), JSON-escaped (``\\n``, ``\\u0073``), percent-encoded (once or twice), as HTML
character references, or cut short. ``redact`` undoes those forms, then masks every run
of the text that spells ``MIN_RUN`` or more consecutive characters of the secret (the whole
secret when it is shorter), so a prefix left at the end of a message cut for length is masked
too. Call it before cutting anything: cutting first can leave most of a key with only its tail
missing, which a search for the whole key does not find.

What no masking can catch: a server that re-encodes the key on purpose (base64, reversed,
other separators). It holds the key already; this guards against keys copied by accident.
"""

from __future__ import annotations

import bisect
import re

from .secrets import MASK
MIN_RUN = 8
"""The fewest consecutive characters of a secret that are masked: long enough that ordinary
text never holds a run of a random key by chance."""

_INVISIBLE = "+\u00ad\u200b\u200c\u200d\u200e\u200f\u2060\ufeff"  # '+' is a space in form encoding
_DROP_INVISIBLE = dict.fromkeys(map(ord, _INVISIBLE))
_ESCAPES = r"""
    %(?:25)*(?P<percent>[0-9A-Fa-f]{2})             # %73, and %2573 (encoded twice)
  | \\+u(?P<unicode>[0-9A-Fa-f]{4})                 # \u0073 (JSON), \\u0073 (escaped twice)
  | \\+x(?P<byte>[0-9A-Fa-f]{2})                    # \x73
  | \\+(?P<escape>[nrtfbv/])                        # \n, \t: a break; \/: a slash
  | &\#(?P<decimal>[0-9]{1,7});                     # &#115;
  | &\#[xX](?P<hexadecimal>[0-9A-Fa-f]{1,6});       # &#x73;
"""
_ESCAPE = re.compile(_ESCAPES, re.VERBOSE)
_UNIT = re.compile(_ESCAPES + r"""
  | (?P<gap>[\s+\u00ad\u200b-\u200f\u2060\ufeff]+)  # whitespace and invisible characters
""", re.VERBOSE)


def redact(text: str, secret: str) -> str:
    """``text`` with every run of ``secret`` (in any form above) replaced by ``***``."""
    if not secret or not text:
        return text
    wanted = _plain(secret)
    run = min(MIN_RUN, len(wanted))
    pieces = list(dict.fromkeys(wanted[start : start + run] for start in range(len(wanted) - run + 1)))
    quick = _plain(text)
    if not any(piece in quick for piece in pieces):
        return text  # the usual case, found fast; mapping back to the original is slower
    decoded = _Decoded(text)
    parts, kept = [], 0
    for hit in re.finditer(rb"\x01+", _covered(decoded.text, wanted, pieces)):
        begin, end = decoded.origin(hit.start())[0], decoded.origin(hit.end() - 1)[1]
        parts += [text[kept:begin], MASK]
        kept = end
    return "".join(parts) + text[kept:] if parts else text


def _covered(text: str, wanted: str, pieces: list[str]) -> bytearray:
    """1 for each character of ``text`` inside an occurrence of one of ``pieces`` (the runs of
    ``wanted``, in order). An occurrence is extended along ``wanted`` as far as it goes, and
    occurrences inside what is covered already are skipped, so a text that repeats the secret
    costs about one step per repetition rather than one per repetition and piece."""
    covered = bytearray(len(text))
    for piece in pieces:
        run, at = len(piece), wanted.find(piece)
        found = text.find(piece)
        while found >= 0:
            if covered.find(0, found, found + run) < 0:  # covered already: search on from where that ends
                end = covered.find(0, found)
                found = -1 if end < 0 else text.find(piece, max(found + 1, end - run + 1))
                continue
            length = _common_length(text, found, wanted, at)
            covered[found : found + length] = b"\x01" * length
            found = text.find(piece, found + 1)
    return covered


def _common_length(text: str, start: int, wanted: str, at: int) -> int:
    """How many characters ``text[start:]`` and ``wanted[at:]`` share from their starts (by
    bisection, comparing slices)."""
    low, high = 0, min(len(text) - start, len(wanted) - at)
    while low < high:
        middle = (low + high + 1) // 2
        if text[start : start + middle] == wanted[at : at + middle]:
            low = middle
        else:
            high = middle - 1
    return low


class _Decoded:
    """``text`` with escapes and percent codes decoded and whitespace dropped; ``origin(i)`` is
    the span of the original text that character ``i`` of the decoded text came from."""

    def __init__(self, text: str):
        pieces: list[str] = []
        self._starts: list[int] = []  # where each segment starts in the decoded text
        self._spans: list[tuple[int, int, bool]] = []  # its span in the original, and whether copied as is
        length = copied = 0
        for unit in _UNIT.finditer(text):
            for begin, end, char in ((copied, unit.start(), None), (unit.start(), unit.end(), _decode(unit))):
                piece = text[begin:end] if char is None else char
                if piece:
                    self._starts.append(length)
                    self._spans.append((begin, end, char is None))
                    pieces.append(piece)
                    length += len(piece)
            copied = unit.end()
        if copied < len(text):
            self._starts.append(length)
            self._spans.append((copied, len(text), True))
            pieces.append(text[copied:])
        self.text = "".join(pieces)

    def origin(self, index: int) -> tuple[int, int]:
        segment = bisect.bisect_right(self._starts, index) - 1
        begin, end, copied = self._spans[segment]
        if not copied:
            return begin, end
        at = begin + index - self._starts[segment]
        return at, at + 1


def _plain(text: str) -> str:
    """What ``_Decoded(text).text`` is, without the map back to the original (faster)."""
    if "%" in text or "\\" in text or "&#" in text:
        text = _ESCAPE.sub(_decode, text)
    return "".join(text.split()).translate(_DROP_INVISIBLE)


def _decode(unit: re.Match) -> str:
    """The one character an escape stands for, or "" for a break, whitespace or an invalid code."""
    kind = unit.lastgroup
    value = unit.group(kind)
    if kind == "gap":
        return ""
    if kind == "escape":
        return "/" if value == "/" else ""
    try:
        char = chr(int(value, 10 if kind == "decimal" else 16))
    except (ValueError, OverflowError):
        return ""
    return "" if char.isspace() or char in _INVISIBLE else char
