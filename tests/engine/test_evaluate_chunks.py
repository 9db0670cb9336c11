"""``evaluate`` scores a large file a chunk of examples at a time, in bounded memory (issue 36,
item 9). Scored in chunks of 7, an evaluation gives what the same evaluation gives scored whole:
the same corpus values (each metric's ``aggregate`` over the kept parts), intervals, counts and
byte-identical samples.jsonl (its digest), on the authors' files in ../shared/data."""

import json
import logging
import tracemalloc

import pytest

import ctrlkit
from ctrlkit.engine import scored_chunks
from ctrlkit.evaluation import evaluate
from ctrlkit.results import SamplesFile

from helpers import shared_file

UNCOMPARED = ("timings", "created")


def _predictions(path, examples, words=40):
    """A lead of each document as its prediction, and a made-up human score beside it."""
    with open(path, "w") as file:
        for i, example in enumerate(examples):
            lead = " ".join(example.document.split()[:words - i % 5])
            file.write(json.dumps({"id": example.id, "prediction": lead, "human": i % 4}) + "\n")
    return str(path)


def _whole_and_chunked(monkeypatch, tmp_path, **settings):
    whole = evaluate(out=str(tmp_path / "whole"), **settings)
    with monkeypatch.context() as patched:
        patched.setattr(scored_chunks, "CHUNK_EXAMPLES", 7)
        chunked = evaluate(out=str(tmp_path / "chunked"), **settings)
    return whole, chunked


def _same_numbers(first, second):
    """Corpus values equal up to float summation order (a mean of means over chunks is not summed
    in the order of one mean)."""
    assert first.keys() == second.keys()
    for metric in first:
        assert first[metric].keys() == second[metric].keys()
        for value in first[metric]:
            a, b = first[metric][value], second[metric][value]
            assert (a is None) == (b is None), (metric, value)
            if a is not None:
                assert b == pytest.approx(a, rel=1e-12, abs=1e-12), (metric, value)


def _compare(whole, chunked):
    _same_numbers(whole.results["metrics"], chunked.results["metrics"])
    for metric, values in (whole.results["intervals"] or {}).items():
        _same_numbers(values, chunked.results["intervals"][metric])
    rest = lambda result: {key: value for key, value in result.results.items()  # noqa: E731
                           if key not in (*UNCOMPARED, "metrics", "intervals")}
    assert rest(chunked) == rest(whole)  # config, counts, scored, and the samples' digest
    assert list(chunked.samples) == list(whole.samples)


def test_newts_scored_in_chunks_is_the_newts_scored_whole(monkeypatch, tmp_path):
    path = str(shared_file("newts/NEWTS_test_600.csv"))
    examples = ctrlkit.get_dataset("newts", path=path).load("test")[:60]
    predictions = _predictions(tmp_path / "p.jsonl", examples)
    whole, chunked = _whole_and_chunked(monkeypatch, tmp_path, predictions=predictions, dataset="newts", data=path,
                                        metrics=["rouge", "stas", "stats"], limit=60, bootstrap=200)
    assert whole.results["n_examples"] == 60 and set(whole.metrics) == {"rouge", "stas", "stats"}
    _compare(whole, chunked)


def test_macsum_in_chunks_and_its_control_metrics_held_whole(monkeypatch, tmp_path, caplog):
    path = str(shared_file("macsum/macdoc_val.json"))
    dataset = ctrlkit.get_dataset("macsum", path=path)
    examples = dataset.load(dataset.default_split)[:40]
    predictions = _predictions(tmp_path / "p.jsonl", examples)
    settings = dict(predictions=predictions, dataset="macsum", data=path, limit=40, bootstrap=100)
    whole, chunked = _whole_and_chunked(monkeypatch, tmp_path, metrics=["rouge", "stats"], **settings)
    _compare(whole, chunked)
    # length records whether PCC is defined over the corpus (pcc_defined), and cer decides per
    # corpus which attributes it measures: neither declares that it scores each example alone, so a
    # large evaluation holds every example for them, and says so in one line
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        whole, chunked = _whole_and_chunked(monkeypatch, tmp_path / "held", metrics=["length", "cer", "rouge"],
                                            **settings)
    said = [r.getMessage() for r in caplog.records if "every example at once" in r.getMessage()]
    assert said == ["ctrlkit: metrics 'length', 'cer' score every example at once (they do not declare "
                    "scores_each_example_alone), so this evaluation holds all 40 examples in memory"]
    assert whole.metrics["length"]["mad"] is not None and whole.metrics["cer"]["length"] is not None
    _compare(whole, chunked)


