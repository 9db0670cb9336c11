import copy
import re

import pytest

import ctrlkit
from ctrlkit import Example, ModelInput
from ctrlkit.chat import flatten_messages
from ctrlkit_controllers.prompt import SYSTEM, Prompt

DOCUMENT = "The trial enrolled 200 patients. The drug lowered blood pressure."
ALL_FOUR = {"length": 100, "keywords": ["trial", "blood pressure"], "readability": "high", "focus": "high"}


def render(values, **options):
    example = Example("x", DOCUMENT, controls=values)
    return ctrlkit.get_controller("prompt", **options).apply(example, ModelInput(source=DOCUMENT)).messages


def user(messages) -> str:
    assert messages[0] == {"role": "system", "content": SYSTEM}
    assert messages[-1]["role"] == "user"
    return messages[-1]["content"]


def train_set(n=8):
    return [Example(f"t{i}", f"Train document {i}.", [f"Summary {i}."], {"topic": f"topic{i}"}) for i in range(n)]


def test_registry_finds_it_and_it_needs_a_chat_backbone():
    hard = ctrlkit.get_controller("prompt", template="hard")
    assert isinstance(hard, Prompt) and hard.name == "prompt"
    assert hard.requires == frozenset({"messages"}) and hard.reads == () and not hard.needs_train_examples
    with pytest.raises(ctrlkit.ConfigurationError, match="needs backbone capability messages"):
        ctrlkit.run(controller="prompt", metrics=["stas"], baseline=None, limit=2)


def test_zero_shot_exact_text_with_all_four_ccsbench_controls():
    assert user(render(ALL_FOUR)) == (
        "Summarize the following document.\n"
        "Requirements:\n"
        "- Length: about 100 words\n"
        "- Include the keywords: trial, blood pressure\n"
        "- Readability: easy to read for a general audience, simple words and short sentences\n"
        "- Focus: empirical (data, experiments, metrics, results)\n"
        "\n"
        f"Document:\n{DOCUMENT}")


@pytest.mark.parametrize("controls, lines", [
    ({"topic": "health"}, ["- Focus on the topic: health"]),
    ({"entity": "Pfizer"}, ["- Focus on the entity: Pfizer"]),
    ({"length": "short", "keywords": "trial,drug"}, ["- Length: short", "- Include the keywords: trial, drug"]),
    ({"length": "150", "keywords": ("drug",)}, ["- Length: about 150 words", "- Include the keywords: drug"]),
    ({"readability": "normal", "focus": "low"}, [
        "- Readability: written for experts",
        "- Focus: conceptual (motivation, theory, method, implications)"]),
    ({"focus": "high", "topic": "health", "length": 50, "readability": "high", "keywords": ["drug"],
      "entity": "Pfizer"},  # rendered in a fixed order, whatever the order of the controls
     ["- Length: about 50 words", "- Include the keywords: drug",
      "- Readability: easy to read for a general audience, simple words and short sentences",
      "- Focus: empirical (data, experiments, metrics, results)",
      "- Focus on the topic: health", "- Focus on the entity: Pfizer"]),
])
def test_zero_shot_lists_each_control_present(controls, lines):
    assert user(render(controls)) == "\n".join(
        ["Summarize the following document.", "Requirements:", *lines, "", "Document:", DOCUMENT])


def test_zero_shot_without_controls_and_absent_or_unknown_controls_are_skipped():
    plain = f"Summarize the following document.\n\nDocument:\n{DOCUMENT}"
    assert user(render({})) == plain
    assert user(render({"topic": "", "keywords": [], "length": None, "style": "formal"})) == plain


def test_controls_option_restricts_and_names_unknown_controls():
    controls = {**ALL_FOUR, "topic": "health", "style": "formal"}
    prompt = ctrlkit.get_controller("prompt", controls="style, topic")
    assert prompt.reads == ("style", "topic")
    messages = prompt.apply(Example("x", DOCUMENT, controls=controls), ModelInput(source=DOCUMENT)).messages
    assert user(messages) == "\n".join(["Summarize the following document.", "Requirements:", "- style: formal",
                                        "- Focus on the topic: health", "", "Document:", DOCUMENT])


