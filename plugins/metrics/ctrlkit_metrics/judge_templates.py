"""User template files for judge prompts, checked when the metric is made, before any judge call.

A template is a UTF-8 file whose text, with its ``$name`` (or ``${name}``) placeholders filled,
is the whole prompt: one user message, no system message, so the words the judge reads are the
user's alone (a paper's exact wording). ``$`` marks placeholders because judge prompts show JSON
answers, whose braces then need no escaping; ``$$`` is a literal ``$``.
"""

from __future__ import annotations

import hashlib
import string
from pathlib import Path

from ctrlkit import OptionError

from .judging import Messages


class JudgeTemplate:
    """A checked template: ``render(**values)`` fills it; ``digest`` (``sha256:...`` of the file's
    bytes) names the text a run used."""

    def __init__(self, path: str, text: str, digest: str):
        self.path = path
        self.template = string.Template(text)
        self.digest = digest

    def render(self, **values: str) -> Messages:
        return ({"role": "user", "content": self.template.substitute(values)},)


def load_template(option: str, path: str, known: tuple[str, ...], required: tuple[str, ...]) -> JudgeTemplate:
    """The template at ``path`` (given as ``option``, e.g. ``fm.rate_template_file``), or a one-line
    OptionError naming the file and the problem: unreadable, not UTF-8, empty, a ``$`` that starts
    no placeholder, a placeholder outside ``known``, or a ``required`` one missing."""
    where = f"{option} file '{path}'"
    try:
        raw = Path(path).read_bytes()
        text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError:
        raise OptionError(f"{where} is not UTF-8 text") from None
    except OSError as exc:
        raise OptionError(f"{where} cannot be read: {exc.strerror or exc}") from None
    if not text.strip():
        raise OptionError(f"{where} is empty")
    used = []
    for match in string.Template.pattern.finditer(text):
        name = match.group("named") or match.group("braced")
        if match.group("invalid") is not None:
            line = text.count("\n", 0, match.start()) + 1
            raise OptionError(f"{where}, line {line}: a '$' that starts no placeholder; write $$ for a literal $")
        if name is not None and name not in known:
            raise OptionError(f"{where} uses unknown placeholder ${name}; known: "
                              + ", ".join(f"${k}" for k in known))
        used.append(name)
    for name in required:
        if name not in used:
            raise OptionError(f"{where} lacks placeholder ${name}, which the judge needs")
    return JudgeTemplate(path, text, "sha256:" + hashlib.sha256(raw).hexdigest())


def template_option(metric, option: str, known: tuple[str, ...], required: tuple[str, ...]) -> JudgeTemplate | None:
    """The metric's template for ``option`` when set, its digest recorded beside the path
    (``OPTION_digest`` in the metric's ``file_digests``, which a run's config keeps); None when unset."""
    path = metric.options[option]
    if not path:
        return None
    template = load_template(f"{metric.name}.{option}", path, known, required)
    metric.file_digests = {**metric.file_digests, f"{option}_digest": template.digest}
    return template
