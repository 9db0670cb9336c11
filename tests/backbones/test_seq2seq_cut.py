"""How the sequence-to-sequence backbone (``hf``) fits a long input to its limit: a prompt loses the
end of its document, not what follows it; a plain source keeps its first tokens, as before."""

import json
import shutil

import pytest

pytest.importorskip("torch", reason="the seq2seq cut tests need torch")
pytest.importorskip("transformers", reason="the seq2seq cut tests need transformers")

import ctrlkit  # noqa: E402
from ctrlkit import Example, ModelInput  # noqa: E402
from ctrlkit.backbones.document_cut import without_demonstrations  # noqa: E402
from ctrlkit.chat import flatten_messages  # noqa: E402

from helpers import tiny_models  # noqa: E402
from helpers.prompt_cuts import cut_length, fed_prompts, judged_lines, ray_worker_counts  # noqa: E402

LIMIT = 192
SHORT = Example("short", "The harbour reopened after the storm.", ["The harbour reopened."], {"topic": "travel"})
OTHER = Example("other", "The bakery on the corner closed.", ["A bakery closed."], {"topic": "business"})
BRIEF = "Be brief."
"""A system message short enough that a few-shot prompt fits the limit without its document."""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("seq2seq")
    return {"bart": tiny_models.build_bart(root / "bart"), "t5": tiny_models.build_t5(root / "t5"),
            "bart-512": tiny_models.build_bart(root / "bart-512", positions=512)}


def backbone_of(models, name, **options):
    return ctrlkit.get_backbone(f"hf:{models[name]}", **{"max_new_tokens": 2, "num_beams": 1,
                                                        "max_input_tokens": LIMIT, **options})


def sample(count=1):
    """The bundled sample's first ``count`` documents (each is there once per topic asked for)."""
    firsts = {}
    for example in ctrlkit.get_dataset("sample").load("test"):
        firsts.setdefault(example.document, example)
    return list(firsts.values())[:count]


def prompted(controller, example):
    return controller.apply(example, ModelInput(source=example.document))


def tokenize_with(tokenizer):
    return lambda text: tokenizer(text, verbose=False)["input_ids"]


@pytest.mark.parametrize("name", ["bart", "t5"])
def test_an_instruction_after_the_document_stays_when_the_documents_end_is_cut(models, name, tmp_path, monkeypatch):
    """A template file that gives the document first and asks for the summary after it (as many
    papers' prompts do): the tokenizer's right cut dropped the request and the cue."""
    template = tmp_path / "after.txt"
    template.write_text("Article:\n{document}\n\nSummarize the article above. Requirements:\n{controls}\n",
                        encoding="utf-8")
    controller = ctrlkit.get_controller("prompt", template="file", template_file=str(template))
    [example] = sample()
    model_input = prompted(controller, example)
    backbone = backbone_of(models, name)
    text = flatten_messages(model_input.messages)
    tokenize = tokenize_with(backbone.tokenizer)
    assert len(tokenize(text)) > LIMIT
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([model_input])
    before, document, after = text.rpartition(example.document)
    assert "Summarize the article above" in after and after.endswith("Assistant:")
    assert (cut_length(seen[0], before, document, after, tokenize, LIMIT) or 0) > 0
    assert (backbone.tokenized, backbone.truncated, backbone.truncated_tail) == (1, 1, 0)


@pytest.mark.parametrize(("name", "layout", "limit"), [("bart-512", "turns", 400), ("t5", "inline", LIMIT)])
def test_a_few_shot_prompt_keeps_its_demonstration_and_cue_and_cuts_the_tasks_document(models, name, layout, limit,
                                                                                        monkeypatch):
    """Where the document keeps at least half the limit beside the demonstration (turns), or the
    demonstration is inline (part of the task's message)."""
    controller = ctrlkit.get_controller("prompt", template="few-shot", shots=1, system=BRIEF, layout=layout)
    controller.fit([SHORT], None)
    [example] = sample()
    model_input = prompted(controller, example)
    backbone = backbone_of(models, name, max_input_tokens=limit)
    text = flatten_messages(model_input.messages)
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([model_input])
    before, document, after = text.rpartition(example.document)
    assert SHORT.document in before and after == "\n\nAssistant:"
    assert (cut_length(seen[0], before, document, after, tokenize_with(backbone.tokenizer), limit) or 0) > 0
    assert (backbone.truncated_tail, backbone.truncated_shots) == (0, 0)