def test_fd_with_its_given_scores_scored_in_chunks(monkeypatch, tmp_path):
    papers = [json.loads(line) for line in shared_file("fd/arxiv.json").read_text(encoding="utf-8").splitlines()
              if line.strip()][:12]
    with open(tmp_path / "data.jsonl", "w") as data, open(tmp_path / "p.jsonl", "w") as given:
        for i, paper in enumerate(papers):
            document = paper["article"] if isinstance(paper["article"], str) else " ".join(paper["article"])
            for system in ("gpt35", "bartlarge"):
                data.write(json.dumps({"id": f"{i}:{system}", "document": document, "references": [paper["human"]],
                                       "controls": {"paper": str(i)}}) + "\n")
                given.write(json.dumps({"id": f"{i}:{system}", "prediction": paper[system],
                                        "human": paper[f"{system}_human"]}) + "\n")
    whole, chunked = _whole_and_chunked(monkeypatch, tmp_path, predictions=str(tmp_path / "p.jsonl"), dataset="jsonl",
                                        data=str(tmp_path / "data.jsonl"), metrics=["rouge"], bootstrap=100)
    assert whole.results["n_examples"] == 24 and whole.samples[0]["given"]["human"] is not None
    _compare(whole, chunked)


def test_samples_come_back_from_the_file_and_stay_in_memory_without_a_folder(tmp_path):
    examples = ctrlkit.get_dataset("sample").load("test")[:9]
    predictions = _predictions(tmp_path / "p.jsonl", examples)
    written = evaluate(predictions=predictions, metrics=["rouge"], limit=9, bootstrap=0, out=str(tmp_path / "e"))
    lines = [json.loads(line) for line in (tmp_path / "e" / "samples.jsonl").read_text().splitlines()]
    assert isinstance(written.samples, SamplesFile) and len(written.samples) == 9
    assert list(written.samples) == lines and written.samples[-1] == lines[8] and written.samples[2:4] == lines[2:4]
    with pytest.raises(IndexError):
        written.samples[9]
    kept = evaluate(predictions=predictions, metrics=["rouge"], limit=9, bootstrap=0)
    assert kept.samples == lines


class _SwitchingParts(ctrlkit.Metric):
    """Breaks its promise: a value only some chunks give."""

    scores_each_example_alone = True

    def compute(self, predictions, examples):
        values = {"words": [len(p.split()) for p in predictions]}
        if any("3" in example.id for example in examples):
            values["extra"] = [1.0] * len(predictions)
        return ctrlkit.MetricResult(per_example=values, corpus={name: sum(v) / len(v) for name, v in values.items()})


class _CorpusOnly(ctrlkit.Metric):
    """Breaks its promise: a corpus value its aggregate does not recompute and that is no count."""

    scores_each_example_alone = True

    def compute(self, predictions, examples):
        words = [len(p.split()) for p in predictions]
        return ctrlkit.MetricResult(per_example={"words": words}, corpus={"words": sum(words) / len(words), "spread": 2.0})


class _Maximum(ctrlkit.Metric):
    """Breaks its promise: a corpus value (the maximum) that its aggregate (the mean) does not give."""

    scores_each_example_alone = True

    def compute(self, predictions, examples):
        words = [float(len(p.split())) for p in predictions]
        return ctrlkit.MetricResult(per_example={"words": words}, corpus={"words": max(words)})


@pytest.mark.parametrize("name, metric, expected", [
    ("maximum", _Maximum, "metric 'maximum': its corpus value 'words' is 11.0 on a chunk of 7 examples, but its "
                          "aggregate gives 8.0 from the same parts"),
    ("switching", _SwitchingParts, "metric 'switching' gave the parts words for one chunk of examples and extra, words for another"),
    ("corpus-only", _CorpusOnly, "metric 'corpus-only': its corpus value 'spread' is neither recomputed by its aggregate nor a count"),
])
def test_a_metric_that_breaks_the_chunk_promise_is_one_line(monkeypatch, tmp_path, throwaway_plugins, name,
                                                            metric, expected):
    class Plugin:
        @ctrlkit.hookimpl
        def register_metrics(self, register):
            register(name, metric)

    throwaway_plugins(Plugin(), "chunk-promise")
    examples = [ctrlkit.Example(id=f"e{i}", document=" ".join(["word"] * (5 + i)), references=["x"]) for i in range(20)]
    with open(tmp_path / "data.jsonl", "w") as file:
        file.writelines(json.dumps({"id": e.id, "document": e.document, "references": e.references}) + "\n"
                        for e in examples)
    predictions = _predictions(tmp_path / "p.jsonl", examples)
    monkeypatch.setattr(scored_chunks, "CHUNK_EXAMPLES", 7)
    with pytest.raises(ctrlkit.CtrlkitError) as caught:
        evaluate(predictions=predictions, dataset="jsonl", data=str(tmp_path / "data.jsonl"), metrics=[name],
                 bootstrap=0, out=str(tmp_path / "out"))
    assert expected in str(caught.value) and "\n" not in str(caught.value)
    assert not (tmp_path / "out" / "samples.jsonl").exists()  # nothing half written


