"""What a transformers backbone feeds its model, for the tests of how long prompts are cut."""


def fed_prompts(backbone, monkeypatch) -> list:
    """The token ids of each prompt the backbone's ``generate`` feeds the model from now on, its
    padding left out; nothing is generated."""
    seen = []

    def generate(**kwargs):
        seen.extend(row[mask.bool()].tolist() for row, mask in zip(kwargs["input_ids"], kwargs["attention_mask"]))
        return kwargs["input_ids"]

    monkeypatch.setattr(backbone.model, "generate", generate)
    return seen


def cut_length(ids, before: str, document: str, after: str, tokenize, limit: int) -> int | None:
    """The ``k`` shorter than the document for which ``ids`` are the tokens of ``before +
    document[:k] + after``, where they use at least ``limit - 3`` of the ``limit`` tokens (one more
    character would not fit: it adds a token, or a few for a character of several bytes); else None."""
    if not limit - 3 <= len(ids) <= limit:
        return None
    return next((k for k in range(len(document)) if tokenize(before + document[:k] + after) == ids), None)


def ray_worker_counts(spec: str) -> dict:
    """The truncation counts a Ray worker (:class:`ctrlkit.ray_generation.GenerationWorker`, no
    cluster needed) returns with a batch of three inputs at a 24-token limit: a long plain source,
    a long prompt whose document is in none of its messages, and a short source."""
    from ctrlkit import ModelInput
    from ctrlkit.ray_generation import GenerationWorker
    from ctrlkit.ray_support import installed

    worker = GenerationWorker(spec, {"max_new_tokens": 2, "num_beams": 1, "max_input_tokens": 24}, False, ".",
                              installed())
    content = "Investors bought shares of the bank on Monday. " * 8
    inputs = [ModelInput(source=content),
              ModelInput(source="elsewhere", messages=({"role": "user", "content": content},)),
              ModelInput(source="The coach won.")]
    return worker.generate([], inputs, [])["counts"]