def test_a_few_shot_prompt_whose_demonstrations_crowd_out_its_document_shows_fewer(models, monkeypatch):
    """The earliest demonstrations are dropped, as few as leave the document half the limit."""
    controller = ctrlkit.get_controller("prompt", template="few-shot", shots=2, system=BRIEF)
    controller.fit([SHORT, OTHER], None)
    [example] = sample()
    model_input = prompted(controller, example)
    backbone = backbone_of(models, "bart")
    tokenize = tokenize_with(backbone.tokenizer)
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([model_input])
    around = []  # the prompt around its document with 0, 1 and 2 demonstrations dropped
    for dropped in range(3):
        text = flatten_messages(without_demonstrations(model_input.messages, dropped))
        before, document, after = text.rpartition(example.document)
        around.append((before, after))
    kept = {dropped: cut_length(seen[0], before, example.document, after, tokenize, LIMIT)
            for dropped, (before, after) in enumerate(around)}
    [dropped] = [dropped for dropped, characters in kept.items() if characters]
    room = [LIMIT - len(tokenize(before + after)) for before, after in around]
    assert dropped > 0 and room[dropped] >= LIMIT // 2 > room[dropped - 1]  # the fewest that leave half the limit
    assert (backbone.truncated, backbone.truncated_shots, backbone.truncated_tail) == (1, 1, 0)


def test_guidance_before_a_prompt_stays_too(models, monkeypatch):
    """Guidance text (GSum-style) goes before the flattened prompt; a mark character in it, which
    would stand for the document, leaves the prompt to the tokenizer's cut."""
    [example] = sample()
    messages = ({"role": "user", "content": f"Summarize:\n{example.document}"},)
    backbone = backbone_of(models, "bart")
    tokenize = tokenize_with(backbone.tokenizer)
    seen = fed_prompts(backbone, monkeypatch)
    guided = ModelInput(source=example.document, messages=messages, guidance="The Rovers won.")
    marked = guided.replace(guidance="The Rovers won. \ue000")
    backbone.generate([guided, marked])
    [text, marked_text] = backbone.texts([guided, marked])
    before, document, after = text.rpartition(example.document)
    assert before.startswith("The Rovers won. <sep> User: Summarize:") and after == "\n\nAssistant:"
    assert (cut_length(seen[0], before, document, after, tokenize, LIMIT) or 0) > 0
    assert seen[1] == backbone.tokenizer(marked_text, truncation=True, max_length=LIMIT)["input_ids"]
    assert (backbone.truncated, backbone.truncated_tail) == (2, 1)


@pytest.mark.parametrize("guidance", [None, "The coach won."])
def test_a_plain_source_keeps_its_first_tokens(models, guidance, monkeypatch):
    """Guidance comes first and the document after it: the tokenizer's own right cut, as before."""
    [example] = sample()
    model_input = ModelInput(source=example.document, guidance=guidance)
    backbone = backbone_of(models, "bart")
    [text] = backbone.texts([model_input])
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([model_input])
    assert seen == [backbone.tokenizer(text, truncation=True, max_length=LIMIT)["input_ids"]]
    assert seen[0][-1] == backbone.tokenizer.eos_token_id
    assert (backbone.truncated, backbone.truncated_tail) == (1, 0)


def test_a_tokenizer_configured_to_cut_on_the_left_still_keeps_a_sources_head(models, tmp_path, monkeypatch):
    from transformers import AutoTokenizer

    folder = shutil.copytree(models["bart"], tmp_path / "bart")
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "truncation_side": "left"}), encoding="utf-8")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    assert tokenizer.truncation_side == "left"
    backbone = ctrlkit.get_backbone(f"hf:{folder}", max_new_tokens=2, num_beams=1, max_input_tokens=LIMIT)
    [example] = sample()
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([ModelInput(source=example.document)])
    assert seen == [tokenize_with(tokenizer)(example.document)[:LIMIT - 1] + [tokenizer.eos_token_id]]


def test_where_no_number_of_demonstrations_leaves_the_document_half_the_limit_all_are_dropped(models, monkeypatch):
    [example] = sample()
    backbone = backbone_of(models, "bart")
    tokenize = tokenize_with(backbone.tokenizer)
    system = "Follow these rules. " * 8
    controller = ctrlkit.get_controller("prompt", template="few-shot", shots=2, system=system)
    controller.fit([SHORT, OTHER], None)
    model_input = prompted(controller, example)
    before, _, after = flatten_messages(without_demonstrations(model_input.messages, 2)).rpartition(example.document)
    assert LIMIT // 2 < len(tokenize(before + after)) < LIMIT  # room, but less than half, with none shown
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([model_input])
    assert (cut_length(seen[0], before, example.document, after, tokenize, LIMIT) or 0) > 0
    assert (backbone.truncated, backbone.truncated_shots, backbone.truncated_tail) == (1, 1, 0)


