"""The run's seed reaches the prompt controller's few-shot draw, and results.json records the seed
used and which system and template text a run read (issue 16)."""

import hashlib
import json
import random

import pytest
from click.testing import CliRunner

import ctrlkit
from ctrlkit.cli import cli

TRAIN = [ctrlkit.Example(f"t{i:02d}", f"Train document {i}.", [f"Summary {i}."], {"topic": f"topic{i}"})
         for i in range(12)]
TEST = [ctrlkit.Example(f"e{i}", f"Test document {i}.", [f"Reference {i}."],
                        {"topic": ("health", "sports")[i % 2]}) for i in range(4)]


class TwoSplits(ctrlkit.Dataset):
    """A train split to draw demonstrations from and a test split to run on."""

    splits = ("train", "test")
    default_split = "test"
    controls = ("topic",)

    def load(self, split):
        self.check_split(split)
        return list(TRAIN if split == "train" else TEST)


class ShownDocuments(ctrlkit.Backbone):
    """Answers with the documents of the demonstrations it was shown, joined by ``|``."""

    capabilities = frozenset({"text", "messages"})

    def generate(self, inputs):
        return ["|".join(m["content"].rsplit("\n", 1)[-1] for m in model_input.messages[1:-1] if m["role"] == "user")
                for model_input in inputs]


class Shout(ctrlkit.Controller):
    """A third-party controller written for the contract before ``use_seed``: ``apply`` only."""

    def apply(self, example, model_input):
        return model_input.replace(source=model_input.source.upper())


class Plugin:
    @ctrlkit.hookimpl
    def register_datasets(self, register):
        register("two-splits", TwoSplits)

    @ctrlkit.hookimpl
    def register_backbones(self, register):
        register("shown-documents", ShownDocuments)

    @ctrlkit.hookimpl
    def register_controllers(self, register):
        register("shout", Shout)


@pytest.fixture
def plugin(throwaway_plugins):
    throwaway_plugins(Plugin(), "prompt-seed-plugin")


def expected_draw(example, seed, shots=2):
    """Independently: sha256 of 'seed NUL id' (first 8 bytes, big-endian) seeds random.Random's
    sample of the train examples sorted by id."""
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{seed}\0{example.id}".encode()).digest()[:8], "big"))
    return "|".join(t.document for t in rng.sample(sorted(TRAIN, key=lambda t: t.id), shots))


def shown(run_seed, controller="prompt", **prompt):
    result = ctrlkit.run(dataset="two-splits", controller=controller, backbone="shown-documents", metrics=["rouge"],
                         baseline=None, seed=run_seed, cache=False,
                         options={"prompt": {"template": "few-shot", **prompt}})
    recorded = result.results["config"]["options"]["prompt"]["seed"]
    return {row["id"]: row["prediction"] for row in result.samples}, recorded


def test_the_runs_seed_draws_the_demonstrations(plugin):
    seven, recorded = shown(7)
    assert recorded == 7
    assert seven == {e.id: expected_draw(e, 7) for e in TEST}
    assert shown(7) == (seven, 7)
    eight, recorded = shown(8)
    assert recorded == 8 and eight == {e.id: expected_draw(e, 8) for e in TEST}
    assert all(seven[e.id] != eight[e.id] for e in TEST)  # each example's demonstrations change with the seed


def test_an_explicit_prompt_seed_wins_over_the_runs(plugin):
    for run_seed in (7, 8):
        assert shown(run_seed, seed=3) == ({e.id: expected_draw(e, 3) for e in TEST}, 3)


