"""Sweep variants: the same component with other options as a row, a backbone or a dataset of its
own in one sweep; each cell runs as a standalone run with those options would, records what it ran,
and the folder sees a changed variant; a wrong variant is one line naming the file and the key."""

import json
import logging
from pathlib import Path

import pytest

import ctrlkit
from ctrlkit.sweeps.config import load_config
from ctrlkit.sweeps.sweep import sweep

from helpers.ccs_release import write_release
from helpers import invoke_ctrlkit


def _results(out: Path, row: dict) -> dict:
    return json.loads((out / row["run"] / "results.json").read_text())


def _predictions(out: Path, row: dict) -> list[str]:
    return [json.loads(line)["prediction"] for line in (out / row["run"] / "samples.jsonl").read_text().splitlines()]


TAGS = {"tag-3": {"of": "tag", "options": {"top_n": 3}}, "tag-200": {"of": "tag", "options": {"top_n": 200}}}


def test_controller_variants_are_rows_that_run_as_standalone_runs_with_their_options(tmp_path, private_cache):
    out = tmp_path / "s"
    rows = sweep(out=str(out), controllers=["none", "tag-3", "tag-200"], metrics=["stas", "rouge"], limit=8,
                 variants=TAGS, options={"tag": {"stop_words": False}})
    assert [row["controller"] for row in rows] == ["none", "tag-3", "tag-200"]
    assert [row["run"] for row in rows] == [f"cells/sample--extractive--{name}" for name in ("none", "tag-3", "tag-200")]
    for row, top_n in zip(rows[1:], (3, 200)):
        alone = ctrlkit.run(controller="tag", metrics=["stas", "rouge"], limit=8, baseline=None,
                            options={"tag": {"top_n": top_n, "stop_words": False}})
        assert row["metrics"] == alone.metrics
        assert _predictions(out, row) == [sample["prediction"] for sample in alone.samples]
        config = _results(out, row)["config"]
        assert config["controller"] == "tag" and config["options"]["tag"] == alone.results["config"]["options"]["tag"]
        assert config["variants"] == {"controller": {"name": row["controller"], "of": "tag",
                                                     "options": {"top_n": top_n}}}
    assert _predictions(out, rows[1]) != _predictions(out, rows[2])  # the option made a difference
    assert "variants" not in _results(out, rows[0])["config"]
    table = json.loads((out / "table.json").read_text())
    assert [row["controller"] for row in table["rows"]] == ["none", "tag-3", "tag-200"]
    assert [line.split("|")[3].strip() for line in _table_lines(out)[2:]] == [
        "none", "tag-3", "tag-200"]


def test_a_chain_variant_takes_options_per_link_and_a_backbone_variant_is_a_backbone(tmp_path, private_cache):
    out = tmp_path / "s"
    variants = {"both-5": {"of": "prepend+tag", "options": {"tag": {"top_n": 5}}},
                "short": {"of": "extractive", "options": {"max_words": 25}}}
    rows = sweep(out=str(out), controllers=["both-5"], backbones=["extractive", "short"], metrics=["stas"], limit=6,
                 variants=variants, options={"extractive": {"max_words": 80}})
    assert [(row["backbone"], row["controller"]) for row in rows] == [("extractive", "both-5"), ("short", "both-5")]
    for row, words in zip(rows, (80, 25)):
        config = _results(out, row)["config"]
        assert config["backbone"] == "extractive" and config["controller"] == "prepend+tag"
        assert config["options"]["extractive"]["max_words"] == words and config["options"]["tag"]["top_n"] == 5
        alone = ctrlkit.run(controller="prepend+tag", metrics=["stas"], limit=6, baseline=None,
                            options={"tag": {"top_n": 5}, "extractive": {"max_words": words}})
        assert row["metrics"] == alone.metrics
    assert set(_results(out, rows[1])["config"]["variants"]) == {"controller", "backbone"}
    assert max(len(p.split()) for p in _predictions(out, rows[1])) <= 25 < max(len(p.split())
                                                                               for p in _predictions(out, rows[0]))


def test_dataset_variants_read_one_folder_and_score_only_the_metrics_their_controls_feed(tmp_path, private_cache,
                                                                                         caplog):
    release = write_release(tmp_path / "ccs")
    out = tmp_path / "s"
    variants = {"ccs-all": {"of": "ccsbench", "options": {"subset": "compositional"}},
                "ccs-length": {"of": "ccsbench", "options": {"subset": "length"}}}
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        rows = sweep(out=str(out), controllers=["none"], datasets=["ccs-all", "ccs-length"], data=str(release),
                     metrics=["length", "sr"], variants=variants)
    assert "no example of dataset 'ccs-length' has a keywords control, so its cells do not score sr" in caplog.text
    assert [sorted(row["metrics"]) for row in rows] == [["length", "sr"], ["length"]]
    for row, subset in zip(rows, ("compositional", "length")):
        alone = ctrlkit.run(dataset="ccsbench", data=str(release), controller="none", baseline=None,
                            metrics=["length", "sr"] if subset == "compositional" else ["length"],
                            options={"ccsbench": {"subset": subset}})
        assert row["metrics"] == alone.metrics and row["dataset"] == f"ccs-{'all' if subset == 'compositional' else subset}"
        assert _results(out, row)["config"]["options"]["ccsbench"]["subset"] == subset
    assert _table_lines(out)[-1].endswith("| undefined |")  # no sr for the length subset
    recorded = json.loads((out / "sweep.json").read_text())
    assert recorded["settings"]["data"] == {"ccs-all": str(release), "ccs-length": str(release)}
    assert set(recorded["digests"]["data"]) == {"ccs-all", "ccs-length"}


