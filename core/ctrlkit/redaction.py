"""Masking a secret in text a server sent back, in the forms that servers and logs turn it into.

A hostile or careless server can echo an API key in an error or even in an answer: verbatim,
broken across lines or spaced out (whitespace, ``+`` or invisible characters between any two
characters), JSON-escaped (``\\n``, ``\\u0073``), percent-encoded (once or twice), as HTML
character references (escaped twice too: ``&amp;#115;``), or cut short. ``redact`` undoes those
forms, then masks every run of the text that spells ``MIN_RUN`` or more consecutive characters of
the secret (the whole secret when it is shorter), so a prefix left at the end of a message cut for
length is masked too. Call it before cutting anything: cutting first can leave most of a key with
only its tail missing, which a search for the whole key does not find.

What no masking can catch: a server that re-encodes the key on purpose (base64, reversed,
other separators). It holds the key already; this guards against keys copied by accident.
"""

from __future__ import annotations

import bisect
import functools
import re

from .secrets import IGNORABLE, MASK
MIN_RUN = 8
"""The fewest consecutive characters of a secret that are masked: long enough that ordinary
text never holds a run of a random key by chance."""

_INVISIBLE = ("+"  # a space in form encoding
              "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a"
              "\x1b\x7f"  # NUL above all: UTF-16 and UTF-32 read as one byte a character put NULs between
              + "".join(chr(code) for low, high in IGNORABLE for code in range(low, high + 1)))
_INVISIBLE_SET = frozenset(_INVISIBLE)
_DROP_INVISIBLE = dict.fromkeys(map(ord, _INVISIBLE))
_SWALLOWED = _INVISIBLE_SET - {"+"}
"""Invisible characters next to a masked run, masked with it (a key in UTF-16 leaves no stray NUL)."""
_SWAPPED = {ord(char) << 8: ord(char) for char in map(chr, range(0x21, 0x7f))}
"""UTF-16 read in the wrong byte order turns each ASCII character c into chr(ord(c) << 8) (``s``,
U+0073, becomes U+7300); mapped back, one character for one, so positions do not move."""
_MAYBE_SWAPPED = re.compile("[\u2100-\u7e00]")  # a quick look before the slower translate


def _unswapped(text: str) -> str:
    return text.translate(_SWAPPED) if _MAYBE_SWAPPED.search(text) else text

# Each pattern can start only where it can match: a run of backslashes only at its first one
# (the look-behind after it), so a run is scanned once, not once from each of its backslashes
# (which made a run of n backslashes cost n * n steps).
_ESCAPES = r"""
    %(?:25)*(?P<percent>[0-9A-Fa-f]{2})             # %73, and %2573 (encoded twice)
  | \\(?<!\\\\)\\*(?:
        u(?P<unicode>[0-9A-Fa-f]{4})                # \u0073 (JSON), \\u0073 (escaped twice)
      | x(?P<byte>[0-9A-Fa-f]{2})                   # \x73
      | (?P<escape>[nrtfbv/])                       # \n, \t: a break; \/: a slash
    )
  | &(?:amp;)*\#0*(?P<decimal>[0-9]{1,8})[0-9]*;?   # &#115; &#115 &#0000000115; &amp;#115; (escaped twice)
  | &(?:amp;)*\#[xX]0*(?P<hexadecimal>[0-9A-Fa-f]{1,7})[0-9A-Fa-f]*;?  # &#x73; &#x73 &#x0000073;
"""
# An HTML reference is read as a browser reads it: every digit, with or without the semicolon. Its
# group keeps the significant digits up to one more than any code point has, so a longer number
# is out of range and decodes to nothing; the pattern cannot fail after its group, so each
# reference is scanned once.
_ESCAPE = re.compile(_ESCAPES, re.VERBOSE)
_GAP = "[" + "".join(f"\\u{code:04x}" for code in range(0x10000)
               if code != 0x3000 and (chr(code).isspace() or chr(code) in _INVISIBLE_SET)) \
       + "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in IGNORABLE if low > 0xFFFF) + "]+"
"""Whitespace and invisible characters (one class: a quick scan); not U+3000, an ideographic space,
which is also what ``0`` becomes in UTF-16 read in the wrong byte order."""
_UNIT = re.compile(_ESCAPES + rf"""
  | (?P<gap>{_GAP})  # whitespace and invisible characters
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
        begin, end = decoded.widened(text, begin, end, kept)
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
        # the units that stand for nothing visible (a NUL, as is or escaped), by start and by end:
        # masked with a masked run they touch
        self._silent_from: dict[int, int] = {}
        self._silent_to: dict[int, int] = {}
        self._starts: list[int] = []  # where each segment starts in the decoded text
        self._spans: list[tuple[int, int, bool]] = []  # its span in the original, and whether copied as is
        length = copied = 0
        for unit in _UNIT.finditer(text):
            decoded = _decode(unit)
            if not decoded and _stands_for_nothing(unit):
                self._silent_from[unit.start()], self._silent_to[unit.end()] = unit.end(), unit.start()
            for begin, end, char in ((copied, unit.start(), None), (unit.start(), unit.end(), decoded)):
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
        self.text = _unswapped("".join(pieces))

    def widened(self, text: str, begin: int, end: int, floor: int) -> tuple[int, int]:
        """``text[begin:end]`` (a masked run) with the invisible characters and the escapes of them
        on either side (a UTF-16 key's NULs), not reaching back before ``floor``."""
        moved = True
        while moved:
            moved = False
            if begin > floor and (text[begin - 1] in _SWALLOWED or begin in self._silent_to):
                begin, moved = self._silent_to.get(begin, begin - 1), True
            if end < len(text) and (text[end] in _SWALLOWED or end in self._silent_from):
                end, moved = self._silent_from.get(end, end + 1), True
        return max(begin, floor), end

    def origin(self, index: int) -> tuple[int, int]:
        segment = bisect.bisect_right(self._starts, index) - 1
        begin, end, copied = self._spans[segment]
        if not copied:
            return begin, end
        at = begin + index - self._starts[segment]
        return at, at + 1


def _plain(text: str) -> str:
    """What ``_Decoded(text).text`` is, without the map back to the original (faster)."""
    if "%" in text or "\\" in text or "&#" in text or "&amp;" in text:
        text = _ESCAPE.sub(_decode, text)
    return "".join(_unswapped(text).split()).translate(_DROP_INVISIBLE)


def _decode(unit: re.Match) -> str:
    """The one character an escape stands for, or "" for a break, whitespace or an invalid code."""
    kind = unit.lastgroup
    return "" if kind == "gap" else _character(kind, unit.group(kind))


@functools.lru_cache(maxsize=4096)
def _character(kind: str, value: str) -> str:
    """``_decode`` once the escape is read; remembered, since a text repeats few escapes often."""
    if kind == "escape":
        return "/" if value == "/" else ""
    try:
        char = chr(int(value, 10 if kind == "decimal" else 16)).translate(_SWAPPED)
    except (ValueError, OverflowError):
        return ""
    return "" if char.isspace() or char in _INVISIBLE_SET else char


def _stands_for_nothing(unit: re.Match) -> bool:
    """Whether ``unit`` (one that decodes to nothing) is invisible: NULs, or an escape of one;
    not whitespace or a line break, which separate words."""
    kind = unit.lastgroup
    if kind == "gap":
        return all(char in _SWALLOWED for char in unit.group())
    if kind == "escape":
        return False
    try:
        return chr(int(unit.group(kind), 10 if kind == "decimal" else 16)) in _SWALLOWED
    except (ValueError, OverflowError):
        return False
