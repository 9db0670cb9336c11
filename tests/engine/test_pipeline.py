import json

import pytest

import ctrlkit
from ctrlkit.bootstrap import groups_of
from ctrlkit import ConfigurationError

from helpers import invoke_ctrlkit, run_ctrlkit, shared_file


@pytest.fixture(scope="module")
def tag_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    return out, ctrlkit.run(controller="tag", metrics=["stas", "rouge"], out=str(out), seed=3)


def test_results_json_records_config_versions_scores_and_timings(tag_run):
    out, result = tag_run
    results = json.loads((out / "results.json").read_text())
    assert results == result.results
    assert results["config"]["controller"] == "tag" and results["config"]["baseline"] == "none"
    assert results["config"]["seed"] == 3 and results["config"]["dataset"] == "sample"
    assert results["config"]["options"]["tag"] == {"top_n": 100, "stop_words": True}
    assert results["config"]["options"]["tfidf"]["stop_words"] == "none"
    assert set(results["versions"]["plugins"]) == {"ctrlkit-controllers", "ctrlkit-metrics", "ctrlkit-datasets"}
    assert results["versions"]["ctrlkit"] == "0.1.0"
    assert results["n_examples"] == 120
    assert set(results["metrics"]) == {"stas", "rouge"}
    assert set(results["metrics"]["rouge"]) == {"rouge1", "rouge2", "rougeL", "rougeLsum"}
    assert {"load_s", "topic_space_s", "generate_s", "score_s", "baseline_generate_s", "total_s"} <= set(
        results["timings"])
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "samples.jsonl"]  # no temporary files left
    assert (out / "results.json").stat().st_mode & 0o044 == 0o044  # readable by others, as a normal file is


def test_samples_jsonl_has_one_line_per_example_with_nested_scores(tag_run):
    out, result = tag_run
    lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert lines == result.samples and len(lines) == 120
    first = lines[0]
    assert set(first) == {"id", "controls", "references", "group", "prediction", "scores", "baseline"}
    dataset = ctrlkit.get_dataset("sample")
    examples = {example.id: example for example in dataset.load("test")}
    assert all(line["references"] == examples[line["id"]].references for line in lines)
    assert [line["group"] for line in lines] == groups_of([examples[line["id"]] for line in lines], dataset).tolist()
    assert len({line["group"] for line in lines}) < len(lines)  # the sample's examples share documents
    assert set(first["scores"]) == {"stas", "rouge"} and set(first["scores"]["stas"]) == {"stas"}
    mean = sum(line["scores"]["stas"]["stas"] for line in lines) / len(lines)
    assert mean == pytest.approx(result.metrics["stas"]["stas"])


def test_tag_steers_toward_the_requested_topic_on_the_sample(tag_run):
    _, result = tag_run
    baseline = result.results["baseline"]["metrics"]
    assert result.metrics["stas"]["stas"] > baseline["stas"]["stas"] + 0.05
    assert result.metrics["rouge"]["rouge1"] > baseline["rouge"]["rouge1"]
    for sample in result.samples[:10]:
        assert "[TAG]" not in sample["prediction"]


def test_the_cli_run_gives_the_library_run(tag_run, tmp_path):
    _, library = tag_run
    cli = run_ctrlkit("run", "--controller", "tag", "--metric", "stas", "--metric", "rouge", "--seed", "3",
                      "--out", str(tmp_path / "cli"))
    assert cli.returncode == 0, cli.stderr
    written = json.loads((tmp_path / "cli" / "results.json").read_text())
    assert written["metrics"] == library.metrics
    assert written["intervals"] == library.results["intervals"] and written["paired"] == library.results["paired"]
    header, rule, first = cli.stdout.splitlines()[:3]
    assert header.split() == ["metric", "tag", "none", "(baseline)", "difference"]
    stas, baseline_stas = library.metrics["stas"]["stas"], library.results["baseline"]["metrics"]["stas"]["stas"]
    run, base = library.results["intervals"]["stas"]["stas"], library.results["baseline"]["intervals"]["stas"]["stas"]
    paired = library.results["paired"]["stas"]["stas"]
    assert first.split() == [
        "stas", f"{stas:.4f}", f"[{run['low']:.4f},", f"{run['high']:.4f}]", f"{baseline_stas:.4f}",
        f"[{base['low']:.4f},", f"{base['high']:.4f}]", f"{stas - baseline_stas:+.4f}", f"[{paired['low']:+.4f},",
        f"{paired['high']:+.4f}]",
        "p<=0.001" if paired["p"] == 1 / 1001 else f"p={paired['p']:.3g}"]  # at the floor of 1000 swaps: a bound


def test_a_run_without_baseline_or_output_folder(tmp_path):
    result = ctrlkit.run(controller="prepend", metrics=["stas"], baseline=None, limit=10)
    assert result.results["baseline"] is None and result.results["n_examples"] == 10
    assert "baseline" not in result.samples[0]
    assert result.samples[0]["controls"] == {"topic": result.samples[0]["id"].split(":")[1]}
    assert "(baseline)" not in result.table()


def test_mismatches_are_caught_before_any_work(tmp_path):
    data = tmp_path / "plain.jsonl"
    data.write_text('{"document": "One. Two."}\n{"document": "Three.", "references": "Three."}\n')
    with pytest.raises(ConfigurationError, match=r"controller 'tag' reads control 'topic', but no example "
                                                 r"of dataset 'jsonl' has it"):
        ctrlkit.run(dataset="jsonl", data=str(data), controller="tag", metrics=["rouge"])
    with pytest.raises(ConfigurationError, match=r"metric 'rouge' needs references, but example '1' of dataset"):
        ctrlkit.run(dataset="jsonl", data=str(data), metrics=["rouge"])