def test_the_folder_resumes_with_more_variants_and_refuses_a_changed_one(tmp_path, private_cache):
    arguments = dict(out=str(tmp_path / "s"), controllers=["tag-3"], metrics=["stas"], limit=4, variants=TAGS)
    first = sweep(**arguments)
    assert [row["reused"] for row in sweep(**arguments)] == [True]
    arguments.update(controllers=["tag-3", "tag-9"], variants={**TAGS, "tag-9": {"of": "tag", "options": {"top_n": 9}}})
    assert [row["reused"] for row in sweep(**arguments)] == [True, False]
    changed = {**arguments["variants"], "tag-3": {"of": "tag", "options": {"top_n": 4}}}
    with pytest.raises(ctrlkit.CtrlkitError, match=r"holds a sweep with other settings \(variants\)"):
        sweep(**{**arguments, "variants": changed})
    again = sweep(**{**arguments, "variants": changed, "overwrite": True})
    assert [row["reused"] for row in again] == [False, False]
    assert _results(tmp_path / "s", again[0])["config"]["options"]["tag"]["top_n"] == 4
    # a cell whose results.json lacks the variant record (cut short before it was added) runs again
    results = tmp_path / "s" / first[0]["run"] / "results.json"
    recorded = json.loads(results.read_text())
    del recorded["config"]["variants"]
    results.write_text(json.dumps(recorded))
    assert [row["reused"] for row in sweep(**{**arguments, "variants": changed})] == [False, True]


BAD_VARIANTS = [
    ('controllers = ["tag"]\n[variants.tag]\nof = "tag"\n', "variants.tag", "'tag' is a registered controller"),
    ('controllers = ["x"]\n[variants.x]\nof = "promt"\n', "variants.x.of", "Unknown controller 'promt'"),
    ('controllers = ["x"]\n[variants.x]\nof = "tag"\noptions = { top_nn = 5 }\n', "variants.x.options",
     "Unknown option 'tag.top_nn'"),
    ('controllers = ["x"]\n[variants.x]\nof = "tag"\noptions = { top_n = "many" }\n', "variants.x.options",
     "option 'tag.top_n' expects int"),
    ('controllers = ["x"]\n[variants.x]\nof = "prepend+tag"\noptions = { top_n = 5 }\n', "variants.x.options.top_n",
     "names no link of the chain"),
    ('controllers = ["x"]\n[variants.x]\noptions = { top_n = 5 }\n', "variants.x.of", "is missing"),
    ('controllers = ["x"]\n[variants.x]\nof = "tag"\noption = { top_n = 5 }\n', "variants.x.option",
     "is not a key of a variant"),
    ('controllers = ["a+b"]\n[variants."a+b"]\nof = "tag"\n', "variants.a+b", "is not a variant's name"),
    ('[variants."few shot"]\nof = "tag"\n', "variants.few shot", "is not a variant's name"),
    ('[variants."ünï"]\nof = "tag"\n', "variants.ünï", "is not a variant's name: ASCII letters"),
    ('controllers = ["x+prepend"]\n[variants.x]\nof = "tag"\n', "controllers", "has the variant 'x' as a link"),
    ('controllers = ["none"]\nbaseline = "x"\n[variants.x]\nof = "tag"\n', "baseline", "names the variant 'x'"),
    ('controllers = ["x"]\ndatasets = ["x"]\n[variants.x]\nof = "tag"\n', "variants.x",
     "is named as a controller and as a dataset"),
    ('controllers = ["none"]\nbackbones = ["x"]\n[variants.x]\nof = "tag"\n', "variants.x.of",
     "Unknown backbone 'tag'"),
    ('controllers = ["none"]\n[variants.x]\nof = "nothing-at-all"\n', "variants.x.of", "is no registered"),
    ("variants = 3\n", "variants", "must be a table of variants"),
]


@pytest.mark.parametrize("text,key,message", BAD_VARIANTS, ids=[key for _, key, _ in BAD_VARIANTS])
def test_a_wrong_variant_is_one_line_naming_the_file_and_the_key(tmp_path, text, key, message):
    path = tmp_path / "sweep.toml"
    path.write_text(text)
    with pytest.raises(ctrlkit.ConfigurationError) as refused:
        load_config(path)
    shown = str(refused.value)
    assert "\n" not in shown and shown.startswith(f"{path}: setting '{key}") and message in shown, shown