def test_a_few_shot_prompt_whose_document_is_in_no_message_is_shown_as_few_as_fit_it_whole(models, monkeypatch):
    """As a controller that rewrote the source after prompt wrote its messages leaves it."""
    [example] = sample()
    messages = ({"role": "system", "content": BRIEF}, {"role": "user", "content": example.document},
                {"role": "assistant", "content": "A summary."},
                {"role": "user", "content": "Summarize: the coach won."})
    backbone = backbone_of(models, "bart")
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([ModelInput(source="elsewhere", messages=messages)])
    assert seen == [tokenize_with(backbone.tokenizer)(flatten_messages(without_demonstrations(messages, 1)))]
    assert (backbone.truncated, backbone.truncated_shots, backbone.truncated_tail) == (1, 1, 0)


def test_a_few_shot_prompt_nothing_fits_is_cut_by_the_tokenizer_without_its_demonstrations(models, monkeypatch):
    """Its document is in none of its messages (tag+prompt rewrote the source), and it is too long
    even without its demonstrations: the tokenizer keeps the task's message, not the first
    demonstration."""
    [example, other] = sample(2)
    messages = ({"role": "system", "content": BRIEF}, {"role": "user", "content": other.document},
                {"role": "assistant", "content": "A summary."}, {"role": "user", "content": example.document})
    backbone = backbone_of(models, "bart")
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([ModelInput(source="elsewhere", messages=messages)])
    shown = flatten_messages(without_demonstrations(messages, 1))
    assert seen == [backbone.tokenizer(shown, truncation=True, max_length=LIMIT)["input_ids"]]
    assert (backbone.truncated, backbone.truncated_shots, backbone.truncated_tail) == (1, 1, 1)


def test_a_conversation_that_gives_its_document_in_an_earlier_turn_keeps_that_turn(models, monkeypatch):
    [example] = sample()
    messages = ({"role": "system", "content": "Follow these rules carefully. " * 3},
                {"role": "user", "content": f"Here is an article:\n{example.document}"},
                {"role": "assistant", "content": "I have read the article."},
                {"role": "user", "content": "Summarize it in one sentence."})
    backbone = backbone_of(models, "bart")
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([ModelInput(source=example.document, messages=messages)])
    before, document, after = flatten_messages(messages).rpartition(example.document)
    assert (cut_length(seen[0], before, document, after, tokenize_with(backbone.tokenizer), LIMIT) or 0) > 0
    assert (backbone.truncated, backbone.truncated_shots, backbone.truncated_tail) == (1, 0, 0)


@pytest.mark.parametrize("why", ["the document is in no message", "an inline demonstration fills the limit",
                                 "the system message fills the limit"])
def test_a_prompt_whose_document_cannot_be_cut_keeps_its_first_tokens_and_is_counted(models, why, monkeypatch):
    """An inline demonstration is part of the task's message: it cannot be dropped as a turn is."""
    [example, other] = sample(2)
    if why == "the document is in no message":  # a controller changed the source after prompt wrote it
        model_input = ModelInput(source="elsewhere", messages=({"role": "user", "content": example.document},))
    elif why == "an inline demonstration fills the limit":
        controller = ctrlkit.get_controller("prompt", template="few-shot", shots=1, layout="inline")
        controller.fit([other], None)  # a demonstration longer than the limit on its own
        model_input = prompted(controller, example)
    else:
        model_input = prompted(ctrlkit.get_controller("prompt", system="Follow these rules. " * 60), example)
    backbone = backbone_of(models, "bart")
    text = flatten_messages(model_input.messages)
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate([model_input])
    assert seen == [backbone.tokenizer(text, truncation=True, max_length=LIMIT)["input_ids"]]
    assert (backbone.truncated, backbone.truncated_tail, backbone.truncated_shots) == (1, 1, 0)


def test_a_batch_feeds_each_input_as_it_is_fed_alone_and_training_reads_the_same(models, monkeypatch):
    """Inputs of every kind, some over the limit and some not, padded on the tokenizer's side."""
    controller = ctrlkit.get_controller("prompt", template="few-shot", shots=1, system=BRIEF)
    controller.fit([SHORT, OTHER], None)
    examples = sample(2)
    inputs = [prompted(controller, examples[0]), ModelInput(source=examples[1].document),
              ModelInput(source="The coach won.", guidance="The coach"), prompted(controller, SHORT)]
    backbone = backbone_of(models, "bart")
    seen = fed_prompts(backbone, monkeypatch)
    backbone.generate(inputs)
    together = seen[:]
    for model_input in inputs:
        backbone.generate([model_input])
    assert together == seen[len(inputs):]
    assert len({len(row) for row in together}) > 1 and max(len(row) for row in together) == LIMIT
    batch = backbone.encoder_inputs(inputs)
    assert [row[mask.bool()].tolist() for row, mask in zip(batch["input_ids"], batch["attention_mask"])] == together
    assert batch["attention_mask"][:, 0].all()  # padded on the right
    # outputs cached under the old cut are not served
    assert backbone.identity()["cut"] == "document end, then earliest demonstrations"


