"""``--sample N``: a reproducible random draw of N examples (issue 16)."""

import json
import random

import pytest

from ctrlkit import Example
from ctrlkit.errors import OptionError
from ctrlkit.analyses.interference import interference
from ctrlkit.sampling import check_sample, draw_sample

from helpers import invoke_ctrlkit

EXAMPLES = [Example(id=f"e{i}", document=f"document {i}.", controls={"topic": f"t{i % 3}"}) for i in range(50)]


def _ids(examples):
    return [example.id for example in examples]


def test_the_draw_is_reproducible_without_duplicates_and_a_subset_in_the_data_order():
    drawn = draw_sample(EXAMPLES, 10, seed=3, dataset="d")
    ids = _ids(drawn)
    assert len(ids) == 10 and len(set(ids)) == 10
    assert set(ids) <= set(_ids(EXAMPLES))
    assert ids == sorted(ids, key=lambda name: int(name[1:]))  # kept in the data's order
    random.seed(99)  # the global generator (which the seed's other uses reset) plays no part
    assert _ids(draw_sample(EXAMPLES, 10, seed=3, dataset="d")) == ids
    assert _ids(draw_sample(EXAMPLES, 10, seed=4, dataset="d")) != ids
    assert _ids(draw_sample(EXAMPLES, 50, seed=3, dataset="d")) == _ids(EXAMPLES)  # all of them: every example


def test_every_example_is_drawn_about_equally_often():
    counts = {example.id: 0 for example in EXAMPLES}
    for seed in range(2000):
        for example in draw_sample(EXAMPLES, 10, seed=seed, dataset="d"):
            counts[example.id] += 1
    # each example is drawn with probability 10/50: 400 of 2000 expected, sd = sqrt(2000 * 0.2 * 0.8) ~ 18
    assert all(310 < count < 490 for count in counts.values()), counts


@pytest.mark.parametrize("sample, limit, message", [
    (0, None, "sample must be a whole number of at least 1, got 0"),
    (True, None, "sample must be a whole number of at least 1, got True"),
    (5, 5, "sample and limit cannot be given together: sample draws N random examples, limit takes the first N"),
])
def test_bad_sample_options_are_refused(sample, limit, message):
    with pytest.raises(OptionError) as refused:
        check_sample(sample, limit)
    assert str(refused.value) == message


def test_more_than_the_data_is_refused():
    with pytest.raises(OptionError, match=r"^sample 51 is more than the 50 usable examples of dataset 'd'$"):
        draw_sample(EXAMPLES, 51, seed=0, dataset="d")


def test_an_analysis_of_the_bundled_sample_uses_and_records_the_drawn_examples(tmp_path, monkeypatch):
    import ctrlkit.analyses.interference as module

    generated = []
    real_generate = module.generate

    def spy(steering, model, condition, *args):
        generated.append(_ids(condition))
        return real_generate(steering, model, condition, *args)

    monkeypatch.setattr(module, "generate", spy)
    report = interference(controller="tag", attributes=["topic"], metrics=["stas"], sample=10, seed=7,
                          out=str(tmp_path / "out"), cache=False)
    recorded = report["sample"]
    assert recorded["size"] == 10 and recorded["seed"] == 7 and recorded["drawn_from"] == 120
    assert len(set(recorded["ids"])) == 10
    assert generated[0] == recorded["ids"] and generated[1] == recorded["ids"]  # base and changed: those examples
    assert report["n_examples"] == 10 and report["config"]["sample"] == 10
    assert json.loads((tmp_path / "out" / "interference.json").read_text())["sample"] == recorded
    # the same seed and data draw the same examples whatever else the analysis changes
    other = interference(controller="tag", attributes=["topic"], metrics=["rouge"], sample=10, seed=7, cache=False)
    assert other["sample"]["ids"] == recorded["ids"]
    assert interference(controller="tag", attributes=["topic"], metrics=["rouge"], cache=False)["sample"] is None


def test_cli_records_the_sample_and_refuses_in_one_line(tmp_path):
    result = invoke_ctrlkit("analyze", "interference", "-c", "tag", "--attributes", "topic", "-m", "stas",
                            "--sample", "10", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    written = json.loads((tmp_path / "out" / "interference.json").read_text())
    assert written["sample"]["size"] == 10 and written["sample"]["seed"] == 0 and len(written["sample"]["ids"]) == 10
    assert written["n_examples"] == 10
    for extra, line in [(["--limit", "20"], "Error: sample and limit cannot be given together: sample draws N random "
                                            "examples, limit takes the first N"),
                        (["--sample", "121"], "Error: sample 121 is more than the 120 usable examples of dataset "
                                              "'sample'")]:
        options = extra if extra[0] == "--sample" else ["--sample", "10", *extra]
        refused = invoke_ctrlkit("analyze", "interference", "-c", "tag", "--attributes", "topic", "-m", "stas",
                                 *options, "-o", tmp_path / "refused")
        assert refused.returncode == 1
        assert refused.stderr.strip().splitlines() == [line]
        assert not (tmp_path / "refused").exists()


def test_run_draws_the_same_examples_as_interference_with_one_helper(tmp_path):
    import ctrlkit

    result = ctrlkit.run(metrics=["rouge"], sample=10, seed=7, out=str(tmp_path / "run"), cache=False)
    ids = [row["id"] for row in result.samples]
    analysed = interference(controller="tag", attributes=["topic"], metrics=["rouge"], sample=10, seed=7, cache=False)
    assert ids == analysed["sample"]["ids"]
    assert result.results["n_examples"] == 10 and result.results["config"]["sample"] == 10
    written = [json.loads(line)["id"] for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert written == ids


def test_run_cli_refuses_sample_with_limit_in_one_line(tmp_path):
    refused = invoke_ctrlkit("run", "--sample", "5", "--limit", "5", "-o", tmp_path / "refused")
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        "Error: sample and limit cannot be given together: sample draws N random examples, limit takes the first N"]
    assert not (tmp_path / "refused").exists()