def test_the_command_runs_variants_from_a_file_with_one_data_path_for_their_component(tmp_path, private_cache):
    release = write_release(tmp_path / "ccs", rows=3)
    path = tmp_path / "sweep.toml"
    path.write_text('controllers = ["none", "lead"]\nmetrics = ["length"]\ndatasets = ["ccs-len", "ccs-all"]\n'
                    '[variants.lead]\nof = "none"\n'
                    '[variants.ccs-len]\nof = "ccsbench"\noptions = { subset = "length" }\n'
                    '[variants.ccs-all]\nof = "ccsbench"\noptions = { subset = "compositional" }\n')
    result = invoke_ctrlkit("sweep", "--config", str(path), "--data", str(release), "-o", str(tmp_path / "out"),
                            env={"CTRLKIT_CACHE_DIR": str(private_cache)})
    assert result.returncode == 0, result.stderr
    rows = json.loads((tmp_path / "out" / "table.json").read_text())["rows"]
    assert [(row["dataset"], row["controller"]) for row in rows] == [
        ("ccs-len", "none"), ("ccs-len", "lead"), ("ccs-all", "none"), ("ccs-all", "lead")]
    assert rows[0]["metrics"] == rows[1]["metrics"]  # a variant with no options is its component


def test_an_option_set_on_the_command_line_wins_over_a_files_variants(tmp_path, private_cache):
    """--set tag.top_n=7 over a file whose variants set top_n: every variant's cell runs with 7, as a
    standalone run with 7 does, and records the variant without the option it no longer sets."""
    path = tmp_path / "sweep.toml"
    path.write_text('controllers = ["tag-3", "both-5"]\nmetrics = ["stas"]\nlimit = 4\n'
                    '[variants.tag-3]\nof = "tag"\noptions = { top_n = 3, stop_words = false }\n'
                    '[variants.both-5]\nof = "prepend+tag"\noptions = { tag = { top_n = 5 } }\n')
    out = tmp_path / "out"
    result = invoke_ctrlkit("sweep", "--config", str(path), "--set", "tag.top_n=7", "-o", str(out),
                            env={"CTRLKIT_CACHE_DIR": str(private_cache)})
    assert result.returncode == 0, result.stderr
    rows = json.loads((out / "table.json").read_text())["rows"]
    for row, controller, stop_words in zip(rows, ("tag", "prepend+tag"), (False, True)):
        alone = ctrlkit.run(controller=controller, metrics=["stas"], limit=4, baseline=None,
                            options={"tag": {"top_n": 7, "stop_words": stop_words}})
        assert _predictions(out, row) == [sample["prediction"] for sample in alone.samples]
        assert _results(out, row)["config"]["options"]["tag"]["top_n"] == 7
    assert _results(out, rows[0])["config"]["variants"]["controller"]["options"] == {"stop_words": False}
    assert _results(out, rows[1])["config"]["variants"]["controller"]["options"] == {"tag": {}}
    # a qualified key is the same component; a key for another kind leaves the variant's option
    from ctrlkit.sweeps.settings import overlay
    variants = load_config(path)["variants"]
    assert overlay({"controllers": ["tag-3"], "variants": variants}, {"options": {"controller:tag": {"top_n": 1}}}
                   )["variants"]["tag-3"]["options"] == {"stop_words": False}
    assert overlay({"controllers": ["tag-3"], "variants": variants}, {"options": {"metric:tag": {"top_n": 1}}}
                   )["variants"]["tag-3"]["options"] == {"top_n": 3, "stop_words": False}


class _KeyedModel(ctrlkit.Backbone):
    """A backbone that takes an API key and says the document's first sentence."""
    options = (ctrlkit.Option("api_key", str, "", "the key"), ctrlkit.Option("style", str, "plain", "unused"))

    def generate(self, inputs):
        return [model_input.source.split(". ")[0] + "." for model_input in inputs]


class _KeyedModels:
    @ctrlkit.hookimpl
    def register_backbones(self, register):
        register("keyed", _KeyedModel)


def test_a_key_in_a_variant_is_never_written_and_a_new_key_reuses_the_cell(tmp_path, private_cache,
                                                                           throwaway_plugins):
    throwaway_plugins(_KeyedModels(), "keyed-models")
    key = "sk-variant-0123456789"
    arguments = dict(out=str(tmp_path / "s"), controllers=["none"], backbones=["mine"], metrics=["rouge"], limit=2)
    rows = sweep(**arguments, variants={"mine": {"of": "keyed", "options": {"api_key": key, "style": "bold"}}})
    written = "".join(path.read_text() for path in (tmp_path / "s").rglob("*") if path.is_file())
    assert key not in written and '"api_key": "***"' in written
    assert _results(tmp_path / "s", rows[0])["config"]["variants"]["backbone"] == {
        "name": "mine", "of": "keyed", "options": {"api_key": "***", "style": "bold"}}
    again = sweep(**arguments, variants={"mine": {"of": "keyed", "options": {"api_key": "sk-other-98765432",
                                                                             "style": "bold"}}})
    assert again[0]["reused"]


def _table_lines(out):
    """The lines of table.md's table (the note under it left out)."""
    return [line for line in (out / "table.md").read_text().splitlines() if line.startswith("|")]