@pytest.mark.parametrize("system", [None, "Follow these rules. " * 60])
def test_the_run_says_how_many_prompts_lost_their_end(models, system, caplog):
    """A system message alone longer than the limit leaves no room to cut the document in: the
    prompts keep their first tokens, and the run's line says they lost their end."""
    options = {"prompt": {"system": system} if system else {},
               "hf": {"max_new_tokens": 2, "num_beams": 1, "max_input_tokens": LIMIT}}
    with caplog.at_level("WARNING", logger="ctrlkit"):
        ctrlkit.run(controller="prompt", backbone=f"hf:{models['bart']}", metrics=["rouge"], limit=4, cache=False,
                    options=options)
    [line] = [record.getMessage() for record in caplog.records if "(controller 'prompt')" in record.getMessage()]
    assert f"4 of 4 inputs truncated to {LIMIT} tokens" in line
    assert ("4 of them prompts cut at their end: they lost the cue to answer" in line) == bool(system), line


def test_the_line_counts_the_prompts_that_lost_their_end_or_demonstrations(models, caplog):
    """A plain source cut at its end loses only its document's end: it is truncated, not counted
    among the prompts that lost theirs."""
    from ctrlkit.engine.truncation import truncation_reported

    [example, other] = sample(2)
    few_shot = ctrlkit.get_controller("prompt", template="few-shot", shots=1)
    few_shot.fit([other], None)
    inputs = [ModelInput(source=example.document),
              ModelInput(source="elsewhere", messages=({"role": "user", "content": other.document},)),
              ModelInput(source=other.document, messages=({"role": "user", "content": other.document},)),
              ModelInput(source="The coach won."), prompted(few_shot, example)]
    backbone = backbone_of(models, "bart")
    with caplog.at_level("WARNING", logger="ctrlkit"), truncation_reported(backbone, "controller 'x'"):
        backbone.generate(inputs)
    [line] = [record.getMessage() for record in caplog.records]
    assert f"(controller 'x'): 4 of 5 inputs truncated to {LIMIT} tokens, 1 of them prompts cut at their end" in line
    assert "), 1 of them few-shot prompts shown fewer demonstrations (the earliest dropped" in line, line


def test_a_ray_worker_reports_the_prompts_that_lost_their_end(models):
    """A long plain source is cut, and a prompt whose document is in none of its messages too (at its end
    on this backbone), in what a Ray worker returns."""
    counts = ray_worker_counts(f"hf:{models['bart']}")
    assert counts == {"tokenized": 3, "truncated": 2, "truncated_head": 0, "truncated_tail": 1,
                      "truncated_shots": 0}


def test_a_judges_cut_prompts_are_reported_as_cut_at_their_end(models, tmp_path, caplog):
    lines = judged_lines(tmp_path, f"hf:{models['bart']}", {"max_new_tokens": 2, "num_beams": 1}, caplog)
    assert len(lines) == 3 and all("inputs truncated to 16 tokens, at their end (a judge's prompt holds no document"
                                   in line for line in lines), lines


def test_an_interference_analysis_reports_its_judges_cut_prompts_for_each_condition(models, tmp_path, caplog):
    from ctrlkit.analyses.interference import interference

    rows = [{"id": f"i{n}", "document": f"Summary number {n}. The trial enrolled {n} patients.",
             "controls": {"focus": "high", "topic": ("health", "sports")[n % 2]}} for n in range(4)]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with caplog.at_level("WARNING", logger="ctrlkit"):
        interference(dataset="jsonl", data=str(data), controller="prepend", attributes=["topic"], metrics=["focus"],
                     judge=f"hf:{models['bart']}", cache=False,
                     options={"hf": {"max_input_tokens": 16, "max_new_tokens": 2, "num_beams": 1}})
    lines = [record.getMessage() for record in caplog.records if "truncated" in record.getMessage()]
    assert len(lines) == 2, lines
    for line, scoring in zip(lines, ["the controls as given", "attribute 'topic' changed"]):
        assert f"(judge of metric 'focus', {scoring}): " in line and "inputs truncated to 16 tokens, at their end" \
            in line, line