def _write(tmp_path, n):
    data, predictions = tmp_path / f"d{n}.jsonl", tmp_path / f"p{n}.jsonl"
    with open(data, "w") as examples, open(predictions, "w") as given:
        for i in range(n):
            document = " ".join(f"word{(i + k) % 50}" for k in range(60))
            examples.write(json.dumps({"id": f"e{i}", "document": document, "references": [f"Summary {i}."]}) + "\n")
            given.write(json.dumps({"id": f"e{n - 1 - i}", "prediction": f"word{i % 50} and more"}) + "\n")
    return str(data), str(predictions)


@pytest.mark.slow
def test_evaluate_in_chunks_holds_a_few_bytes_an_example_where_whole_it_held_them_all(monkeypatch, tmp_path):
    small, large = _write(tmp_path, 600), _write(tmp_path, 4800)

    def growth(chunk):
        """Bytes the peak grows by for each example added, scored ``chunk`` examples at a time."""
        monkeypatch.setattr(scored_chunks, "CHUNK_EXAMPLES", chunk)
        peaks = []
        for files in (small, large):
            tracemalloc.start()
            try:
                evaluate(predictions=files[1], dataset="jsonl", data=files[0], metrics=["rouge"], bootstrap=0,
                         out=str(tmp_path / "out"))
                peaks.append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
        return (peaks[1] - peaks[0]) / 4200

    evaluate(predictions=small[1], dataset="jsonl", data=small[0], metrics=["rouge"], bootstrap=0)  # imports, caches
    whole, chunked = growth(10 ** 9), growth(300)
    # measured: whole about 2,800 bytes an example (document, example, scores, sample); in chunks about
    # 250 (the dataset's set of ids it checks for duplicates, the index, the groups and the kept parts)
    print(f"peak growth an example: whole {whole:.0f} bytes, in chunks {chunked:.0f}")
    assert chunked < whole / 5 and chunked < 600, (whole, chunked)


def test_predictions_in_any_order_match_and_a_repeated_id_names_its_second_line(tmp_path):
    examples = ctrlkit.get_dataset("sample").load("test")[:6]
    lines = [json.dumps({"id": e.id, "prediction": e.references[0]}) for e in examples]
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(reversed(lines)) + "\n\n")  # reversed, and a blank line at the end
    result = evaluate(predictions=str(path), metrics=["rouge"], limit=6, bootstrap=0)
    assert [s["prediction"] for s in result.samples] == [e.references[0] for e in examples]
    assert result.metrics["rouge"]["rouge1"] == pytest.approx(1.0)
    path.write_text("\n".join([lines[0], lines[1], lines[2], lines[1], lines[0]]) + "\n")
    with pytest.raises(ctrlkit.DatasetError) as caught:
        evaluate(predictions=str(path), metrics=["rouge"], limit=6, bootstrap=0)
    assert str(caught.value) == f"{path}:4: duplicate id '{examples[1].id}'"


def test_two_ids_sharing_an_index_hash_are_an_error_never_a_wrong_match(monkeypatch, tmp_path):
    from ctrlkit import prediction_index

    examples = ctrlkit.get_dataset("sample").load("test")[:3]
    path = _predictions(tmp_path / "p.jsonl", examples)
    monkeypatch.setattr(prediction_index, "hash64", lambda text: 7)  # every id one hash
    with pytest.raises(ctrlkit.DatasetError) as caught:
        evaluate(predictions=path, metrics=["rouge"], limit=3, bootstrap=0)
    assert "share one index hash; give one of them another id" in str(caught.value)


class _Shifting(ctrlkit.Dataset):
    """Gives other examples on each read, as a file rewritten during an evaluation would."""

    reads = 0

    def load(self, split=None):
        type(self).reads += 1
        first = 0 if type(self).reads == 1 else 1
        return [ctrlkit.Example(id=f"e{i}", document=f"document {i} with words", references=["words"])
                for i in range(first, first + 20)]


