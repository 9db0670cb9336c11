"""Secrets out of everything ctrlkit records: results.json, sweep.json, training.json,
interference.json, table files, reports and error messages.

Options and configurations are recorded so that a run can be read and repeated; an API key in
them would be shared with every copy of a results folder. ``mask_secrets`` is the one place that
decides what a secret is: the value of an option whose name says so (``api_key``, ``token``,
``hf_token``, ``password``, ``authorization``, ...), and, inside any text, the credentials of a
URL (``https://user:KEY@host``), a secret query parameter (``?api_key=KEY``) and a bearer token.
A masked value reads ``***``, so a record still says that a secret was given.
"""

from __future__ import annotations

import re

MASK = "***"

_SECRET_WORDS = r"api_?key|key|token|secret|password|passwd|passphrase|pass|authorization|auth|credentials?|cookie"
_SECRET_NAME = re.compile(rf"(?:^|_)(?:{_SECRET_WORDS})$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_URL_USERINFO = re.compile(r"(?<=://)[^/?#\s@]+@")
"""A URL's credentials, whatever its scheme: found from the ``://`` after it, since a search from
where a scheme could begin scanned a run like ``a.a.a.a`` once from each of its letters (quadratic).
Each search ends at the next ``/``, so none crosses the ``://`` of another."""
_QUERY_SECRET = re.compile(rf"(?i)([?&;](?:[a-z0-9]+[_-])*(?:{_SECRET_WORDS})=)"
                           r"[^&#;\s]+?(?=,[a-z][a-z0-9+.-]*://|[&#;\s]|$)")
"""A secret query parameter's value: up to the next parameter, fragment or space, or a comma that
begins another URL, as in a list of endpoints (``?api_key=KEY,http://other/v1``), which masking
keeps whole, however often it is masked."""
IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
             (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
             (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
             (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
"""Unicode's default-ignorable code points (DerivedCoreProperties.txt, Unicode 15), as ranges: a
text shows nothing for them (soft hyphen, joiners, invisible operators U+2061-2064, the combining
grapheme joiner U+034F, Hangul fillers, variation selectors, tag characters U+E0000-E007F, ...),
so one between a secret's characters hides it from a plain search and not from a reader."""
_INVISIBLE_CLASS = "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in IGNORABLE)
_BEARER = re.compile(rf"\b([Bb]earer[\s{_INVISIBLE_CLASS}]+)[A-Za-z0-9._~+/={_INVISIBLE_CLASS}-]{{8,}}")
"""A bearer token, invisible characters between its characters included (a token is one run)."""


def is_secret(name: str) -> bool:
    """Whether an option or field called ``name`` holds a secret: ``api_key``, ``hf_token``,
    ``apiKey``, ``db-password`` (a name ending in a secret word), not ``max_tokens`` or ``keywords``."""
    return bool(_SECRET_NAME.search(_CAMEL.sub("_", str(name)).lower().replace("-", "_")))


def mask_secrets(value):
    """A copy of ``value`` (options, a configuration: nested dicts, lists and scalars) fit to be
    recorded: every non-empty value under a secret name is ``***``, and every string is scrubbed
    of URL credentials, secret query parameters and bearer tokens. Nothing else changes."""
    if isinstance(value, dict):
        return {key: _masked(item) if is_secret(key) else mask_secrets(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [mask_secrets(item) for item in value]
    if isinstance(value, str):
        return scrub_text(value)
    return value


def scrub_text(text: str) -> str:
    """``text`` with URL credentials, secret query parameters and bearer tokens replaced by ``***``."""
    text = _URL_USERINFO.sub(f"{MASK}@", text)
    text = _QUERY_SECRET.sub(rf"\1{MASK}", text)
    return _BEARER.sub(rf"\1{MASK}", text)


def _masked(value):
    """Every leaf of a secret's value masked; empty ones kept, so a record says none was given."""
    if isinstance(value, dict):
        return {key: _masked(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_masked(item) for item in value]
    if value is None or value == "" or isinstance(value, bool):
        return value
    return MASK
