"""User files for judge prompts, checked when the metric is made, before any judge call.

Each judge prompt is a system message (the instructions) and a user message (the texts to judge),
both ours unless the user gives files. A template file, with its ``$name`` (or ``${name}``)
placeholders filled, is the user message; a system file is the system message, with the same
placeholders, none required. A template alone is the whole prompt: one user message, no system
message, so the words the judge reads are the user's alone (a paper's exact wording); a system
file alone keeps our user message, which only presents the texts. ``$`` marks placeholders
because judge prompts show JSON answers, whose braces then need no escaping; ``$$`` is a
literal ``$``.

A prompt may also take a file of worked examples (a paper's prompts show some before the texts
to judge). Its text, less trailing white space, fills ``$examples`` in the user's files, which
must then hold that placeholder; with our wording it follows our system message under a
heading. ``$examples`` without an examples file is refused rather than left empty.
"""

from __future__ import annotations

import string

from ctrlkit import OptionError

from .judging import Messages, messages

EXAMPLES = "examples"
"""The placeholder an examples file fills."""
EXAMPLES_HEADING = "Worked examples:"
"""What precedes the examples when they follow our system message."""


class JudgePrompt:
    """A judge prompt as the user's files leave it: ``system`` and ``user`` are the checked
    templates (:func:`load_template`) replacing our system and user messages (None: ours), and
    ``examples`` the worked examples' text (None: none)."""

    def __init__(self, system: string.Template | None = None, user: string.Template | None = None,
                 examples: str | None = None):
        self.system = system
        self.user = user
        self.examples = examples

    def messages(self, our_system: str, our_user: str, **values: str) -> Messages:
        """Our two messages, each one the user replaced filled from ``values`` (and
        ``$examples``) instead; a template without a system file is the one message."""
        if self.system is None and self.user is None:
            if self.examples is not None:
                our_system = f"{our_system}\n\n{EXAMPLES_HEADING}\n{self.examples}"
            return messages(our_system, our_user)
        if self.examples is not None:
            values = {**values, EXAMPLES: self.examples}
        user = our_user if self.user is None else self.user.substitute(values)
        if self.system is None:
            return ({"role": "user", "content": user},)
        return ({"role": "system", "content": self.system.substitute(values)}, {"role": "user", "content": user})


def load_template(where: str, text: str, known: tuple[str, ...], required: tuple[str, ...]) -> string.Template:
    """The template ``text`` (read from the file ``where`` names, e.g. ``fm.rate_template_file file
    'x.txt'``), or a one-line OptionError naming the file and the problem: empty, a ``$`` that
    starts no placeholder, a placeholder outside ``known``, or a ``required`` one missing."""
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
    return string.Template(text)


def uses(template: string.Template | None, name: str) -> bool:
    """Whether ``template`` has the placeholder ``name`` (``Template.get_identifiers`` is 3.11+)."""
    if template is None:
        return False
    return any(name in (match.group("named"), match.group("braced"))
               for match in template.pattern.finditer(template.template))


def template_option(metric, option: str, known: tuple[str, ...], required: tuple[str, ...]) -> string.Template | None:
    """The metric's template for ``option`` when set (unreadable, not UTF-8 or too large: one
    OptionError), its digest recorded beside the path (``OPTION_digest`` in the metric's
    ``file_digests``, which a run's config keeps); None when unset."""
    path = metric.options[option]
    if not path:
        return None
    where = f"{metric.name}.{option} file '{path}'"
    return load_template(where, metric.read_option_file(option, where), known, required)


def examples_option(metric, option: str, templates: dict[str, string.Template | None]) -> str | None:
    """The text of the examples file ``option`` names (its digest recorded as a template's is),
    less trailing white space; None when unset. ``templates`` are the prompt's user files by
    option: when any is given, one must hold ``$examples`` if and only if the examples file is
    set, else one OptionError line naming both options."""
    given = {name: template for name, template in templates.items() if template is not None}
    holders = [name for name, template in given.items() if uses(template, EXAMPLES)]
    path = metric.options[option]
    if not path:
        if holders:
            raise OptionError(f"{metric.name}.{holders[0]} file '{metric.options[holders[0]]}' uses ${EXAMPLES}, "
                              f"which {metric.name}.{option} fills; set it or take the placeholder out")
        return None
    where = f"{metric.name}.{option} file '{path}'"
    text = metric.read_option_file(option, where).rstrip()
    if not text:
        raise OptionError(f"{where} is empty")
    if given and not holders:
        files = " or ".join(f"{metric.name}.{name}" for name in given)
        raise OptionError(f"{where}: no placeholder ${EXAMPLES} in {files} to show the examples at")
    return text


def prompt_option(metric, system_option: str, user_option: str, known: tuple[str, ...],
                  required: tuple[str, ...], examples: str | None = None) -> JudgePrompt:
    """The prompt the metric's ``system_option`` and ``user_option`` files make: both take the
    placeholders ``known`` (and ``$examples`` where the prompt takes the examples file that the
    option ``examples`` names); the template (the user message) must have those ``required``."""
    if examples is not None:
        known = (*known, EXAMPLES)
    system = template_option(metric, system_option, known, ())
    user = template_option(metric, user_option, known, required)
    shown = None if examples is None else examples_option(metric, examples, {system_option: system, user_option: user})
    return JudgePrompt(system, user, shown)
