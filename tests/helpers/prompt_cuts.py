"""Helpers for the tests of how the transformers backbones fit long prompts to their input limit."""


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
    """The truncation counts a Ray worker (:class:`ctrlkit.executors.ray_generation.GenerationWorker`, no
    cluster needed) returns with a batch of three inputs at a 24-token limit: a long plain source,
    a long prompt whose document is in none of its messages, and a short source."""
    from ctrlkit import ModelInput
    from ctrlkit.executors.ray_generation import GenerationWorker
    from ctrlkit.executors.ray_support import installed

    worker = GenerationWorker(spec, {"max_new_tokens": 2, "num_beams": 1, "max_input_tokens": 24}, False, ".",
                              installed())
    content = "Investors bought shares of the bank on Monday. " * 8
    inputs = [ModelInput(source=content),
              ModelInput(source="elsewhere", messages=({"role": "user", "content": content},)),
              ModelInput(source="The coach won.")]
    return worker.generate([], inputs, [])["counts"]


def judged_lines(folder, judge: str, options: dict, caplog) -> list[str]:
    """The truncation lines of a run (prepend, and the baseline none) and of ``ctrlkit evaluate`` of
    its samples, each asking ``judge`` through metric ``focus``, at a 16-token limit, on three short
    JSONL rows (the extractive backbone summarizes them)."""
    import json

    import ctrlkit

    rows = [{"id": f"f{n}", "document": f"Summary number {n}. The trial enrolled {n} patients.",
             "controls": {"focus": "high"}} for n in range(3)]
    data = folder / "focus.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    options = {judge.partition(":")[0]: {"max_input_tokens": 16, **options}}
    with caplog.at_level("WARNING", logger="ctrlkit"):
        ctrlkit.run(dataset="jsonl", data=str(data), backbone="extractive", controller="prepend", baseline="none",
                    metrics=["focus"], judge=judge, cache=False, bootstrap=0, out=str(folder / "run"),
                    options={**options, "prepend": {"attributes": "focus"}})
        ctrlkit.evaluate(predictions=str(folder / "run" / "samples.jsonl"), dataset="jsonl", data=str(data),
                         metrics=["focus"], judge=judge, bootstrap=0, options=options)
    return [record.getMessage() for record in caplog.records if "truncated" in record.getMessage()]