def test_hard_prompt_exact_text():
    assert user(render({**ALL_FOUR, "topic": "health"}, template="hard")) == (
        "Length: 100\n"
        "Keywords: trial, blood pressure\n"
        "Readability: high\n"
        "Focus: high\n"
        "Topic: health\n"
        f"Document: {DOCUMENT}")


@pytest.mark.parametrize("controls, lines", [
    ({"topic": "health"}, ["Topic: health"]),
    ({"entity": "Pfizer"}, ["Entity: Pfizer"]),
    ({"length": 150, "keywords": "trial, drug"}, ["Length: 150", "Keywords: trial, drug"]),
    ({}, []),
])
def test_hard_prompt_one_line_per_control(controls, lines):
    assert user(render(controls, template="hard")) == "\n".join([*lines, f"Document: {DOCUMENT}"])


def test_hard_prompt_labels_a_named_unknown_control():
    assert user(render({"target_style": "formal", "topic": "health"}, template="hard", controls="target_style")) == (
        f"Target style: formal\nDocument: {DOCUMENT}")


def test_few_shot_exact_messages():
    prompt = ctrlkit.get_controller("prompt", template="few-shot", shots=1)
    assert prompt.needs_train_examples
    prompt.fit([Example("t", "Old news.", ["Old."], {"length": 10, "topic": "misc"})], None)
    example = Example("x", DOCUMENT, controls={"topic": "health"})
    assert prompt.apply(example, ModelInput(source=DOCUMENT)).messages == (
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Summarize the following document.\nRequirements:\n- Length: about 10 words\n"
                                    "- Focus on the topic: misc\n\nDocument:\nOld news."},
        {"role": "assistant", "content": "Old."},
        {"role": "user", "content": "Summarize the following document.\nRequirements:\n"
                                    f"- Focus on the topic: health\n\nDocument:\n{DOCUMENT}"},
    )


def shown(prompt, example):
    """The documents of the demonstrations shown for ``example``."""
    messages = prompt.apply(example, ModelInput(source=example.document)).messages
    return [m["content"].rsplit("\n", 1)[-1] for m in messages[1:-1] if m["role"] == "user"]


def fitted(train, seed=0, shots=3):
    prompt = ctrlkit.get_controller("prompt", template="few-shot", shots=shots, seed=seed)
    prompt.fit(train, None)
    return prompt


def expected_draw(train, example, seed, shots):
    """An independent computation of the draw: sha256 of 'seed NUL id', first 8 bytes, big-endian,
    seeding random.Random's sample of the train examples sorted by id, less the example itself."""
    import hashlib
    import random
    pool = sorted((t for t in train if t.id != example.id and t.document != example.document), key=lambda t: t.id)
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{seed}\0{example.id}".encode()).digest()[:8], "big"))
    return [t.document for t in rng.sample(pool, shots)]


def test_few_shot_draws_per_example_reproducibly_whatever_the_order():
    train = train_set(12)
    examples = [Example(f"e{i}", f"Test document {i}.", controls={"topic": "health"}) for i in range(6)]
    first = {e.id: shown(fitted(train), e) for e in examples}
    assert all(len(docs) == 3 and len(set(docs)) == 3 for docs in first.values())
    assert first == {e.id: expected_draw(train, e, 0, 3) for e in examples}
    # another run: train split shuffled, examples in reverse order, one at a time
    again = fitted(list(reversed(train)))
    assert {e.id: shown(again, e) for e in reversed(examples)} == first
    assert len({tuple(docs) for docs in first.values()}) > 1  # examples differ in their demonstrations
    other_seed = {e.id: shown(fitted(train, seed=1), e) for e in examples}
    assert other_seed != first and other_seed == {e.id: expected_draw(train, e, 1, 3) for e in examples}


def test_few_shot_never_shows_an_example_or_its_document_as_its_own_demonstration():
    train = train_set(4)
    prompt = fitted(train, shots=3)
    for example in train:  # only 3 others: every draw is exactly the rest
        assert sorted(shown(prompt, example)) == sorted(t.document for t in train if t is not example)
    same_document = Example("other-id", train[0].document)
    assert train[0].document not in shown(prompt, same_document)


