"""Datasets stream: ``--limit N`` reads the first N lines of a jsonl or csv file, ``--sample N``
holds the N it draws (the same draw as ``sampling.draw_sample`` on the whole list), and the peak
memory of such a run does not grow with the file (issue 36, item 9). Peaks are measured with
tracemalloc in this process against the same run on a file 8 times smaller (a generous ratio,
no absolute limit); bench/dataset_memory.py reports the figures for 10^4-10^6 lines."""

import json

import pytest

import ctrlkit
from ctrlkit.digest import _CHUNK
from ctrlkit.sampling import draw_sample
from helpers.memory import peak_bytes

WORDS = "the council voted on the new budget for the stadium and the clinic after a long debate".split()


def _document(i):
    return " ".join(WORDS[(i + k) % len(WORDS)] for k in range(60)) + f" number {i}."


def write_jsonl(path, n):
    with open(path, "w") as file:
        for i in range(n):
            file.write(json.dumps({"id": f"e{i}", "document": _document(i), "references": [f"Summary {i}."],
                                   "controls": {"topic": f"t{i % 7}"}}) + "\n")
    return str(path)


def write_csv(path, n):
    with open(path, "w") as file:
        file.write("id,document,reference\n")
        for i in range(n):
            file.write(f"e{i},{_document(i)},Summary {i}.\n")
    return str(path)


def _run(path, dataset, **settings):
    return ctrlkit.run(dataset=dataset, data=path, controller="none", backbone="extractive", metrics=["rouge"],
                       bootstrap=0, cache=False, **settings)


@pytest.mark.parametrize("dataset, write", [("jsonl", write_jsonl), ("csv", write_csv)])
@pytest.mark.parametrize("settings", [{"limit": 5}, {"sample": 5, "seed": 3}], ids=["limit", "sample"])
def test_the_peak_of_a_limited_or_sampled_run_does_not_grow_with_the_file(tmp_path, dataset, write, settings):
    small, large = write(tmp_path / f"small.{dataset}", 2000), write(tmp_path / f"large.{dataset}", 16000)
    _run(small, dataset, **settings)  # imports and first-use caches out of the measure
    peaks = [peak_bytes(lambda: _run(path, dataset, **settings)) for path in (small, large)]
    # before: the whole file was held (16,000 lines peaked at 21 MB, 2,000 at 2.7 MB); what may
    # differ is the data's fingerprint, which reads the file in chunks of digest._CHUNK bytes
    assert peaks[1] < 1.5 * peaks[0] + 2 * _CHUNK + (1 << 20), peaks


def test_a_limited_run_reads_only_the_lines_it_needs(tmp_path):
    path = write_jsonl(tmp_path / "data.jsonl", 20)
    with open(path, "a") as file:
        file.write("not json at all\n")  # a bad line past the limit is never read
    result = _run(path, "jsonl", limit=5)
    assert [sample["id"] for sample in result.samples] == [f"e{i}" for i in range(5)]


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_a_streamed_sample_is_the_same_draw_as_drawing_from_the_whole_list(tmp_path, seed):
    path = write_jsonl(tmp_path / "data.jsonl", 300)
    whole = ctrlkit.get_dataset("jsonl", path=path).load(None)
    expected = [example.id for example in draw_sample(whole, 7, seed, "jsonl")]
    assert [sample["id"] for sample in _run(path, "jsonl", sample=7, seed=seed).samples] == expected


def test_a_streamed_sample_larger_than_the_file_and_skipped_lines(tmp_path):
    path = write_jsonl(tmp_path / "data.jsonl", 10)
    with open(path, "a") as file:
        file.write(json.dumps({"id": "bad", "document": ""}) + "\n")
    with pytest.raises(ctrlkit.errors.OptionError, match="^sample 11 is more than the 10 usable examples"):
        _run(path, "jsonl", sample=11, options={"jsonl": {"skip_invalid": True}})
    drawn = _run(path, "jsonl", sample=10, options={"jsonl": {"skip_invalid": True}})
    assert [sample["id"] for sample in drawn.samples] == [f"e{i}" for i in range(10)]
    assert drawn.results["n_skipped"] == 1


def test_a_limit_still_checks_the_field_mapping_and_duplicate_ids_of_what_it_reads(tmp_path):
    path = write_jsonl(tmp_path / "data.jsonl", 20)
    with pytest.raises(ctrlkit.errors.DatasetError, match=r"none of the first \d+ lines read has it.*'summary'"):
        _run(path, "jsonl", limit=5, options={"jsonl": {"references_field": "summary"}})
    with open(path, "a") as file:
        file.write(json.dumps({"id": "e0", "document": "again"}) + "\n")
    assert len(_run(path, "jsonl", limit=5).samples) == 5  # the duplicate lies past what a limit of 5 reads
    with pytest.raises(ctrlkit.errors.DatasetError, match="duplicate id 'e0'"):
        _run(path, "jsonl")


def test_evaluate_with_a_limit_reads_only_the_lines_it_needs(tmp_path):
    path = write_jsonl(tmp_path / "data.jsonl", 20)
    with open(path, "a") as file:
        file.write("not json at all\n")
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"id": f"e{i}", "prediction": f"Council {i}."}) + "\n" for i in range(5)))
    result = ctrlkit.evaluate(predictions=str(predictions), dataset="jsonl", data=path, metrics=["stats"],
                              bootstrap=0, limit=5)
    assert [sample["id"] for sample in result.samples] == [f"e{i}" for i in range(5)]
