"""The prompt controller: each example's controls as chat messages for an instruction-following
backbone, in the prompting forms CCSBench compares (Ding et al.).

- ``zero-shot``: a system instruction, then one user message that lists each control in words
  and then gives the document.
- ``few-shot``: the same, preceded by ``prompt.shots`` demonstrations: a train example's zero-shot
  message and its first reference. They are drawn for each example (as CCSBench drew random
  demonstrations per test sample) from a hash of the seed and the example's id, so an example
  gets the same demonstrations in every run with that seed, whatever the batch or order. The
  seed is the run's (``--seed``, given by ``use_seed``; 0 outside a run) unless ``prompt.seed``
  sets one; results.json records the seed used as ``prompt.seed``. A demonstration is never the
  example itself nor another example of the same document (same id or same document text).
  ``prompt.layout=turns`` gives each demonstration as a user turn and an
  assistant reply; ``inline`` writes them all into the one user message, before the task.
- ``hard``: the "hard prompt" form, one ``Attribute: Value`` line per control with the raw
  value, then ``Document: ...``. On a backbone that only flattens chat messages (a seq2seq
  model, ``hf``; a base model without a chat template, ``hf-causal``), that text is the whole input (``source``, no messages): plain text before the
  document, not a ``System:``/``User:``/``Assistant:`` transcript; a ``prompt.system`` given
  there is not used (one warning says so).
- ``file``: the user message comes from a template file with plain ``{document}``,
  ``{controls}`` (the zero-shot requirement lines) and ``{CONTROL}`` fields.

A numeric ``length`` is phrased by ``prompt.length_as``: ``words`` ("about 125 words"), ``bin``
(the range of its ``prompt.length_bin``-word bin, by the ``length`` metric's rule bin =
max(0, ceil(words / width) - 1): "between 101 and 150 words"; from ``prompt.length_top_bin`` on,
"more than 200 words"), or ``level`` (the value as written: "Length: short", "Length: 125").

The system message is ours (``SYSTEM``) unless ``prompt.system`` (text) or ``prompt.system_file``
(a UTF-8 file, read once) replaces it, so a paper's exact wording can be supplied by the user;
with both a template file and one of these, the user writes every message the backbone gets.
results.json records each file's SHA-256 beside its path (``system_file_digest``,
``template_file_digest``), so a run shows which text it used.

The document is ``model_input.source``, so a controller applied before this one in a chain
reaches the prompt; the source itself is kept for backbones that read it.
"""

from __future__ import annotations

import hashlib
import logging
import math
import random
import string
from typing import Callable

from ctrlkit import ConfigurationError, Controller, CtrlkitError, Option, OptionError
from ctrlkit.plugin_api import given

SYSTEM = "You summarize documents. Follow every requirement given for the summary and reply with the summary only."
INSTRUCTION = "Summarize the following document."
logger = logging.getLogger("ctrlkit")

KNOWN = ("length", "keywords", "readability", "focus", "topic", "entity")
"""Controls rendered when ``prompt.controls`` is empty, in this order (CCSBench's four first)."""

READABILITY = {
    "high": "easy to read for a general audience, simple words and short sentences",
    "normal": "written for experts",
}
FOCUS = {
    "low": "conceptual (motivation, theory, method, implications)",
    "high": "empirical (data, experiments, metrics, results)",
}


