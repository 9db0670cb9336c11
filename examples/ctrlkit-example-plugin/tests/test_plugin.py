"""The example plugin's own tests: hand-computed values, and the contracts ctrlkit.testing checks."""

from types import SimpleNamespace

import pytest

from ctrlkit import Backbone, ConfigurationError, Example, ModelInput, OptionError
from ctrlkit.testing import check_controller, check_metric
from ctrlkit_example_plugin.length_code import LengthCode
from ctrlkit_example_plugin.novelty import Novelty

DOCUMENT = "The cat sat on the mat. It was warm."


class RecordingBackbone(Backbone):
    """Remembers the special tokens a controller registers."""

    def __init__(self):
        super().__init__()
        self.tokens = []

    def add_special_tokens(self, tokens):
        self.tokens.extend(tokens)


def _length(value, **options) -> str:
    controller = LengthCode(**options)
    controller.use_dataset(SimpleNamespace(length_levels={"short": 30, "long": 180}))
    return controller.apply(Example("a", DOCUMENT, controls={"length": value}), ModelInput(DOCUMENT)).source


@pytest.mark.parametrize("words, code", [(0, 0), (1, 0), (50, 0), (51, 1), (100, 1), (101, 2), (450, 8),
                                         (451, 9), (500, 9), (501, 9), (10_000, 9), ("120", 2), (75.5, 1)])
def test_words_give_their_50_word_bin(words, code):
    assert _length(words) == f"<len_{code}> {DOCUMENT}"


def test_a_bin_is_its_own_code_and_clipped_to_the_last():
    assert _length(3, unit="bin") == f"<len_3> {DOCUMENT}"
    assert _length("0", unit="bin") == f"<len_0> {DOCUMENT}"
    assert _length(12, unit="bin") == f"<len_9> {DOCUMENT}"
    assert _length(12, unit="bin", max_bins=20) == f"<len_12> {DOCUMENT}"
    assert _length(700, max_bins=3) == f"<len_2> {DOCUMENT}"


def test_a_level_is_mapped_to_words_by_the_dataset():
    assert _length("short") == f"<len_0> {DOCUMENT}"
    assert _length("long") == f"<len_3> {DOCUMENT}"
    assert _length("long", unit="bin") == f"<len_3> {DOCUMENT}"


@pytest.mark.parametrize("value, message", [
    ("medium", r"requests length 'medium', which is neither a number nor a level of the dataset "
               r"\(known: short, long\)"),
    (-5, "requests length -5; expected words, a bin or a level"),
    (True, "requests length True"),
    (float("inf"), "requests length inf"),
])
def test_a_bad_request_is_refused_naming_the_example(value, message):
    with pytest.raises(ConfigurationError, match="example 'a' " + message):
        _length(value)


def test_a_fractional_bin_is_refused():
    with pytest.raises(ConfigurationError, match=r"requests bin 1.5, which is not a whole number"):
        _length(1.5, unit="bin")


def test_max_bins_must_be_positive():
    with pytest.raises(OptionError, match="max_bins"):
        LengthCode(max_bins=0)


def test_prepare_registers_every_code_as_a_special_token():
    backbone = RecordingBackbone()
    LengthCode(max_bins=4).prepare(backbone)
    assert backbone.tokens == ["<len_0>", "<len_1>", "<len_2>", "<len_3>"]


def test_length_code_conforms():
    examples = [Example("words", DOCUMENT, controls={"length": 120}),
                Example("level", DOCUMENT, controls={"length": "short"}),
                Example("string", DOCUMENT, controls={"length": "700"})]
    controller = LengthCode()
    controller.use_dataset(SimpleNamespace(length_levels={"short": 30}))
    check_controller(controller, examples=examples)
    check_controller(controller, examples=examples, backbone=RecordingBackbone())


def _novelty(predictions, documents, n=2):
    examples = [Example(str(i), document) for i, document in enumerate(documents)]
    return Novelty(n=n).compute(predictions, examples)


def test_novel_bigrams_by_hand():
    # source bigrams: the cat, cat sat, sat on, on the, the mat, mat it, it was, was warm
    result = _novelty(["The cat sat on a mat.", "Dogs bark.", "THE CAT, sat!"], [DOCUMENT] * 3)
    # "on a" and "a mat" are new: 2 of 5; "dogs bark": 1 of 1; case and punctuation are ignored: 0 of 2
    assert result.per_example == {"novel": [0.4, 1.0, 0.0]}
    assert result.corpus == {"novel": pytest.approx(1.4 / 3), "undefined": 0.0}


def test_every_occurrence_counts():
    # the cat (old), cat the (new), the cat (old): 1 of 3, not 1 of the 2 distinct bigrams
    assert _novelty(["the cat the cat"], [DOCUMENT]).per_example["novel"] == [pytest.approx(1 / 3)]


def test_unigrams_by_hand():
    # "a" is the one new word of six
    assert _novelty(["The cat sat on a mat."], [DOCUMENT], n=1).per_example["novel"] == [pytest.approx(1 / 6)]


def test_a_summary_shorter_than_n_is_undefined_not_scored():
    result = _novelty(["Cat.", "", "the cat sat on a mat"], [DOCUMENT] * 3)
    assert result.per_example == {"novel": [None, None, 0.4]}
    assert result.corpus == {"novel": 0.4, "undefined": 2.0}
    assert _novelty(["Cat."], [DOCUMENT]).corpus == {"novel": None, "undefined": 1.0}


def test_novelty_conforms():
    check_metric(Novelty())
    check_metric(Novelty(n=3), predictions=["Cat.", "The cat sat on a warm mat."],
                 examples=[Example("short", DOCUMENT), Example("long", DOCUMENT)])
