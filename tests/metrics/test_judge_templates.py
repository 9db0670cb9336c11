"""Judge prompts from user files (fm.*_template_file and fm.*_system_file, focus.template_file and
focus.system_file): rendered exactly, checked before any judge call, recorded by SHA-256."""

import hashlib
import json

import pytest

import ctrlkit
from ctrlkit import OptionError
from ctrlkit_metrics.fm_prompts import (RATE_SYSTEM, RUBRICS, extraction_prompt, facet_rating_prompt, rating_prompt,
                                       vanilla_prompt)
from ctrlkit_metrics.focus import label_prompt
from helpers.prompt_judge import PromptJudge, write_text_file


@pytest.fixture(autouse=True)
def isolated_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))


EXTRACT = 'Split into facets.\nText: $text\nAnswer {"background": "...", "method": "...", ' \
          '"result": "...", "conclusion": "..."} and pay $$5.'
RATE = "Rate ${facet_names}.\n$facets\nAnswer as JSON {\"background\": 3}."
FACETS = {"background": "Bg.", "method": "", "result": "Res.", "conclusion": ""}


def test_fm_templates_reach_the_judge_exactly_and_are_recorded(tmp_path):
    extract = write_text_file(tmp_path, "extract.txt", EXTRACT)
    rate = write_text_file(tmp_path, "rate.txt", RATE)
    metric = ctrlkit.get_metric("fm", extract_template_file=extract, rate_template_file=rate)

    def answer(prompt):
        return json.dumps(FACETS) if prompt.startswith("Split") else '{"background": 3, "result": 2}'

    judge = PromptJudge(answer)
    metric.use_judge(judge)
    result = metric.compute(["Sum."], [{"id": "a", "document": "d", "references": ["Ref."]}])
    assert result.per_example["fm"] == [pytest.approx((0.1 * 3 / 3 + 0.3 * 2 / 4) / 0.4)]
    expected_extract = ('Split into facets.\nText: {}\nAnswer {{"background": "...", "method": "...", '
                        '"result": "...", "conclusion": "..."}} and pay $5.')
    blocks = "[background]\nReference: Bg.\nGenerated: Bg.\n\n[result]\nReference: Res.\nGenerated: Res."
    assert sorted(judge.prompts, key=str) == sorted([
        [{"role": "user", "content": expected_extract.format("Ref.")}],
        [{"role": "user", "content": expected_extract.format("Sum.")}],
        [{"role": "user", "content": f"Rate background, result.\n{blocks}\nAnswer as JSON {{\"background\": 3}}."}],
    ], key=str)
    assert metric.options["extract_template_file"] == extract
    recorded = metric.recorded_options()
    assert recorded["extract_template_file_digest"] == "sha256:" + hashlib.sha256(EXTRACT.encode()).hexdigest()
    assert recorded["rate_template_file_digest"] == "sha256:" + hashlib.sha256(RATE.encode()).hexdigest()


def test_focus_template_reaches_the_judge_and_the_run_records_its_digest(tmp_path):
    text = 'Is this empirical or conceptual?\n$summary\nReply {"label": "empirical"} or {"label": "conceptual"}'
    template = write_text_file(tmp_path, "focus.txt", text)
    metric = ctrlkit.get_metric("focus", template_file=template)
    judge = PromptJudge(lambda prompt: '{"label": "empirical"}')
    metric.use_judge(judge)
    result = metric.compute(["We measure."], [{"id": "a", "document": "d", "controls": {"focus": "high"}}])
    assert result.per_example["correct"] == [1]
    assert judge.prompts == [[{"role": "user", "content": text.replace("$summary", "We measure.")}]]
    assert metric.recorded_options()["template_file_digest"] == "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_the_default_prompts_are_pinned():
    """The digests of the default prompts: judge answers are cached by the exact messages, so a
    change of wording must be deliberate. Extraction, focus and vanilla are worded as before
    templates existed (their cached answers stay valid); the rating prompts changed with the
    paper's rating levels (issue 37), so their answers are asked afresh."""
    reference = {"background": "Bg {x} $y", "method": "", "result": "Res", "conclusion": "Con"}
    summary = {"background": "", "method": "M", "result": "R2", "conclusion": "C2"}
    unchanged = [extraction_prompt("An abstract with {braces} and $dollar."), label_prompt("A summary."),
                 vanilla_prompt("R", "S")]
    rating = [rating_prompt(reference, summary), facet_rating_prompt("method", "ref", "sum")]
    assert hashlib.sha256(json.dumps(unchanged, sort_keys=True).encode()).hexdigest() == \
        "7425a71755844b02d33f88d5ab0a8a49135605fa65b908b773ed8e1e0a70c32f"
    assert hashlib.sha256(json.dumps(rating, sort_keys=True).encode()).hexdigest() == \
        "d23cdc2498fc322a5bb39e038be9b571850d0424ec0a5d27573e902eb6bb0420"
    assert all(prompt[0]["role"] == "system" for prompt in unchanged + rating)
    assert ctrlkit.get_metric("fm").options == {
        "retries": 2, "mode": "facets", "rating": "joint", "extract_template_file": "", "extract_system_file": "",
        "rate_template_file": "", "rate_system_file": "", "rate_template_file_3": "", "rate_template_file_4": "",
        "rate_examples_file_3": "", "rate_examples_file_4": "", "vanilla_template_file": "",
        "vanilla_system_file": ""}