class Prompt(Controller):
    """Renders the controls present on each example as system and user chat messages."""

    requires = frozenset({"messages"})
    options = (
        Option("template", str, "zero-shot", "zero-shot, few-shot, hard (one 'Attribute: Value' line per "
               "control) or file (prompt.template_file)", choices=("zero-shot", "few-shot", "hard", "file")),
        Option("shots", int, 2, "demonstrations in a few-shot prompt, drawn from the train split", minimum=1),
        Option("template_file", str, "", "user message template for template=file, with fields "
               "{document}, {controls} and {CONTROL}"),
        Option("seed", int, None, "seed that, with each example's id, draws its few-shot demonstrations; "
               "unset: the run's --seed"),
        Option("layout", str, "turns", "few-shot demonstrations as user/assistant turns, or inline in the one "
               "user message", choices=("turns", "inline")),
        Option("controls", str, "", "comma-separated controls to render; empty: every known control present"),
        Option("length_as", str, "words", "a numeric length as a word target, its bin's range or the value as "
               "written (a level name)", choices=("words", "bin", "level")),
        Option("length_bin", int, 50, "words per bin for prompt.length_as=bin", minimum=1),
        Option("length_top_bin", int, 0, "for prompt.length_as=bin, the open-ended top bin (CCSBench: 4, "
               "'more than 200 words'); 0: none", minimum=0),
        Option("system", str, "", "the system message's text; empty: ctrlkit's own (or prompt.system_file)"),
        Option("system_file", str, "", "a UTF-8 file whose text is the system message"),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.template = self.options["template"]
        self.selected = tuple(dict.fromkeys(n.strip() for n in self.options["controls"].split(",") if n.strip()))
        self.needs_train_examples = self.template == "few-shot"
        self.pieces: list[tuple[str, str | None]] = []
        if self.template == "file":
            self.pieces = load_template(self.options["template_file"], self.read_option_file)
        elif self.options["template_file"]:
            raise OptionError("option 'prompt.template_file' is used only with prompt.template=file")
        if self.options["layout"] != "turns" and self.template != "few-shot":
            raise OptionError("option 'prompt.layout' is used only with prompt.template=few-shot")
        # the controls a file template names are read too, so a run checks them before it starts
        named = [field for _, field in self.pieces if field not in (None, "document", "controls")]
        self.reads = tuple(dict.fromkeys([*self.selected, *named]))
        # the built-in forms render whichever selected controls an example has; a template file
        # needs every field it names, so an example lacking one is left uncontrolled
        self.partial_controls = self.template != "file"
        self.demonstrations: list = []
        self.plain = False  # set by prepare: the hard prompt as plain text, for a seq2seq backbone
        self.length = LengthPhrasing(self.options["length_as"], self.options["length_bin"],
                                     self.options["length_top_bin"])
        self.system = system_message(self.options["system"], self.options["system_file"], self.read_option_file)
        self.seed = 0 if self.options["seed"] is None else self.options["seed"]

    def use_seed(self, seed):
        if self.options["seed"] is None:
            self.seed = seed

    def recorded_options(self):
        return {**super().recorded_options(), "seed": self.seed}

    def fit(self, train_examples, topic_space):
        if self.template != "few-shot":
            return
        candidates = [example for example in train_examples if example.references]
        shots = self.options["shots"]
        if len(candidates) < shots:
            raise ConfigurationError(f"controller 'prompt' (few-shot) needs {shots} train examples with references "
                                     f"for its demonstrations; the train split has {len(candidates)}")
        # in a fixed order, so the draw depends on neither the train split's order nor the batch
        self.demonstrations = sorted(candidates, key=lambda example: (example.id, example.document))

    def prepare(self, backbone):
        self.plain = self.template == "hard" and backbone.flattens_messages
        given = [name for name in ("system", "system_file") if self.options[name]]
        if self.plain and given:
            logger.warning("ctrlkit: controller 'prompt': option 'prompt.%s' is not used: the hard prompt reaches "
                           "backbone '%s' as plain text, without a system message", given[0], backbone.name)

    def apply(self, example, model_input):
        document = model_input.source
        controls = self._controls(example)
        if self.template == "hard":
            user = "\n".join([*(f"{label(name)}: {as_text(name, value)}" for name, value in controls),
                              f"Document: {document}"])
            if self.plain:
                return model_input.replace(source=user, messages=None)
        elif self.template == "file":
            user = self._fill(example, document, controls)
        else:
            user = zero_shot(controls, document, self.length)
        demonstrations = self._demonstrate(example) if self.template == "few-shot" else []
        if self.options["layout"] == "inline":
            user = inline(demonstrations, user)
            demonstrations = []
        messages = ({"role": "system", "content": self.system}, *demonstrations, {"role": "user", "content": user})
        return model_input.replace(messages=messages)

    def _controls(self, example) -> list[tuple[str, object]]:
        """``(name, value)`` of the rendered controls that ``example`` has, in render order."""
        names = self.selected or KNOWN
        return [(name, example.controls[name]) for name in names if given(example.controls.get(name))]

    def _demonstrate(self, example) -> list[dict[str, str]]:
        shots = self.options["shots"]
        others = [d for d in self.demonstrations if d.id != example.id and d.document != example.document]
        if len(others) < shots:
            raise CtrlkitError(f"controller 'prompt': example '{example.id}' has {len(others)} train examples other "
                               f"than itself to show, fewer than prompt.shots={shots} (was it fit on the train split?)")
        chosen = random.Random(draw_seed(self.seed, example.id)).sample(others, shots)
        messages = []
        for shown in chosen:
            messages.append({"role": "user", "content": zero_shot(self._controls(shown), shown.document, self.length)})
            messages.append({"role": "assistant", "content": shown.references[0]})
        return messages

    def _fill(self, example, document, controls) -> str:
        values = {name: as_text(name, value) for name, value in example.controls.items() if given(value)}
        values.update(document=document, controls="\n".join(requirements(controls, self.length)))
        parts = []
        for literal, field in self.pieces:
            parts.append(literal)
            if field is not None:
                if field not in values:
                    raise CtrlkitError(f"controller 'prompt': template file '{self.options['template_file']}' "
                                       f"uses field '{field}', which example '{example.id}' does not have")
                parts.append(values[field])
        return "".join(parts)


def draw_seed(seed: int, example_id: str) -> int:
    """A seed for one example's draw, stable across processes (unlike ``hash()``)."""
    digest = hashlib.sha256(f"{seed}\0{example_id}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def inline(demonstrations, task: str) -> str:
    """Demonstration turns and the task as one user message."""
    shown = [f"Example {n}:\n{user['content']}\n\nSummary:\n{reply['content']}"
             for n, (user, reply) in enumerate(zip(demonstrations[::2], demonstrations[1::2]), start=1)]
    return "\n\n".join([*shown, f"Now this one:\n{task}"])


class LengthPhrasing:
    """How a numeric length reads in a requirement line (see the module docstring)."""

    def __init__(self, how: str = "words", width: int = 50, top_bin: int = 0):
        self.how, self.width, self.top_bin = how, width, top_bin

    def __call__(self, value) -> str:
        words = word_count(value)
        if words is None or self.how == "level":
            return f"Length: {as_text('length', value)}"
        if self.how == "words":
            return f"Length: about {words} words"
        number = max(0, math.ceil(float(words) / self.width) - 1)
        if self.top_bin and number >= self.top_bin:
            return f"Length: more than {self.top_bin * self.width} words"
        if number == 0:
            return f"Length: at most {self.width} words"
        return f"Length: between {number * self.width + 1} and {(number + 1) * self.width} words"


def zero_shot(controls, document: str, length=LengthPhrasing()) -> str:
    """The zero-shot user message: the instruction, a requirement line per control, the document."""
    lines = [INSTRUCTION]
    if controls:
        lines += ["Requirements:", *requirements(controls, length)]
    return "\n".join(lines) + f"\n\nDocument:\n{document}"


def requirements(controls, length=LengthPhrasing()) -> list[str]:
    return [f"- {describe(name, value, length)}" for name, value in controls]


def describe(name: str, value, length=LengthPhrasing()) -> str:
    """One control in words: ``Length: about 100 words``, ``Focus on the topic: sports``."""
    text = as_text(name, value)
    if name == "length":
        return length(value)
    if name == "keywords":
        return f"Include the keywords: {text}"
    if name == "readability":
        return f"Readability: {READABILITY.get(text.lower(), text)}"
    if name == "focus":
        return f"Focus: {FOCUS.get(text.lower(), text)}"
    if name in ("topic", "entity"):
        return f"Focus on the {name}: {text}"
    return f"{name}: {text}"


def label(name: str) -> str:
    """The hard-prompt attribute: ``keywords`` -> ``Keywords``, ``target_style`` -> ``Target style``."""
    return name.replace("_", " ").capitalize()


def as_text(name: str, value) -> str:
    """A control value as prompt text; keywords (a list or a comma string) as ``a, b``."""
    if name == "keywords" and isinstance(value, str):
        value = value.split(",")
    if isinstance(value, (list, tuple)):
        return ", ".join(str(item).strip() for item in value if str(item).strip())
    return str(value).strip()


def word_count(value) -> str | None:
    """``100``, ``"100"`` or ``100.0`` -> ``"100"``; None when ``value`` is not a count of words
    ("short", or a negative, NaN or infinite number), which is then phrased as written."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond any float
        return None
    if not 0 <= number < math.inf:
        return None
    return str(int(number)) if number.is_integer() else str(number)


def system_message(text: str, path: str, read: Callable[[str, str], str]) -> str:
    """The system message: ``text``, the file at ``path`` (the ``system_file`` option, read by
    ``read``, the controller's ``read_option_file``), or ctrlkit's own when neither is given."""
    if text and path:
        raise OptionError("options 'prompt.system' and 'prompt.system_file' both set the system message; give one")
    if not path:
        return text or SYSTEM
    written = read("system_file", f"prompt system file '{path}'")
    if not written.strip():
        raise OptionError(f"prompt system file '{path}' is empty")
    return written


def load_template(path: str, read: Callable[[str, str], str]) -> list[tuple[str, str | None]]:
    """The ``(literal text, field name or None)`` pieces of the file at ``path`` (the
    ``template_file`` option, read by ``read``, the controller's ``read_option_file``).

    Only plain ``{name}`` fields are allowed: no ``{document.__class__}``, ``{keywords[0]}``,
    conversion or format spec, so a template can only place values, never reach into them.
    The pieces are filled by concatenation, not ``str.format``.
    """
    if not path:
        raise OptionError("option 'prompt.template_file' is required with prompt.template=file")
    text = read("template_file", f"prompt template file '{path}'")
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise OptionError(f"prompt template file '{path}': {exc} (write {{{{ and }}}} for literal braces)") from None
    pieces = []
    for literal, field, spec, conversion in parsed:
        if field is not None and (not field.isidentifier() or spec or conversion):
            written = "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise OptionError(f"prompt template file '{path}': field {written} is not a plain name; "
                              "use {document}, {controls} or a control name such as {topic}")
        pieces.append((literal, field))
    if not any(field == "document" for _, field in pieces):
        raise OptionError(f"prompt template file '{path}' has no {{document}} field")
    return pieces