def test_few_shot_inline_layout_exact_message():
    prompt = ctrlkit.get_controller("prompt", template="few-shot", shots=1, layout="inline")
    prompt.fit([Example("t", "Old news.", ["Old."], {"length": 10})], None)
    example = Example("x", DOCUMENT, controls={"topic": "health"})
    assert prompt.apply(example, ModelInput(source=DOCUMENT)).messages == (
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Example 1:\nSummarize the following document.\nRequirements:\n"
                                    "- Length: about 10 words\n\nDocument:\nOld news.\n\nSummary:\nOld.\n\n"
                                    "Now this one:\nSummarize the following document.\nRequirements:\n"
                                    f"- Focus on the topic: health\n\nDocument:\n{DOCUMENT}"},
    )
    turns = fitted(train_set(), shots=2)
    inline = ctrlkit.get_controller("prompt", template="few-shot", shots=2, layout="inline")
    inline.fit(train_set(), None)
    one = inline.apply(example, ModelInput(source=DOCUMENT)).messages
    assert len(one) == 2 and [m["content"].split("\n")[-1] for m in
                              turns.apply(example, ModelInput(source=DOCUMENT)).messages[1:-1:2]] == [
        line for line in one[1]["content"].split("\n") if line.startswith("Train document")]
    with pytest.raises(ctrlkit.OptionError, match="'prompt.layout' is used only with prompt.template=few-shot"):
        ctrlkit.get_controller("prompt", layout="inline")


def test_few_shot_options_are_recorded_as_results_json_records_them():
    from ctrlkit.component_options import RunOptions
    from ctrlkit.engine.assembly import resolved_options
    given = {"template": "few-shot", "shots": 3, "seed": 7, "layout": "inline", "system": "Hi."}
    routed = RunOptions({"prompt": given}, [("controllers", "prompt")])
    prompt = ctrlkit.get_controller("prompt", **routed.of("controllers", "prompt"))
    assert resolved_options(routed, controllers=[prompt]) == {"prompt": {
        **given, "template_file": "", "controls": "", "system_file": "", "length_as": "words", "length_bin": 50,
        "length_top_bin": 0}}


def test_few_shot_needs_enough_train_examples_with_references():
    prompt = ctrlkit.get_controller("prompt", template="few-shot", shots=3)
    unreferenced = [Example(f"u{i}", "No summary.") for i in range(5)]
    with pytest.raises(ctrlkit.ConfigurationError, match="needs 3 train examples with references.*has 2"):
        prompt.fit(train_set(2) + unreferenced, None)
    exactly = train_set(3)
    prompt.fit(exactly, None)
    with pytest.raises(ctrlkit.CtrlkitError, match="example 't0' has 2 train examples other than itself"):
        prompt.apply(exactly[0], ModelInput(source=exactly[0].document))
    with pytest.raises(ctrlkit.OptionError, match="at least 1"):
        ctrlkit.get_controller("prompt", template="few-shot", shots=0)


def test_only_few_shot_needs_train_examples():
    assert [ctrlkit.get_controller("prompt", template=t).needs_train_examples
            for t in ("zero-shot", "hard", "few-shot")] == [False, False, True]


@pytest.mark.parametrize("options", [{}, {"template": "hard"}, {"template": "few-shot"}])
def test_prompt_is_pure(options):
    prompt = ctrlkit.get_controller("prompt", **options)
    prompt.fit(train_set(), None)
    example = Example("x", DOCUMENT, ["Ref."], copy.deepcopy({**ALL_FOUR, "topic": "health"}))
    before = copy.deepcopy(example)
    model_input = ModelInput(source=DOCUMENT, guidance="g")
    first = prompt.apply(example, model_input)
    assert prompt.apply(example, model_input) == first
    assert example == before and model_input == ModelInput(source=DOCUMENT, guidance="g")
    assert first.source == DOCUMENT and first.guidance == "g"