def test_topics_file_defines_the_topics_for_a_plain_dataset(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text(
        '{"document": "The coach praised the players. Shares fell at the bank.", "controls": {"topic": "sports"}}\n'
        '{"document": "Investors sold shares. The team won the match.", "controls": {"topic": "money"}}\n')
    with pytest.raises(ConfigurationError, match="supplies no topic documents; pass --topics FILE"):
        ctrlkit.run(dataset="jsonl", data=str(data), controller="tag", metrics=["stas"])
    topics = tmp_path / "topics.jsonl"
    topics.write_text('{"topic": "sports", "text": "coach players match team won"}\n'
                      '{"topic": "money", "text": "shares bank investors sold"}\n')
    result = ctrlkit.run(dataset="jsonl", data=str(data), topics=str(topics), controller="tag", metrics=["stas"],
                         options={"extractive": {"max_words": 5}})
    assert [s["prediction"] for s in result.samples] == ["The coach praised the players.", "Investors sold shares."]
    assert result.metrics["stas"]["stas"] == 1.0
    topics.write_text('{"topic": "sports", "text": "coach"}\n{"topic": "other", "text": "x"}\n')
    with pytest.raises(ConfigurationError, match="topic 'money' of example '2' has no topic documents"):
        ctrlkit.run(dataset="jsonl", data=str(data), topics=str(topics), metrics=["stas"])


def test_errors_reach_the_command_line_as_one_line(tmp_path):
    result = invoke_ctrlkit("run", "--dataset", "jsonl", "--data", str(tmp_path / "nope.jsonl"), "--metric", "stas",
                            cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == f"Error: {tmp_path / 'nope.jsonl'}: no such file"
    assert "Traceback" not in result.stderr


@pytest.mark.slow  # 3 runs of 200 NEWTS examples; test_tag_steers_toward_the_requested_topic_on_the_sample steers fast
def test_controlled_runs_beat_none_on_newts():
    path = str(shared_file("newts/NEWTS_test_600.csv"))
    scores = {}
    for controller in ("prepend", "tag", "prepend+tag"):
        result = ctrlkit.run(dataset="newts", data=path, controller=controller, metrics=["stas"], limit=200)
        scores[controller] = result.metrics["stas"]["stas"]
        scores["none"] = result.results["baseline"]["metrics"]["stas"]["stas"]
    assert all(scores[c] > scores["none"] for c in ("prepend", "tag", "prepend+tag")), scores


@pytest.mark.parametrize("kwargs, error, message", [
    ({"split": "train"}, ctrlkit.DatasetError, "dataset 'sample' has split\\(s\\) test, not 'train'"),
    ({"options": {"tfidf": {"min_df": 50}}}, ConfigurationError, "vectorizer 'tfidf' cannot be fitted"),
    ({"options": {"tfidf": {"max_df": 2.0}}}, ctrlkit.OptionError, "'tfidf.max_df' must be at most 1.0"),
    ({"options": {"tag": {"top_n": -1}}}, ctrlkit.OptionError, "'tag.top_n' must be at least 1"),
    ({"options": {"stas": {"vectorizer": "embedding"}, "embedding": {"model": "/nonexistent/model"}}},
     ConfigurationError, "vectorizer 'embedding' cannot load model '/nonexistent/model'"),
])
def test_bad_settings_are_one_clear_error(kwargs, error, message):
    with pytest.raises(error, match=message):
        ctrlkit.run(controller="tag", metrics=["stas"], limit=2, **kwargs)


def test_a_topic_that_is_not_a_string_is_refused(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "odd", "document": "Text.", "controls": {"topic": ["sports", "health"]}}\n')
    topics = tmp_path / "topics.jsonl"
    topics.write_text('{"topic": "sports", "text": "goal"}\n{"topic": "health", "text": "doctor"}\n')
    with pytest.raises(ConfigurationError, match="example 'odd': control 'topic' must be a string, got list"):
        ctrlkit.run(dataset="jsonl", data=str(data), topics=str(topics), controller="tag", metrics=["stas"])


def test_an_unusable_output_folder_is_refused_before_any_work(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = invoke_ctrlkit("run", "-c", "tag", "-m", "stas", "--out", str(blocker / "sub"))
    assert result.returncode == 1
    assert result.stderr.startswith(f"Error: cannot create output folder {blocker / 'sub'}")
    assert "generate" not in result.stderr  # no progress: nothing was generated


def test_repeated_rouge_types_are_scored_once():
    result = ctrlkit.run(metrics=["rouge"], baseline=None, limit=3, options={"rouge": {"types": "rouge1,rouge1"}})
    assert list(result.metrics["rouge"]) == ["rouge1"]


@pytest.mark.parametrize("metric, controls, message", [
    ("length", {"length": "huge"}, "requests length level 'huge', which is not mapped"),
    ("sr", {"keywords": ["-"]}, "no example requests a keyword with a word character"),
    ("readability", {"readability": "low"}, "requests readability 'low'"),
    ("focus", {"focus": "sideways"}, "requests focus 'sideways'"),
])
def test_metrics_refuse_bad_controls_before_any_generation(tmp_path, monkeypatch, metric, controls, message):
    import ctrlkit.engine.run

    def no_generation(*args, **kwargs):
        raise AssertionError("generation started before the metric checked its controls")

    monkeypatch.setattr(ctrlkit.engine.run, "generate", no_generation)
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "e1", "document": "A text.", "references": ["A."], "controls": controls}) + "\n")
    options = {"focus": {"labeller": "classifier", "classifier": str(tmp_path / "unused.json")}} if metric == "focus" \
        else {}
    with pytest.raises(ctrlkit.CtrlkitError, match=message):
        ctrlkit.run(dataset="jsonl", data=str(data), metrics=[metric], baseline=None, options=options)
