"""A judge backbone for the judge-template tests: it answers each prompt with a function of the
prompt and keeps every prompt it was sent, so a test reads exactly what a metric asked."""

import ctrlkit


class PromptJudge(ctrlkit.Backbone):
    """Answers each prompt with ``answer(last message's text)``, or with ``whole``
    ``answer(messages)``; ``prompts`` holds every prompt's messages."""

    name = "fake-judge"
    capabilities = frozenset({"text", "messages"})

    def __init__(self, answer, whole: bool = False):
        super().__init__()
        self.answer, self.whole = answer, whole
        self.prompts = []

    def generate(self, inputs):
        self.prompts += [list(model_input.messages) for model_input in inputs]
        return [self.answer(list(model_input.messages) if self.whole else model_input.messages[-1]["content"])
                for model_input in inputs]


def write_text_file(folder, name, text):
    """``text`` written to ``folder/name`` (a template or examples file); its path as a string."""
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return str(path)