def test_the_document_is_the_model_input_source():
    """So a controller applied before this one in a chain reaches the prompt."""
    example = Example("x", DOCUMENT, controls={"topic": "health"})
    messages = ctrlkit.get_controller("prompt", template="hard").apply(example, ModelInput(source="tagged")).messages
    assert user(messages) == "Topic: health\nDocument: tagged"


def write(tmp_path, text):
    path = tmp_path / "template.txt"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_file_template_fills_plain_fields(tmp_path):
    path = write(tmp_path, "Write about {topic} ({keywords}); {{braces}} stay.\n{controls}\n---\n{document}")
    prompt = ctrlkit.get_controller("prompt", template="file", template_file=path)
    assert prompt.reads == ("topic", "keywords")
    example = Example("x", DOCUMENT, controls={"topic": "health", "keywords": ["drug", "trial"], "length": 80})
    assert user(prompt.apply(example, ModelInput(source=DOCUMENT)).messages) == (
        "Write about health (drug, trial); {braces} stay.\n"
        "- Length: about 80 words\n- Include the keywords: drug, trial\n- Focus on the topic: health\n"
        f"---\n{DOCUMENT}")


def test_file_template_names_the_example_and_field_it_lacks(tmp_path):
    path = write(tmp_path, "{entity}: {document}")
    prompt = ctrlkit.get_controller("prompt", template="file", template_file=path)
    with pytest.raises(ctrlkit.CtrlkitError, match=r"uses field 'entity', which example 'doc-7' does not have"):
        prompt.apply(Example("doc-7", DOCUMENT, controls={"topic": "health"}), ModelInput(source=DOCUMENT))


@pytest.mark.parametrize("text, field", [
    ("{document.__class__}", "{document.__class__}"),
    ("{keywords[0]} {document}", "{keywords[0]}"),
    ("{document!r}", "{document!r}"),
    ("{document:{topic.x}}", "{document:{topic.x}}"),
    ("{} {document}", "{}"),
    ("{0} {document}", "{0}"),
])
def test_file_template_refuses_anything_but_plain_names(tmp_path, text, field):
    with pytest.raises(ctrlkit.OptionError, match=re.escape(f"field {field} is not a plain name")):
        ctrlkit.get_controller("prompt", template="file", template_file=write(tmp_path, text))


def test_file_template_problems_name_the_file(tmp_path):
    missing = str(tmp_path / "absent.txt")
    with pytest.raises(ctrlkit.OptionError, match=f"prompt template file '{missing}' cannot be read"):
        ctrlkit.get_controller("prompt", template="file", template_file=missing)
    no_document = write(tmp_path, "Summarize {topic}.")
    with pytest.raises(ctrlkit.OptionError, match="template.txt' has no {document} field"):
        ctrlkit.get_controller("prompt", template="file", template_file=no_document)
    with pytest.raises(ctrlkit.OptionError, match="template.txt': Single '}'"):
        ctrlkit.get_controller("prompt", template="file", template_file=write(tmp_path, "{document} }"))
    with pytest.raises(ctrlkit.OptionError, match="template_file' is required with prompt.template=file"):
        ctrlkit.get_controller("prompt", template="file")
    with pytest.raises(ctrlkit.OptionError, match="used only with prompt.template=file"):
        ctrlkit.get_controller("prompt", template_file=no_document)
    with pytest.raises(ctrlkit.OptionError, match="must be one of zero-shot, few-shot, hard, file"):
        ctrlkit.get_controller("prompt", template="soft")