def test_the_cli_seed_and_set_reach_the_draw(plugin, tmp_path):
    def recorded(*arguments):
        out = tmp_path / "-".join(arguments)
        result = CliRunner().invoke(cli, ["run", "--dataset", "two-splits", "-c", "prompt", "-b", "shown-documents",
                                          "-m", "rouge", "--no-baseline", "--no-cache", "--set",
                                          "prompt.template=few-shot", *arguments, "-o", str(out)])
        assert result.exit_code == 0, result.output
        first = json.loads((out / "samples.jsonl").read_text(encoding="utf-8").splitlines()[0])
        return json.loads((out / "results.json").read_text(encoding="utf-8"))["config"], first

    config, first = recorded("--seed", "5")
    assert config["seed"] == 5 and config["options"]["prompt"]["seed"] == 5
    assert first["prediction"] == expected_draw(TEST[0], 5)
    config, first = recorded("--seed", "5", "--set", "prompt.seed=11")
    assert config["seed"] == 5 and config["options"]["prompt"]["seed"] == 11
    assert first["prediction"] == expected_draw(TEST[0], 11)


def test_a_controller_without_use_seed_still_runs_beside_prompt(plugin):
    chained, recorded = shown(7, controller="prompt+shout")
    assert recorded == 7 and chained == {e.id: expected_draw(e, 7) for e in TEST}
    alone = ctrlkit.run(dataset="two-splits", controller="shout", backbone="extractive", metrics=["rouge"],
                        baseline=None, seed=7, cache=False)
    assert [row["prediction"] for row in alone.samples] == [e.document.upper() for e in TEST]


def test_outside_a_run_the_seed_is_zero():
    prompt = ctrlkit.get_controller("prompt", template="few-shot")
    prompt.fit(TRAIN, None)
    example = TEST[0]
    messages = prompt.apply(example, ctrlkit.ModelInput(source=example.document)).messages
    assert "|".join(m["content"].rsplit("\n", 1)[-1] for m in messages[1:-1:2]) == expected_draw(example, 0)


def test_results_record_a_sha256_of_the_system_and_template_files(plugin, tmp_path):
    system, template = tmp_path / "system.txt", tmp_path / "user.txt"
    system.write_bytes("Résumé writer.\r\n".encode("utf-8"))
    template.write_bytes(b"About {topic}:\n{document}")
    result = ctrlkit.run(dataset="two-splits", controller="prompt", backbone="shown-documents", metrics=["rouge"],
                         baseline=None, cache=False, options={"prompt": {
                             "template": "file", "template_file": str(template), "system_file": str(system)}})
    options = result.results["config"]["options"]["prompt"]
    assert options["system_file"] == str(system) and options["template_file"] == str(template)
    assert options["system_file_digest"] == "sha256:" + hashlib.sha256("Résumé writer.\r\n".encode()).hexdigest()
    assert options["template_file_digest"] == "sha256:" + hashlib.sha256(b"About {topic}:\n{document}").hexdigest()
    assert options["system_file_digest"] != options["template_file_digest"]
    # read as text with universal newlines, as before
    prompt = ctrlkit.get_controller("prompt", system_file=str(system))
    assert prompt.system == "Résumé writer.\n"
    # no file, no digest
    assert "system_file_digest" not in ctrlkit.get_controller("prompt").recorded_options()


@pytest.mark.parametrize("seed", [7, 8])
def test_interference_gives_its_seed_to_the_draw(plugin, seed):
    from ctrlkit.analyses.interference import interference
    report = interference(dataset="two-splits", controller="prompt", backbone="shown-documents", attributes=["topic"],
                          metrics=["rouge"], seed=seed, cache=False,
                          options={"prompt": {"template": "few-shot", "controls": "topic"}})
    assert report["config"]["seed"] == seed and report["config"]["options"]["prompt"]["seed"] == seed


def test_list_shows_the_seed_as_unset_by_default():
    from ctrlkit.listing import describe
    from ctrlkit.plugins import get_registry
    assert "--set prompt.seed=INT  seed that, with each example's id, draws its few-shot demonstrations; unset: the " \
           "run's --seed (default: unset)" in describe("controllers", get_registry("controllers"))


def test_only_an_option_unset_by_default_takes_none():
    unset = ctrlkit.Option("seed", int, None, "unset: the component decides")
    assert unset.coerce(None, "x") is None and unset.coerce("4", "x") == 4
    with pytest.raises(ctrlkit.OptionError, match="option 'x.shots' expects int, got None"):
        ctrlkit.Option("shots", int, 2, "a number").coerce(None, "x")
