"""The length controller: asks the backbone for the requested number of words.

It puts a word target in ``ModelInput.features["target_words"]``, which a backbone with the
``length_budget`` capability (the extractive one: its word budget) honours. The request may be
words, a 50-word bin (read as the bin's middle: bin k -> 50k + 25 words), or a named level that
the dataset maps to words (``length_levels``, as MACSum does) or ``length.levels`` sets.
"""

import math

from ctrlkit import Controller, CtrlkitError, Option


class LengthBudget(Controller):
    """Gives the backbone a word target from the length control (words, a 50-word bin, or a named level)."""

    reads = ("length",)
    requires = frozenset({"length_budget"})
    options = (
        Option("unit", str, "words", "how a numeric length control is read", choices=("words", "bin")),
        Option("levels", str, "", "named levels in words, e.g. short=50,normal=100 (over the dataset's own)"),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.levels: dict[str, float] = {}

    def use_dataset(self, dataset):
        self.levels = dict(getattr(dataset, "length_levels", None) or {})
        for item in filter(None, (part.strip() for part in self.options["levels"].split(","))):
            name, _, words = item.partition("=")
            try:
                self.levels[name.strip()] = float(words)
            except ValueError:
                raise CtrlkitError(f"option 'length.levels': {item!r} is not NAME=WORDS") from None

    def apply(self, example, model_input):
        value = example.controls["length"]
        if isinstance(value, str) and value in self.levels:
            words = self.levels[value]
        else:
            try:
                number = float(value)
            except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond any float
                raise CtrlkitError(f"controller 'length': example '{example.id}' requests length {value!r}, which is "
                                   f"not a number or a known level ({', '.join(self.levels) or 'none'})") from None
            words = 50 * number + 25 if self.options["unit"] == "bin" else number
            if not 0 <= number < math.inf or not words < math.inf:  # a huge bin overflows to infinite words
                raise CtrlkitError(f"controller 'length': example '{example.id}' requests length {value!r}")
        features = {**model_input.features, "target_words": max(1, round(words))}
        return model_input.replace(features=features)