def test_flatten_messages():
    messages = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Summarize:\nA B."},
                {"role": "assistant", "content": "A."}, {"role": "user", "content": "Summarize:\nC D."})
    assert flatten_messages(messages) == (
        "System: Be brief.\n\nUser: Summarize:\nA B.\n\nAssistant: A.\n\nUser: Summarize:\nC D.\n\nAssistant:")
    assert flatten_messages([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello,"}]) == (
        "User: Hi\n\nAssistant: Hello,")
    assert flatten_messages([]) == "Assistant:"
    assert flatten_messages(render({"topic": "health"})).endswith(f"Document:\n{DOCUMENT}\n\nAssistant:")


def test_system_message_from_text_or_file(tmp_path):
    example = Example("x", DOCUMENT, controls={"topic": "health"})
    expected_user = "Summarize the following document.\nRequirements:\n- Focus on the topic: health\n\n" \
                    f"Document:\n{DOCUMENT}"
    text = ctrlkit.get_controller("prompt", system="Be a summarizer.").apply(example, ModelInput(source=DOCUMENT))
    assert text.messages == ({"role": "system", "content": "Be a summarizer."},
                             {"role": "user", "content": expected_user})
    path = tmp_path / "system.txt"
    path.write_text("Résumé writer.\nSecond line.", encoding="utf-8")
    from_file = ctrlkit.get_controller("prompt", template="hard", system_file=str(path))
    path.write_text("changed after the controller was made", encoding="utf-8")  # read once
    assert from_file.apply(example, ModelInput(source=DOCUMENT)).messages == (
        {"role": "system", "content": "Résumé writer.\nSecond line."},
        {"role": "user", "content": f"Topic: health\nDocument: {DOCUMENT}"})


def test_template_and_system_files_together_write_every_message(tmp_path):
    system, template = tmp_path / "system.txt", tmp_path / "user.txt"
    system.write_text("SYSTEM WORDS", encoding="utf-8")
    template.write_text("About {topic}:\n{document}", encoding="utf-8")
    prompt = ctrlkit.get_controller("prompt", template="file", template_file=str(template), system_file=str(system))
    example = Example("x", DOCUMENT, controls={"topic": "health"})
    assert prompt.apply(example, ModelInput(source=DOCUMENT)).messages == (
        {"role": "system", "content": "SYSTEM WORDS"}, {"role": "user", "content": f"About health:\n{DOCUMENT}"})


def test_system_file_problems_name_the_file(tmp_path):
    missing = str(tmp_path / "absent.txt")
    with pytest.raises(ctrlkit.OptionError, match=f"^prompt system file '{re.escape(missing)}' cannot be read"):
        ctrlkit.get_controller("prompt", system_file=missing)
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ctrlkit.OptionError, match="binary.txt' is not UTF-8 text$"):
        ctrlkit.get_controller("prompt", system_file=str(binary))
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    with pytest.raises(ctrlkit.OptionError, match="empty.txt' is empty"):
        ctrlkit.get_controller("prompt", system_file=str(empty))
    with pytest.raises(ctrlkit.OptionError, match="both set the system message"):
        ctrlkit.get_controller("prompt", system="Hi.", system_file=str(empty))


@pytest.mark.parametrize("options, value, line", [
    ({}, 125, "- Length: about 125 words"),
    ({"length_as": "words"}, "short", "- Length: short"),
    ({"length_as": "bin"}, 75, "- Length: between 51 and 100 words"),
    ({"length_as": "bin"}, 100, "- Length: between 51 and 100 words"),
    ({"length_as": "bin"}, 101, "- Length: between 101 and 150 words"),
    ({"length_as": "bin"}, 25, "- Length: at most 50 words"),
    ({"length_as": "bin"}, 0, "- Length: at most 50 words"),
    ({"length_as": "bin"}, 225, "- Length: between 201 and 250 words"),
    ({"length_as": "bin", "length_top_bin": 4}, 225, "- Length: more than 200 words"),
    ({"length_as": "bin", "length_top_bin": 4}, 175, "- Length: between 151 and 200 words"),
    ({"length_as": "bin", "length_bin": 20}, 30, "- Length: between 21 and 40 words"),
    ({"length_as": "bin"}, "long", "- Length: long"),
    ({"length_as": "level"}, "short", "- Length: short"),
    ({"length_as": "level"}, 125, "- Length: 125"),
    # not a count of words: phrased as written, never "about nan words" nor a crash in the bin rule
    ({"length_as": "bin"}, "nan", "- Length: nan"),
    ({"length_as": "bin"}, "inf", "- Length: inf"),
    ({"length_as": "bin"}, "1e400", "- Length: 1e400"),
    ({}, float("nan"), "- Length: nan"),
    ({}, -60, "- Length: -60"),
])
def test_length_phrasing_option(options, value, line):
    assert user(render({"length": value}, **options)) == "\n".join(
        ["Summarize the following document.", "Requirements:", line, "", "Document:", DOCUMENT])


