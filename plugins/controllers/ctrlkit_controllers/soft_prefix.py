"""The soft-prefix controller: names the example's value of one control, so that a backbone
holding one trained prefix per value (``ctrlkit train --peft prefix -c soft-prefix``) uses that
value's prefix for the example: the soft-prefix (SP) rows of MACSum and CCSBench. The text is
left as it is; chain it with a prompt (``hard-prompt+soft-prefix``) for both.
"""

from ctrlkit import Controller, Option, OptionError


class SoftPrefix(Controller):
    """Picks, for each example, the trained prefix of its value of one control (soft-prefix.control)."""

    requires = frozenset({"value_prefixes"})
    trained_with_model = True
    options = (Option("control", str, "length", "the control whose value picks the prefix, e.g. length"),)

    def __init__(self, **options):
        super().__init__(**options)
        control = self.options["control"].strip()
        if not control:
            raise OptionError("option 'soft-prefix.control' names no control")
        self.reads = (control,)

    def apply(self, example, model_input):
        value = example.controls[self.reads[0]]
        wanted = {"control": self.reads[0], "value": str(value)}
        return model_input.replace(features={**model_input.features, "soft_prefix": wanted})