def test_a_dataset_that_changes_between_its_two_reads_is_one_line_and_nothing_is_written(monkeypatch, tmp_path,
                                                                                         throwaway_plugins):
    class Plugin:
        @ctrlkit.hookimpl
        def register_datasets(self, register):
            register("shifting", _Shifting)

    throwaway_plugins(Plugin(), "shifting-dataset")
    with open(tmp_path / "p.jsonl", "w") as file:
        file.writelines(json.dumps({"id": f"e{i}", "prediction": "words"}) + "\n" for i in range(20))
    monkeypatch.setattr(scored_chunks, "CHUNK_EXAMPLES", 7)
    with pytest.raises(ctrlkit.CtrlkitError) as caught:
        evaluate(predictions=str(tmp_path / "p.jsonl"), dataset="shifting", metrics=["rouge"], limit=20,
                 bootstrap=0, out=str(tmp_path / "out"))
    assert str(caught.value) == ("dataset 'shifting' changed while it was evaluated (a second read gave other examples "
                                 "than the first); nothing was written; evaluate it again")
    assert not (tmp_path / "out").exists()


def test_a_predictions_file_rewritten_during_the_evaluation_is_one_line(monkeypatch, tmp_path):
    from ctrlkit import evaluation

    examples = ctrlkit.get_dataset("sample").load("test")[:20]
    predictions = _predictions(tmp_path / "p.jsonl", examples)
    refuse = evaluation.Survey.refuse_mismatch

    def rewritten(survey, source):  # between the first read and the scoring, as a second job would
        refuse(survey, source)
        _predictions(tmp_path / "p.jsonl", list(reversed(examples)), words=12)

    monkeypatch.setattr(evaluation.Survey, "refuse_mismatch", rewritten)
    monkeypatch.setattr(scored_chunks, "CHUNK_EXAMPLES", 7)
    with pytest.raises(ctrlkit.DatasetError) as caught:
        evaluate(predictions=predictions, metrics=["rouge"], limit=20, bootstrap=0, out=str(tmp_path / "out"))
    assert str(caught.value) == f"{predictions} changed while it was evaluated; nothing was written; evaluate it again"
    assert not (tmp_path / "out").exists()


class _Shrinking(ctrlkit.Dataset):
    """Has fewer examples on its second read, as a file cut while a run samples it."""

    reads = 0

    def load(self, split=None):
        type(self).reads += 1
        return [ctrlkit.Example(id=f"e{i}", document=f"document {i} with words", references=["words"])
                for i in range(20 if type(self).reads == 1 else 12)]

    def iter_examples(self, split, keep=None):  # a dataset that streams: a sample reads it twice
        return super().iter_examples(split, keep)


def test_a_dataset_that_shrinks_while_a_run_samples_it_is_one_line(throwaway_plugins):
    class Plugin:
        @ctrlkit.hookimpl
        def register_datasets(self, register):
            register("shrinking", _Shrinking)

    throwaway_plugins(Plugin(), "shrinking-dataset")
    with pytest.raises(ctrlkit.CtrlkitError) as caught:
        ctrlkit.run(dataset="shrinking", controller="none", backbone="extractive", metrics=["rouge"], sample=10,
                    bootstrap=0, cache=False)
    assert str(caught.value) == ("dataset 'shrinking' changed while it was read (the sample counted 20 examples, the "
                                 "second read 12); run it again")


class _Recontrolled(ctrlkit.Dataset):
    """Gives the same ids, documents and references on each read, but other controls and its own
    predictions on the second: what a strict-controls check and the scores read must not differ."""

    reads = 0

    def load(self, split=None):
        type(self).reads += 1
        second = type(self).reads > 1
        return [ctrlkit.Example(id=f"e{i}", document=f"Alice met Bob on day {i}.", references=["Alice met Bob."],
                                controls={"entity": "Bob" if second and i % 2 else "Alice"},
                                meta={"prediction": "Bob waited." if second and i % 3 == 0 else "Alice left."})
                for i in range(20)]


def test_controls_or_own_predictions_that_change_between_the_two_reads_are_one_line(monkeypatch, tmp_path,
                                                                                    throwaway_plugins):
    class Plugin:
        @ctrlkit.hookimpl
        def register_datasets(self, register):
            register("recontrolled", _Recontrolled)

    throwaway_plugins(Plugin(), "recontrolled-dataset")
    monkeypatch.setattr(scored_chunks, "CHUNK_EXAMPLES", 7)
    with pytest.raises(ctrlkit.CtrlkitError) as caught:
        evaluate(dataset="recontrolled", metrics=["entity"], strict_controls=True, bootstrap=0,
                 out=str(tmp_path / "out"))
    assert str(caught.value).startswith("dataset 'recontrolled' changed while it was evaluated")
    assert not (tmp_path / "out").exists()
