"""The focus judge's prompt as CCSBench's classification asks it: the user's template, a file of
worked examples (focus.examples_file, at $examples or after our instructions), and the label
alone as the answer; checked with a fake judge that keeps every prompt."""

import hashlib

import pytest

import ctrlkit
from ctrlkit import ConfigurationError, OptionError
from ctrlkit_metrics.focus import LABEL_SYSTEM, parse_label
from ctrlkit_metrics.judging import UnparseableAnswer
from helpers.prompt_judge import PromptJudge, write_text_file


@pytest.fixture(autouse=True)
def isolated_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))


EXAMPLES = "Summary: We run 40 trials.\nFocus: empirical\n\nSummary: We argue for a theory.\nFocus: conceptual\n"
ROWS = [{"id": "a", "document": "d", "controls": {"focus": "high"}},
        {"id": "b", "document": "d", "controls": {"focus": "low"}}]


def test_the_template_gets_the_examples_and_a_bare_label_is_read(tmp_path):
    template = "Empirical or conceptual?\n\n$examples\n\nSummary: $summary\nFocus:"
    paths = {"template_file": write_text_file(tmp_path, "t.txt", template), "examples_file": write_text_file(tmp_path, "e.txt", EXAMPLES)}
    metric = ctrlkit.get_metric("focus", **paths)
    judge = PromptJudge(lambda prompt: "Empirical." if "trials" in prompt.rsplit("Summary:", 1)[1] else " conceptual")
    metric.use_judge(judge)
    result = metric.compute(["We report trials.", "We theorise."], ROWS)
    shown = EXAMPLES.rstrip()
    assert judge.prompts == [
        [{"role": "user", "content": f"Empirical or conceptual?\n\n{shown}\n\nSummary: We report trials.\nFocus:"}],
        [{"role": "user", "content": f"Empirical or conceptual?\n\n{shown}\n\nSummary: We theorise.\nFocus:"}],
    ]
    assert result.per_example["correct"] == [1, 1] and result.corpus["f1_macro"] == 1.0
    recorded = metric.recorded_options()
    for option, text in (("template_file", template), ("examples_file", EXAMPLES)):
        assert recorded[f"{option}_digest"] == "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def test_examples_with_our_wording_follow_our_instructions(tmp_path):
    metric = ctrlkit.get_metric("focus", examples_file=write_text_file(tmp_path, "e.txt", EXAMPLES))
    judge = PromptJudge(lambda prompt: '{"label": "empirical"}')
    metric.use_judge(judge)
    metric.compute(["We report trials."], ROWS[:1])
    assert judge.prompts == [[
        {"role": "system", "content": f"{LABEL_SYSTEM}\n\nWorked examples:\n{EXAMPLES.rstrip()}"},
        {"role": "user", "content": "Summary:\nWe report trials."}]]


@pytest.mark.parametrize("options, error", [
    ({"template_file": "Label: $summary\n$examples"},
     "^focus.template_file file '.*' uses \\$examples, which focus.examples_file fills; set it or take the "
     "placeholder out$"),
    ({"template_file": "Label: $summary", "examples_file": EXAMPLES},
     "^focus.examples_file file '.*': no placeholder \\$examples in focus.template_file to show the examples at$"),
    ({"examples_file": EXAMPLES, "labeller": "classifier", "classifier": "c.json"},
     "^metric 'focus': focus.examples_file is the judge's prompt; it is not used with focus.labeller=classifier$"),
])
def test_examples_misconfigurations_are_one_line(options, error, tmp_path):
    given = {name: write_text_file(tmp_path, f"{name}.txt", value) if name.endswith("_file") else value
             for name, value in options.items()}
    with pytest.raises((OptionError, ConfigurationError), match=error) as raised:
        ctrlkit.get_metric("focus", **given)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("answer, label", [
    ("empirical", "empirical"), ("Conceptual", "conceptual"), (" EMPIRICAL.\n", "empirical"),
    ("Focus: conceptual", "conceptual"), ("The focus is: empirical.", "empirical"),
    ('{"label": "Conceptual"}', "conceptual"), ('Here:\n```json\n{"label": "empirical"}\n```', "empirical"),
])
def test_a_label_alone_or_in_json_is_read(answer, label):
    assert parse_label(answer) == label


@pytest.mark.parametrize("answer", ["empirical or conceptual", "mixed", "empirical, I think", "Empirical..",
                                    ": empirical", "A label longer than twenty letters: empirical", ""])
def test_anything_else_is_unparseable(answer):
    with pytest.raises(UnparseableAnswer):
        parse_label(answer)
