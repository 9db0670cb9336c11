import pytest

import ctrlkit
from ctrlkit.errors import OptionError, UnknownComponentError
from ctrlkit.options import Option, parse_assignments, resolve_options

from helpers import invoke_ctrlkit


def test_unknown_controller_gives_one_line_with_suggestions(tmp_path):
    result = invoke_ctrlkit("run", "--controller", "tga", cwd=tmp_path)  # a default runs/ folder would land there
    assert result.returncode != 0
    assert result.stderr.strip() == "Error: Unknown controller 'tga'. Did you mean: tag? Available: embed, guidance, length, none, prepend, prompt, soft-prefix, tag"
    assert result.stdout == ""


def test_unknown_metric_from_python_is_a_key_error():
    with pytest.raises(KeyError) as raised:
        ctrlkit.get_metric("stsa")
    assert isinstance(raised.value, UnknownComponentError)
    assert str(raised.value) == ("Unknown metric 'stsa'. Did you mean: stas, stats? "
                                 "Available: bertscore, cc, cer, entity, fm, focus, length, readability, rouge, sr, stas, "
                                 "stats")


def test_options_from_python_keywords_and_from_set():
    assert ctrlkit.get_controller("tag", top_n=50).options == {"top_n": 50, "stop_words": True}
    assert parse_assignments(["tag.top_n=50", "rouge.use_stemmer=false"]) == {
        "tag": {"top_n": "50"}, "rouge": {"use_stemmer": "false"}}
    assert ctrlkit.get_metric("rouge", use_stemmer="false").options["use_stemmer"] is False


def test_unknown_option_lists_the_valid_ones():
    with pytest.raises(OptionError, match=r"Unknown option 'tag.top_m'. Valid options of tag: top_n, stop_words"):
        ctrlkit.get_controller("tag", top_m=5)


@pytest.mark.parametrize("value, message", [
    ("many", "expects int, got 'many'"),
    (True, "expects int, got True"),
    (2.5, "expects int, got 2.5"),
])
def test_option_values_are_type_checked(value, message):
    with pytest.raises(OptionError, match=message):
        resolve_options("tag", (Option("top_n", int, 100, ""),), {"top_n": value})


def test_choices_are_enforced():
    with pytest.raises(OptionError, match="must be one of none, english"):
        ctrlkit.get_vectorizer("tfidf", stop_words="french")


@pytest.mark.parametrize("assignment", ["tag.top_n", "top_n=5", ".x=1", "tag.=1"])
def test_malformed_set_is_refused(assignment):
    with pytest.raises(OptionError, match="--set expects COMPONENT.OPTION=VALUE"):
        parse_assignments([assignment])


def test_set_for_a_component_not_in_the_run_is_refused_on_the_command_line(tmp_path):
    result = invoke_ctrlkit("run", "--controller", "tag", "--metric", "stas", "--set", "rouge.use_stemmer=false",
                            cwd=tmp_path)
    assert result.returncode != 0
    assert "no component named 'rouge' in this run" in result.stderr
    assert "Traceback" not in result.stderr


def test_set_reaches_a_vectorizer():
    result = ctrlkit.run(controller="none", metrics=["stas"], baseline=None, limit=4,
                         options={"tfidf": {"sublinear_tf": True}})
    assert result.results["config"]["options"]["tfidf"]["sublinear_tf"] is True
