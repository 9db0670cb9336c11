from ctrlkit import SEP, Controller, Option, OptionError
from ctrlkit.plugin_api import carries


class NoControl(Controller):
    """The uncontrolled baseline: the document as it is."""

    def apply(self, example, model_input):
        return model_input


class Prepend(Controller):
    """Puts the requested control values before the source as plain text: ``sports <sep> ...``
    (Passali & Tsoumakas). Plain text, so unseen topics work zero-shot."""

    options = (
        Option("attributes", str, "topic", "comma-separated control attributes to prepend, in order"),
        Option("separator", str, SEP, "token between the prepended text and the document"),
        Option("joiner", str, " | ", "text between two prepended values"),
        Option("require", str, "all", "all: an example lacking one of the attributes is left uncontrolled; any: "
                                      "an example gets those of them it has, in order (one dataset's topic, "
                                      "another's keywords)", choices=("all", "any")),
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.reads = tuple(name.strip() for name in self.options["attributes"].split(",") if name.strip())
        if not self.reads:
            raise OptionError("option 'prepend.attributes' names no control attribute")
        self.reads_any = self.options["require"] == "any"
        if not self.options["separator"].strip():
            raise OptionError("option 'prepend.separator' must not be empty")

    def prepare(self, backbone):
        backbone.add_special_tokens([self.options["separator"]])

    def apply(self, example, model_input):
        values = [_as_text(example.controls[attribute]) for attribute in self.reads if carries(example, attribute)]
        prefix = self.options["joiner"].join(values)
        return model_input.replace(source=f"{prefix} {self.options['separator']} {model_input.source}")


def _as_text(value) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(item) for item in value)
    return str(value)
