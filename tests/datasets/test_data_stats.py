"""``ctrlkit data stats`` and ``ctrlkit_datasets.stats.dataset_stats``: examples per subset and
split, and how many carry each control, compared against counts computed here."""

import csv
import json

import pytest

import ctrlkit
from ctrlkit import DatasetError
from ctrlkit_datasets.stats import dataset_stats, format_stats

from helpers import invoke_ctrlkit, shared_file

COLUMNS = ["text", "summary", "length", "keywords", "readability", "focus"]
CONTROLS = ["length", "keywords", "readability", "focus"]


def row(i, **changes):
    base = {"text": f"Paper {i}. It proposes a method.", "summary": f"Summary {i}.", "length": str(i % 5),
            "keywords": "method; paper", "readability": "high" if i % 2 else "normal", "focus": "low"}
    return {**base, **changes}


def write_csv(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


# subset folder -> split file name -> rows (controls left empty here and there)
RELEASE = {
    "compositional": {
        "train.csv": [row(i) for i in range(7)],
        "val.csv": [row(i, keywords="") for i in range(3)] + [row(9)],
        "test.csv": [row(i, focus="" if i % 3 else "high") for i in range(11)],
    },
    "Length": {
        "Test.csv": [row(i, keywords="", readability="", focus="") for i in range(5)],
        "dev.csv": [row(i, keywords="", readability="", focus="") for i in range(2)],
    },
    "keywords": {"test.csv": [row(i, length="", readability="", focus="") for i in range(4)]},
}
SPLITS = {"train": "train", "val": "validation", "dev": "validation", "test": "test"}


@pytest.fixture
def release(tmp_path):
    root = tmp_path / "CCSBench"
    for subset, files in RELEASE.items():
        for name, rows in files.items():
            write_csv(root / subset / name, rows)
    (root / ".cache").mkdir()  # a folder without split files is no subset
    return root


def expected_parts():
    """``(subset, split) -> (rows, {control: rows with a value})``, counted from the rows written."""
    parts = {}
    for subset, files in RELEASE.items():
        for name, rows in files.items():
            split = SPLITS[name.split(".")[0].lower()]
            parts[subset, split] = (len(rows), {c: n for c in CONTROLS if (n := sum(1 for r in rows if r[c]))})
    return parts


def test_dataset_stats_counts_every_subset_and_split_of_ccsbench(release):
    stats = dataset_stats("ccsbench", str(release))
    assert stats["dataset"] == "ccsbench" and stats["path"] == str(release) and stats["controls"] == CONTROLS
    read = {(p["subset"], p["split"]): (p["examples"], p["controls"]) for p in stats["parts"] if p["error"] is None}
    assert read == expected_parts()
    assert all(p["with_references"] == p["examples"] and p["skipped"] == 0 for p in stats["parts"] if not p["error"])
    missing = {(p["subset"], p["split"]) for p in stats["parts"] if p["error"]}
    assert missing == {(s, split) for s in ("Length", "compositional", "keywords")
                       for split in ("train", "validation", "test")} - set(expected_parts())
    assert next(p for p in stats["parts"] if (p["subset"], p["split"]) == ("keywords", "train"))["error"].endswith(
        "keywords: no train file (train.csv, or .jsonl, .json, .parquet)")


def test_the_command_prints_rows_per_subset_and_split(release):
    result = invoke_ctrlkit("data", "stats", "-d", "ccsbench", "--data", str(release))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (f"dataset 'ccsbench' at {release}: examples per split, and how many carry references and "
                        "each control")
    assert lines[1].split() == ["subset", "split", "examples", "references", *CONTROLS]
    table = {tuple(line.split()[:2]): [int(n) for n in line.split()[2:]] for line in lines[2:]
             if not line.startswith(("not read", "total"))}
    expected = expected_parts()
    assert table == {key: [rows, rows, *(counts.get(c, 0) for c in CONTROLS)] for key, (rows, counts) in expected.items()}
    total = next(line for line in lines if line.startswith("total")).split()[1:]
    assert int(total[0]) == sum(rows for rows, _ in expected.values()) == 33
    assert sum(line.startswith("not read: ") for line in lines) == 9 - len(expected)
    assert "not read: keywords/train: " in result.stdout


def test_the_command_prints_json_equal_to_the_library(release):
    result = invoke_ctrlkit("data", "stats", "-d", "ccsbench", "--data", str(release), "--json", "--split", "test")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == dataset_stats("ccsbench", str(release), ["test"])
    assert [p["examples"] for p in json.loads(result.stdout)["parts"]] == [11, 4, 5]  # subsets in any case, sorted


def test_options_and_skipped_rows(release):
    write_csv(release / "compositional" / "test.csv", [row(1), row(2, length="1.5"), row(3)])
    result = invoke_ctrlkit("data", "stats", "-d", "ccsbench", "--data", str(release / "compositional"),
                            "--skip-invalid", "--split", "test", "--set", "ccsbench.length_unit=bin")
    assert result.returncode == 0, result.stderr
    qualified = invoke_ctrlkit("data", "stats", "-d", "ccsbench", "--data", str(release / "compositional"),
                               "--skip-invalid", "--split", "test", "--set", "dataset:ccsbench.length_unit=bin")
    assert qualified.returncode == 0 and qualified.stdout == result.stdout, qualified.stderr
    assert result.stdout.splitlines()[1:] == [
        "split  examples  skipped  references  length  keywords  readability  focus",
        "test          2        1           2       2         2            2      2"]
    # when no part can be read, the command fails with the first part's error
    refused = invoke_ctrlkit("data", "stats", "-d", "ccsbench", "--data", str(release / "compositional"),
                             "--split", "test")
    assert refused.returncode == 1
    assert refused.stderr == f"Error: {release / 'compositional' / 'test.csv'}:3: field 'length' must be a whole " \
                             "number of bins, got '1.5'\n"
    other = invoke_ctrlkit("data", "stats", "-d", "ccsbench", "--set", "newts.topic_label=id")
    assert other.returncode == 1 and "only options of dataset 'ccsbench' apply here" in other.stderr
    for key in ("backbone:ccsbench", "dataset:newts"):
        other = invoke_ctrlkit("data", "stats", "-d", "ccsbench", "--set", f"{key}.length_unit=bin")
        assert other.returncode == 1 and f"--set {key}.*: only options of dataset 'ccsbench' apply here" in other.stderr


def test_a_part_that_cannot_be_read_is_listed_and_the_rest_counted(release):
    write_csv(release / "Length" / "Test.csv", [row(1), row(2, length="100")])
    stats = dataset_stats("ccsbench", str(release), ["test"])
    [length] = [p for p in stats["parts"] if p["subset"] == "Length"]
    assert length["examples"] is None and "column 'length' holds neither" in length["error"]
    assert f"not read: Length/test: {length['error']}" in format_stats(stats).splitlines()


def test_any_dataset_without_splits_or_subsets(tmp_path):
    path = tmp_path / "mine.jsonl"
    records = [{"document": f"D{i}.", "references": ["R."] if i % 2 else [],
                "controls": {"topic": "t", **({"length": 20} if i % 3 == 0 else {})}} for i in range(10)]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    stats = dataset_stats("jsonl", str(path))
    [part] = stats["parts"]
    assert part["split"] is None and part["examples"] == 10 and part["with_references"] == 5
    assert part["controls"] == {"topic": 10, "length": 4} and stats["controls"] == ["length", "topic"]
    assert format_stats(stats).splitlines()[1:] == ["split  examples  references  length  topic",
                                                    "all          10           5       4     10"]
    with pytest.raises(DatasetError, match=r"none.jsonl: no such file"):
        dataset_stats("jsonl", str(tmp_path / "mine.jsonl").replace("mine", "none"))


def test_the_bundled_sample():
    result = invoke_ctrlkit("data", "stats")
    assert result.returncode == 0, result.stderr
    examples = ctrlkit.get_dataset("sample").load("test")
    assert result.stdout.splitlines()[1:] == ["split  examples  references  topic",
                                              f"test   {len(examples):>8}  {len(examples):>10}  {len(examples):>5}"]


def test_shared_newts_and_macsum():
    newts = shared_file("newts/NEWTS_test_600.csv")
    stats = dataset_stats("newts", str(newts))
    for part in stats["parts"]:
        examples = ctrlkit.get_dataset("newts", path=str(newts)).load(part["split"])
        assert part["examples"] == len(examples) and part["controls"]["topic"] == len(examples)
    assert sum(part["examples"] for part in stats["parts"]) == 1200  # two topic summaries per row
    macsum = shared_file("macsum/macdoc_val.json")
    stats = dataset_stats("macsum", str(macsum))
    [val] = [part for part in stats["parts"] if part["error"] is None]
    examples = ctrlkit.get_dataset("macsum", path=str(macsum)).load("val")
    assert val["split"] == "val" and val["examples"] == len(examples) == 554
    assert val["controls"]["topic"] == sum(1 for e in examples if e.controls.get("topic"))