def test_length_phrasing_reaches_demonstrations_and_template_controls(tmp_path):
    prompt = ctrlkit.get_controller("prompt", template="few-shot", shots=1, length_as="bin")
    prompt.fit([Example("t", "Old news.", ["Old."], {"length": 60})], None)
    messages = prompt.apply(Example("x", DOCUMENT, controls={"length": 140}), ModelInput(source=DOCUMENT)).messages
    assert "- Length: between 51 and 100 words" in messages[1]["content"]
    assert "- Length: between 101 and 150 words" in messages[3]["content"]
    path = write(tmp_path, "{controls}\n{document}")
    filled = ctrlkit.get_controller("prompt", template="file", template_file=path, length_as="bin")
    assert user(filled.apply(Example("x", DOCUMENT, controls={"length": 140}), ModelInput(source=DOCUMENT)).messages) \
        == f"- Length: between 101 and 150 words\n{DOCUMENT}"


def test_length_bin_phrasing_agrees_with_the_length_metrics_bins():
    from ctrlkit_metrics.length import length_bin
    for words in range(0, 400, 7):
        line = user(render({"length": words}, length_as="bin")).split("\n")[2]
        bin_number = length_bin(words)
        assert line == ("- Length: at most 50 words" if bin_number == 0 else
                        f"- Length: between {50 * bin_number + 1} and {50 * bin_number + 50} words"), words


def test_hard_prompt_is_plain_text_on_a_seq2seq_backbone():
    seq2seq = ctrlkit.get_backbone("hf:never-loaded")
    assert seq2seq.flattens_messages
    assert not ctrlkit.get_backbone("openai:gpt-4o-mini").flattens_messages
    example = Example("x", DOCUMENT, controls={"topic": "health", "length": 60})
    hard = ctrlkit.get_controller("prompt", template="hard")
    hard.prepare(seq2seq)
    plain = hard.apply(example, ModelInput(source=DOCUMENT, guidance="g"))
    assert plain == ModelInput(source=f"Length: 60\nTopic: health\nDocument: {DOCUMENT}", guidance="g")
    assert seq2seq.texts([ModelInput(source=plain.source)]) == [f"Length: 60\nTopic: health\nDocument: {DOCUMENT}"]
    zero = ctrlkit.get_controller("prompt")  # the other forms stay messages (flattened by the backbone)
    zero.prepare(seq2seq)
    assert zero.apply(example, ModelInput(source=DOCUMENT)).messages[0] == {"role": "system", "content": SYSTEM}
    hard.prepare(ctrlkit.get_backbone("openai:gpt-4o-mini"))  # a chat backbone: the hard prompt as a message
    assert user(hard.apply(example, ModelInput(source=DOCUMENT)).messages) == (
        f"Length: 60\nTopic: health\nDocument: {DOCUMENT}")


def test_a_system_message_the_plain_hard_prompt_cannot_carry_is_warned_about(caplog):
    example = Example("x", DOCUMENT, controls={"length": 60})
    for options in ({"system": "Be brief."}, {}):
        hard = ctrlkit.get_controller("prompt", template="hard", **options)
        caplog.clear()
        with caplog.at_level("WARNING", logger="ctrlkit"):
            hard.prepare(ctrlkit.get_backbone("hf:never-loaded"))
            hard.prepare(ctrlkit.get_backbone("openai:gpt-4o-mini"))  # a chat backbone gets the system message
        warned = [record.getMessage() for record in caplog.records]
        assert warned == (["ctrlkit: controller 'prompt': option 'prompt.system' is not used: the hard prompt "
                           "reaches backbone 'hf' as plain text, without a system message"] if options else [])
    assert hard.apply(example, ModelInput(source=DOCUMENT)).messages[0] == {"role": "system", "content": SYSTEM}