def test_a_system_file_and_a_template_write_both_messages(tmp_path):
    system = write_text_file(tmp_path, "system.txt", "You label focus. The summary: $summary")
    template = write_text_file(tmp_path, "user.txt", "Label this: $summary")
    metric = ctrlkit.get_metric("focus", system_file=system, template_file=template)
    judge = PromptJudge(lambda prompt: '{"label": "conceptual"}')
    metric.use_judge(judge)
    metric.compute(["We argue."], [{"id": "a", "document": "d", "controls": {"focus": "low"}}])
    assert judge.prompts == [[{"role": "system", "content": "You label focus. The summary: We argue."},
                              {"role": "user", "content": "Label this: We argue."}]]
    assert set(metric.recorded_options()) >= {"system_file_digest", "template_file_digest"}


def test_the_rubric_is_worded_alike_in_both_rating_modes():
    """Each facet's per-facet prompt carries the lines its scale has in the joint prompt, and asks
    for the number alone, as the paper's prompts do."""
    for facet, scale in {"background": 3, "method": 4, "result": 4, "conclusion": 3}.items():
        system = facet_rating_prompt(facet, "ref", "sum")[0]["content"]
        joint = RATE_SYSTEM.split(f"from 1 to {scale}:\n", 1)[1].split("\n\n", 1)[0]
        assert joint == RUBRICS[scale] and joint.startswith(f"{scale} = ")
        assert f"\n{joint}\n" in system and f"from 1 to {scale}" in system
        assert system.endswith("Answer with the number alone.")
    assert vanilla_prompt("R", "S")[1]["content"] == "Reference abstract:\nR\n\nGenerated abstract:\nS"


def test_the_rubric_has_the_papers_levels():
    """The paper's meanings (Chen et al.; our words): on 1-3 leniency at 3, "not mentioned" at
    2 and contradiction at 1; on 1-4 minor omissions at 4, important ones at 3, "not mentioned"
    at 2, contradiction at 1. One line per level, top first."""
    levels = {scale: [line.split(" = ", 1) for line in text.splitlines()] for scale, text in RUBRICS.items()}
    assert {scale: [int(number) for number, _ in lines] for scale, lines in levels.items()} == {
        3: [3, 2, 1], 4: [4, 3, 2, 1]}
    three, four = ({int(n): meaning for n, meaning in lines} for lines in (levels[3], levels[4]))
    assert "leniently" in three[3] and "does not mention" in three[2] and "goes against" in three[1]
    assert "nothing relevant" in three[1]
    assert "minor details" in four[4] and "important information" in four[3]
    assert "does not mention" in four[2] and four[1].startswith("goes against")
    assert "partly" not in RUBRICS[3] + RUBRICS[4]  # the old rubric's "partly conveys" at 2


@pytest.mark.parametrize("metric, option, text, error", [
    ("fm", "extract_template_file", "", "is empty"),
    ("fm", "extract_template_file", " \n", "is empty"),
    ("fm", "extract_template_file", "No placeholder here.", "lacks placeholder $text, which the judge needs"),
    ("fm", "extract_template_file", "$text and $summary", "uses unknown placeholder $summary; known: $text"),
    ("fm", "extract_template_file", "$text\ncosts $5", "line 2: a '$' that starts no placeholder; write $$"),
    ("fm", "rate_template_file", "Rate $facet_names.", "lacks placeholder $facets"),
    ("fm", "rate_template_file", "${facets} $Facets", "uses unknown placeholder $Facets; known: $facets, "
                                                      "$facet_names"),
    ("focus", "template_file", "Label it: $text", "uses unknown placeholder $text; known: $summary"),
    ("focus", "template_file", "Label it.", "lacks placeholder $summary"),
])
def test_a_bad_template_is_one_line_naming_file_and_placeholder_before_any_call(metric, option, text, error,
                                                                                tmp_path):
    path = write_text_file(tmp_path, "template.txt", text)
    with pytest.raises(OptionError) as raised:
        ctrlkit.get_metric(metric, **{option: path})
    message = str(raised.value)
    assert message.startswith(f"{metric}.{option} file '{path}'") and error in message and "\n" not in message


