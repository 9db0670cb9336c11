"""The length control code of CTRLsum and CCSBench: a ``<len_k>`` token before the source.

A model fine-tuned on inputs that start with the code of their reference's length learns to
write to that length; asking for another code then asks for another length. The code is the
requested length's 50-word bin (the bins the length metric scores), so a request in words, a
bin, or a named level all land on the same small vocabulary of tokens.
"""

import math

from ctrlkit import ConfigurationError, Controller, Option

BIN_WORDS = 50


def length_bin(words: float) -> int:
    """The 50-word bin of a length: bin 0 = 0-50 words, bin 1 = 51-100, ..."""
    return max(0, math.ceil(words / BIN_WORDS) - 1)


def length_token(k: int) -> str:
    """The code of bin k: ``<len_k>``."""
    return f"<len_{k}>"


class LengthCode(Controller):
    """Prepends the length code <len_k> of the requested 50-word bin k (CTRLsum, CCSBench).

    The ``length`` control is words (``unit=words``: bin = max(0, ceil(words / 50) - 1)), a bin
    (``unit=bin``: a whole number), or a named level ("short") that the dataset maps to words
    through its ``length_levels``; a numeric string counts as its number. Requests beyond the
    last code are clipped to it, ``<len_{max_bins-1}>``, as a model trained with ``max_bins``
    codes has no longer one to be asked for. The codes are registered as special tokens, so a
    tokenizer keeps each whole; they carry meaning only for a model fine-tuned with them
    (``ctrlkit train -c length-code``), so a run with any other model warns (``trained_with_model``).
    """

    reads = ("length",)
    trained_with_model = True
    options = (
        Option("unit", str, "words", "how a numeric length control is read", choices=("words", "bin")),
        Option("max_bins", int, 10, "number of codes, <len_0>..<len_{max_bins-1}>; longer requests are clipped "
                                    "to the last", minimum=1),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.levels: dict[str, float] = {}

    def use_dataset(self, dataset):
        self.levels = dict(getattr(dataset, "length_levels", None) or {})

    def prepare(self, backbone):
        backbone.add_special_tokens([length_token(k) for k in range(self.options["max_bins"])])

    def apply(self, example, model_input):
        k = min(self._requested_bin(example), self.options["max_bins"] - 1)
        return model_input.replace(source=f"{length_token(k)} {model_input.source}")

    def _requested_bin(self, example) -> int:
        value = example.controls["length"]
        where = f"controller '{self.name}': example '{example.id}'"
        if isinstance(value, str) and value in self.levels:
            return length_bin(self.levels[value])
        try:
            number = float(value)
        except (TypeError, ValueError):
            known = ", ".join(self.levels) or "none"
            raise ConfigurationError(f"{where} requests length {value!r}, which is neither a number nor a level "
                                     f"of the dataset (known: {known})") from None
        if isinstance(value, bool) or not 0 <= number < math.inf:
            raise ConfigurationError(f"{where} requests length {value!r}; expected words, a bin or a level")
        if self.options["unit"] == "words":
            return length_bin(number)
        if number != int(number):
            raise ConfigurationError(f"{where} requests bin {value!r}, which is not a whole number")
        return int(number)