def test_an_unreadable_or_non_utf8_template_is_refused(tmp_path):
    latin = tmp_path / "latin.txt"
    latin.write_bytes("$summary caf\u00e9".encode("latin-1"))
    with pytest.raises(OptionError, match=r"^focus.template_file file '.*latin.txt' is not UTF-8 text$"):
        ctrlkit.get_metric("focus", template_file=str(latin))
    missing = tmp_path / "missing.txt"
    with pytest.raises(OptionError, match=r"^fm.rate_template_file file '.*missing.txt' cannot be read: "):
        ctrlkit.get_metric("fm", rate_template_file=str(missing))
    with pytest.raises(OptionError, match="cannot be read"):
        ctrlkit.get_metric("fm", rate_template_file=str(tmp_path))  # a folder


ASKED = []


class CountingJudge(ctrlkit.Backbone):
    """A registered judge (``--judge counting``) that labels everything empirical, keeping each prompt."""

    capabilities = frozenset({"text", "messages"})

    def generate(self, inputs):
        ASKED.extend(model_input.messages[-1]["content"] for model_input in inputs)
        return ['{"label": "empirical"}' for _ in inputs]


def test_a_run_checks_the_template_before_the_judge_is_asked_and_records_its_digest(tmp_path, throwaway_plugins):
    """Through ctrlkit.run, as the CLI goes: a bad template stops the run with the judge never
    asked; a good one is what the judge gets, and results.json records its path and digest."""

    class Plugin:
        @ctrlkit.hookimpl
        def register_backbones(self, register):
            register("counting", CountingJudge)

    throwaway_plugins(Plugin(), "counting-judge")
    ASKED.clear()
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"id": "a", "document": "Doc.", "controls": {"focus": "high"}}) + "\n",
                    encoding="utf-8")

    def run(template):
        return ctrlkit.run(dataset="jsonl", data=str(data), backbone="extractive", metrics=["focus"], baseline=None,
                           judge="counting", options={"focus": {"template_file": template}}, out=tmp_path / "out")

    with pytest.raises(OptionError, match="lacks placeholder \\$summary"):
        run(write_text_file(tmp_path, "bad.txt", "no placeholder"))
    assert ASKED == []
    good = write_text_file(tmp_path, "good.txt", "Label: $summary")
    result = run(good)
    assert ASKED == ["Label: Doc."]
    recorded = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))["config"]["options"]
    assert recorded["focus"]["template_file"] == good
    assert recorded["focus"]["template_file_digest"] == "sha256:" + hashlib.sha256(b"Label: $summary").hexdigest()
    assert result.metrics["focus"]["accuracy"] == 1.0


def test_a_template_with_the_classifier_labeller_is_refused(tmp_path):
    template = write_text_file(tmp_path, "focus.txt", "$summary")
    with pytest.raises(ctrlkit.ConfigurationError, match="focus.template_file is the judge's prompt"):
        ctrlkit.get_metric("focus", template_file=template, labeller="classifier", classifier="c.json")


def test_a_pipe_or_an_over_large_file_is_refused_in_one_line_without_waiting(tmp_path):
    import os

    from ctrlkit.files import MAX_TEXT_FILE_BYTES, read_text_file

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)  # opening it would wait for a writer forever
    with pytest.raises(OptionError, match=r"^prompt system file '.*pipe' is not a regular file$"):
        ctrlkit.get_controller("prompt", system_file=str(pipe))
    huge = tmp_path / "huge.txt"
    huge.write_bytes(b"a" * (MAX_TEXT_FILE_BYTES + 1))
    with pytest.raises(OptionError, match=r"^fm.rate_template_file file '.*huge.txt' is larger than 1024 KiB"):
        ctrlkit.get_metric("fm", rate_template_file=str(huge))
    largest = tmp_path / "largest.txt"
    largest.write_bytes(b"a" * MAX_TEXT_FILE_BYTES)
    assert len(read_text_file(largest, "x")[0]) == MAX_TEXT_FILE_BYTES
