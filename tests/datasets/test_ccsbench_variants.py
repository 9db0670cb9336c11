"""The CCSBench loader reads every plausible variant of the release's layout right, or refuses it
in one line naming the file and the column or row; it never reads one silently wrong (a length of
100 is never bin 100). Each variant is a small file written here."""

import csv
import hashlib
import json
import re
import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctrlkit
from ctrlkit import DatasetError
from ctrlkit.bootstrap import groups_of, resample_weights
from ctrlkit.testing import check_dataset
from ctrlkit_datasets import ccsbench as module

from helpers.ccs_release import CCS_COLUMNS as COLUMNS, write_csv
from helpers import shared_file


def row(**changes):
    base = {"text": "We propose a method. It works.", "summary": "A method that works.", "length": "1",
            "keywords": "method", "readability": "high", "focus": "empirical"}
    return {**base, **changes}



def lengths_file(tmp_path, values, name="test.csv"):
    return write_csv(tmp_path / name, [row(length=value) for value in values])


def load(path, split=None, **options):
    dataset = ctrlkit.get_dataset("ccsbench", path=str(path), **options)
    return dataset.load(split if split is not None else dataset.default_split)


def bins(examples):
    return [example.meta["length_bin"] for example in examples]


def one_line(message):
    assert "\n" not in message and "\r" not in message, message
    return message


# --- length: detected from the whole column ------------------------------------------------------

@pytest.mark.parametrize("values, expected", [
    (["0", "1", "2", "3", "4", "2"], [0, 1, 2, 3, 4, 2]),                                # bins
    (["1", "1.0", " 3 "], [1, 1, 3]),                                                    # bins, loosely written
    (["0", "0"], [0, 0]),                                                                # 0 is bin 0 either way
    (["50", "100", "150", "200", "250", "300"], [0, 1, 2, 3, 4, 4]),                     # rounded word counts
    (["100", "100.0", "0"], [1, 1, 0]),
    (["0-50", "51-100", "101-150", "151-200", "201+"], [0, 1, 2, 3, 4]),                 # ranges
    (["1-50", "50-100", "101 - 150 words", "151 to 200", ">200", "over 200 words", "200+", ">= 201", "51–100"],
     [0, 1, 2, 3, 4, 4, 4, 4, 1]),
])
def test_length_columns_are_read_as_bins_word_counts_or_ranges(tmp_path, values, expected):
    examples = load(lengths_file(tmp_path, values))
    assert bins(examples) == expected
    assert [example.controls["length"] for example in examples] == [50 * b + 25 for b in expected]


def test_word_counts_keep_the_count_and_bins_do_not(tmp_path):
    words = load(lengths_file(tmp_path, ["100", "250"]))
    assert [e.meta["length_words"] for e in words] == [100, 250] and bins(words) == [1, 4]
    assert "length_words" not in load(lengths_file(tmp_path, ["1"], "other.csv"))[0].meta


def test_the_bin_of_a_word_count_is_the_length_metrics_rule_capped_at_the_top_bin():
    assert [module.words_bin(w) for w in (0, 1, 50, 51, 100, 101, 200, 201, 250, 1000)] == [0, 0, 0, 1, 1, 2, 3, 4, 4, 4]
    assert ctrlkit.get_dataset("ccsbench").length_top_bin == 4


def test_json_numbers_are_detected_the_same_way(tmp_path):
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(row(length=n)) + "\n" for n in (50, 100, 150)))
    assert bins(load(path)) == [0, 1, 2]
    path.write_text("".join(json.dumps(row(length=n)) + "\n" for n in (1, 100)))
    with pytest.raises(DatasetError, match=r"test.jsonl: column 'length' holds neither .* values seen: 1, 100;"):
        load(path)


@pytest.mark.parametrize("values, seen", [
    (["1", "2", "100"], "1, 2, 100"),                       # a bin column with one rounded word count
    (["4", "5"], "4, 5"),                                   # bin 5 does not exist (bin 4 is above 200 words)
    (["37", "88", "120"], "37, 88, 120"),                   # exact word counts: force words to read them
    (["1", "51-100"], "1, '51-100'"),                       # a bin beside a range
    (["100", "0-50"], "100, '0-50'"),
])
def test_a_column_no_single_reading_fits_is_refused_naming_file_column_and_values(tmp_path, values, seen):
    path = lengths_file(tmp_path, values)
    with pytest.raises(DatasetError) as caught:
        load(path)
    message = one_line(str(caught.value))
    assert message.startswith(f"{path}: column 'length' holds neither only bins (0-4)")
    assert f"values seen: {seen};" in message and "length_unit=bin|words|range" in message
    with pytest.raises(DatasetError, match="column 'length' holds neither"):  # not a row: skip_invalid cannot skip it
        load(path, skip_invalid=True)


def test_the_refusal_lists_a_few_distinct_values(tmp_path):
    path = lengths_file(tmp_path, [str(n) for n in range(1, 30)] * 2)
    message = one_line(str(pytest.raises(DatasetError, load, path).value))
    assert "values seen: 1, 2, 3, 4, 5, 6, 7, 8 ... (29 distinct);" in message


def test_a_column_with_no_readable_length_is_refused(tmp_path):
    path = lengths_file(tmp_path, ["short", "long", "short"])
    with pytest.raises(DatasetError, match=r"test.csv: column 'length' holds no length that can be read .* "
                                           r"values seen: 'long', 'short'$"):
        load(path)


def test_the_refusal_names_the_remapped_column(tmp_path):
    path = write_csv(tmp_path / "test.csv", [{**row(), "len": v} for v in ("2", "150")], COLUMNS + ["len"])
    with pytest.raises(DatasetError, match=r"column 'len' holds neither .* values seen: 2, 150;"):
        load(path, fields="length=len")


@pytest.mark.parametrize("unit, values, expected", [
    ("bin", ["0", "4"], [0, 4]),
    ("words", ["37", "88", "120", "2"], [0, 1, 2, 0]),      # any whole number, not only multiples of 50
    ("words", ["1", "2"], [0, 0]),                          # bins-looking values, read as words because asked
    ("range", ["0-50", "201+"], [0, 4]),
])
def test_length_unit_forces_a_reading(tmp_path, unit, values, expected):
    assert bins(load(lengths_file(tmp_path, values), length_unit=unit)) == expected


@pytest.mark.parametrize("unit, values, wrong", [
    ("bin", ["1", "100"], "100"),                           # never bin 100
    ("bin", ["1", "5"], "5"),
    ("bin", ["1", "51-100"], "'51-100'"),
    ("words", ["100", "51-100"], "'51-100'"),
    ("range", ["0-50", "2"], "2"),
])
def test_a_forced_reading_refuses_values_it_cannot_hold(tmp_path, unit, values, wrong):
    path = lengths_file(tmp_path, values)
    with pytest.raises(DatasetError) as caught:
        load(path, length_unit=unit, skip_invalid=True)
    message = one_line(str(caught.value))
    assert message.startswith(f"{path}: column 'length' holds values that are not ")
    assert f"as length_unit={unit} says: {wrong};" in message


@pytest.mark.parametrize("values, bad, message", [
    (["1", "1.5", "2"], "1.5", r"must be a whole number of bins, got '1.5'"),
    (["1", "-1", "2"], "-1", r"must be a whole number of bins, got '-1'"),
    (["1", "abc", "2"], "abc", r"must be a whole number of bins, got 'abc'"),
    (["100", "nan", "150"], "nan", r"must be a whole number of words, got 'nan'"),
    (["0-50", "30-70", "51-100"], "30-70", r"must be a 50-word range such as '51-100' or '>200', got '30-70'"),
    (["0-50", ">150", "51-100"], ">150", r"must be a 50-word range"),  # covers bins 3 and 4: not one bin
])
def test_a_cell_no_reading_can_hold_is_an_error_of_its_row(tmp_path, values, bad, message):
    path = lengths_file(tmp_path, values)
    with pytest.raises(DatasetError, match=rf"test.csv:3: field 'length' {message}"):
        load(path)
    dataset = ctrlkit.get_dataset("ccsbench", path=str(path), skip_invalid=True)
    assert [e.id for e in dataset.load("test")] == ["test:1", "test:3"] and dataset.skipped == 1


def test_the_hub_copy_is_detected_the_same_way(monkeypatch):
    monkeypatch.setattr(module, "load_hub", lambda name, **kw: [row(length="1"), row(length="100")])
    with pytest.raises(DatasetError, match=r"^dyxohjl666/CCSBench/compositional\[test\]: column 'length' holds neither"):
        ctrlkit.get_dataset("ccsbench").load("test")
    monkeypatch.setattr(module, "load_hub", lambda name, **kw: [row(length=100), row(length=250)])
    assert bins(ctrlkit.get_dataset("ccsbench").load("test")) == [1, 4]


# --- files ---------------------------------------------------------------------------------------

def test_a_one_megabyte_cell_is_read(tmp_path):
    paper = "word " * 200_000 + "end."
    path = write_csv(tmp_path / "test.csv", [row(text=paper), row()])
    assert len(paper) > 1_000_000 and load(path)[0].document == paper


@pytest.mark.parametrize("name, split", [
    ("valid.csv", "validation"), ("validation.csv", "validation"), ("val.csv", "validation"), ("dev.csv", "validation"),
    ("DEV.csv", "validation"), ("Valid.JSONL", "validation"), ("Test.csv", "test"), ("TRAIN.CSV", "train"),
])
def test_split_files_in_any_case_and_every_validation_name(tmp_path, name, split):
    path = tmp_path / "compositional" / name
    if path.suffix.lower() == ".jsonl":
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(row(length=3)) + "\n")
    else:
        write_csv(path, [row(length="3")])
    [example] = ctrlkit.get_dataset("ccsbench", path=str(tmp_path)).load(split)
    assert example.meta["length_bin"] == 3 and example.meta["source"].startswith(str(path))
    assert ctrlkit.get_dataset("ccsbench", path=str(path)).default_split == split


@pytest.mark.parametrize("names", [("val.csv", "dev.csv"), ("test.csv", "test.jsonl"), ("valid.csv", "Validation.csv")])
def test_two_files_that_could_be_one_split_are_both_named_and_neither_read(tmp_path, names):
    for name in names:
        write_csv(tmp_path / "compositional" / name, [row()])
    split = "test" if names[0].startswith("test") else "validation"
    first, second = sorted(names)
    with pytest.raises(DatasetError, match=rf"compositional: both {re.escape(first)} and {re.escape(second)} could "
                                           rf"be the {split} file"):
        ctrlkit.get_dataset("ccsbench", path=str(tmp_path)).load(split)


def test_subset_folders_in_any_case(tmp_path):
    write_csv(tmp_path / "Compositional" / "test.csv", [row(length="2")])
    write_csv(tmp_path / "LENGTH" / "Test.csv", [row(length="4", keywords="", readability="", focus="")])
    [example] = ctrlkit.get_dataset("ccsbench", path=str(tmp_path)).load("test")
    assert example.meta == {"source": f"{tmp_path / 'Compositional' / 'test.csv'}:2", "subset": "compositional",
                            "length_bin": 2, "document_digest": module.document_digest(example.document)}
    [example] = ctrlkit.get_dataset("ccsbench", path=str(tmp_path), subset="length").load("test")
    assert example.controls == {"length": 225} and example.meta["subset"] == "length"
    assert ctrlkit.get_dataset("ccsbench", path=str(tmp_path)).subsets() == ["Compositional", "LENGTH"]


def test_two_folders_that_could_be_one_subset_are_refused(tmp_path):
    write_csv(tmp_path / "Length" / "test.csv", [row()])
    write_csv(tmp_path / "length" / "test.csv", [row()])
    if len(list(tmp_path.iterdir())) < 2:
        pytest.skip("this file system ignores letter case")
    with pytest.raises(DatasetError, match=r"both Length/ and length/ could be subset 'length'"):
        ctrlkit.get_dataset("ccsbench", path=str(tmp_path), subset="length").load("test")


def test_the_subset_is_the_folder_a_file_is_in(tmp_path):
    path = write_csv(tmp_path / "Length" / "test.csv", [row(), row(length="")])
    with pytest.raises(DatasetError, match=r"test.csv:3: field 'length' is missing \(subset 'length'\)"):
        load(path)
    assert load(path, skip_invalid=True)[0].meta["subset"] == "length"
    assert load(tmp_path / "Length", skip_invalid=True)[0].meta["subset"] == "length"


def test_an_excel_bom_is_no_part_of_the_first_column(tmp_path):
    path = write_csv(tmp_path / "test.csv", [row()])
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert load(path)[0].document == row()["text"]


def test_a_file_without_splits_or_readable_lengths_says_so(tmp_path):
    write_csv(tmp_path / "compositional" / "train.csv", [row()])
    with pytest.raises(DatasetError, match=r"compositional: no test file \(test.csv, or .jsonl, .json, .parquet\)"):
        ctrlkit.get_dataset("ccsbench", path=str(tmp_path)).load("test")


# --- parquet -------------------------------------------------------------------------------------

def test_parquet_files(tmp_path):
    pyarrow = pytest.importorskip("pyarrow", reason="writing the Parquet fixture needs pyarrow")
    import pyarrow.parquet as parquet

    rows = [row(length=100, keywords=["sparse attention", "memory"]), row(length=250, keywords=None, focus=None)]
    path = tmp_path / "compositional" / "test.parquet"
    path.parent.mkdir()
    parquet.write_table(pyarrow.Table.from_pylist(rows), path)
    first, second = ctrlkit.get_dataset("ccsbench", path=str(tmp_path)).load("test")
    assert first.controls == {"length": 75, "keywords": ["sparse attention", "memory"], "readability": "high",
                              "focus": "high"}
    assert second.controls == {"length": 225, "readability": "high"} and second.meta["source"] == f"{path}: row 2"
    assert first.id == "test:1" and first.document == rows[0]["text"]

    parquet.write_table(pyarrow.Table.from_pylist([{"abstract": "x"}]), path)
    with pytest.raises(DatasetError, match=r"test.parquet: column 'text' is missing"):
        load(path)
    path.write_bytes(b"PAR1 not really")
    with pytest.raises(DatasetError, match=r"test.parquet: cannot read as Parquet \(") as caught:
        load(path)
    one_line(str(caught.value))


def test_parquet_without_pyarrow_or_pandas_says_what_to_install(tmp_path, monkeypatch):
    path = tmp_path / "test.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(DatasetError, match=r"test.parquet: reading Parquet needs pyarrow: pip install pyarrow"):
        load(path)


# --- keywords ------------------------------------------------------------------------------------

@pytest.mark.parametrize("cell, keywords", [
    ("ROUGE, arXiv", ["ROUGE", "arXiv"]),
    ("ROUGE; arXiv;", ["ROUGE", "arXiv"]),
    ("ROUGE | arXiv", ["ROUGE", "arXiv"]),
    ("Smith, J.; 1,000 GPUs", ["Smith, J.", "1,000 GPUs"]),     # ; or | wins: commas stay in the keyword
    ("a | b, c", ["a", "b, c"]),
    ('["sparse attention", "r\\u00e9sum\\u00e9"]', ["sparse attention", "résumé"]),  # JSON list
    ("['sparse attention', \"it's\"]", ["sparse attention", "it's"]),               # Python list literal
    ("[]", None),
    ("single", ["single"]),
])
def test_keyword_cells(tmp_path, cell, keywords):
    path = write_csv(tmp_path / "test.csv", [row(keywords=cell)])
    if keywords is None:
        with pytest.raises(DatasetError, match=r"test.csv:2: field 'keywords' lists no keyword"):
            load(path)
    else:
        assert load(path)[0].controls["keywords"] == keywords


@pytest.mark.parametrize("cell, message", [
    ("a; b | c", r"field 'keywords' mixes ';' and '\|'"),
    ("[1, 2]", r"field 'keywords' must be a list of strings"),
    ('["open"', r"field 'keywords' is not a readable list"),
])
def test_keyword_cells_refused(tmp_path, cell, message):
    path = write_csv(tmp_path / "test.csv", [row(keywords=cell)])
    with pytest.raises(DatasetError, match=rf"test.csv:2: {message}") as caught:
        load(path)
    one_line(str(caught.value))


# --- the dataset as a whole ----------------------------------------------------------------------

def test_it_conforms_with_partial_controls(tmp_path):
    write_csv(tmp_path / "compositional" / "test.csv", [row(), row(keywords="", focus=""), row(readability="")])
    check_dataset(ctrlkit.get_dataset("ccsbench", path=str(tmp_path)))


length_cells = st.one_of(
    st.sampled_from(["", "0", "1", "4", "5", "50", "100", "250", "1.5", "-1", "0-50", "51-100", "201+", ">200",
                     "30-70", "1e2", "nan", "inf", "9" * 400, "short", " 2 ", "101 to 150 words"]),
    st.integers(0, 400).map(str),
    st.text(max_size=8),
)
keyword_cells = st.one_of(st.sampled_from(["", "a, b", "a; b", "a | b", "a; b | c", "[]", "['a']", '["a"', "[1]",
                                           "[" * 50]), st.text(max_size=12))


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(length_cells, keyword_cells), min_size=1, max_size=6),
       st.sampled_from(["auto", "bin", "words", "range"]))
def test_ccsbench_fuzz_never_reads_a_length_outside_the_bins(tmp_path_factory, cells, unit):
    path = write_csv(tmp_path_factory.mktemp("fuzz") / "test.csv",
                     [row(length=length, keywords=keywords) for length, keywords in cells])
    try:
        examples = load(path, length_unit=unit, skip_invalid=True)
    except DatasetError as exc:
        assert str(path) in one_line(str(exc))
        return
    for example in examples:
        if "length" in example.controls:
            assert 0 <= example.meta["length_bin"] <= 4
            assert example.controls["length"] == 50 * example.meta["length_bin"] + 25


def test_the_length_metric_caps_at_ccsbenchs_top_bin_end_to_end(tmp_path):
    """A bin-4 request ("above 200 words") met by a 400-word summary has no bin error; so does a
    300-word request, which CCSBench also files in bin 4."""
    path = tmp_path / "test.csv"
    rows = [{"text": "A paper. " * 20, "summary": "A summary.", "length": length, "keywords": "", "readability": "",
             "focus": ""} for length in ("200", "250", "300")]
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"id": f"test:{i}", "prediction": "word " * words}) + "\n"
                                   for i, words in ((1, 180), (2, 400), (3, 230))))
    result = ctrlkit.evaluate(predictions=str(predictions), dataset="ccsbench", data=str(path), metrics=["length"])
    # requested bins 3, 4, 4 (capped); generated 180 -> 3, 400 -> 7 capped to 4, 230 -> 4
    assert [s["scores"]["length"]["abs_bin_error"] for s in result.samples] == [0, 0, 0]
    assert result.metrics["length"]["mad"] == 0


# --- groups: the rows of one paper -----------------------------------------------------------------

def _normal(text):
    """A document as the group key reads it, written out here: NFC, white space runs as one space."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def _same_paper_same_group(examples, groups):
    """Two examples share a group exactly when their documents are the same text up to white space."""
    first_of = {}
    for example, group in zip(examples, groups):
        first_of.setdefault(_normal(example.document), group)
    assert [first_of[_normal(example.document)] for example in examples] == list(groups)
    assert len(set(groups)) == len(first_of)


def test_rows_of_one_paper_share_a_group_and_other_papers_do_not(tmp_path):
    """The release repeats a paper once per control setting and has no paper id: the group is a
    digest of the document, so a resample draws a paper with all its rows."""
    paper_a = "We propose a method.\nIt works on graphs."
    paper_b = "We study speech. Accents matter."
    texts = [paper_a, paper_b, "We propose a method. It works on graphs.",  # paper A, other line breaks
             paper_a + "  ", "We propose a method. It works on trees.", paper_b, "Cafe\u0301 data.", "Caf\u00e9 data."]
    path = write_csv(tmp_path / "test.csv", [row(text=text, length=str(i % 5)) for i, text in enumerate(texts)])
    dataset = ctrlkit.get_dataset("ccsbench", path=str(path))
    examples = dataset.load("test")
    groups = groups_of(examples, dataset)
    assert groups.tolist() == [0, 1, 0, 0, 2, 1, 3, 3]  # A, B, A, A, other paper, B, one NFC text twice
    _same_paper_same_group(examples, groups)
    digest = examples[0].meta["document_digest"]
    assert digest == hashlib.sha256(b"We propose a method. It works on graphs.").hexdigest()[:16]
    weights = resample_weights(groups, 50, 0)
    assert (weights[:, [0, 2, 3]] == weights[:, [0]]).all() and (weights[:, 1] == weights[:, 5]).all()
    assert not (weights[:, 0] == weights[:, 1]).all()


def test_the_shared_release_groups_each_paper_s_rows():
    root = shared_file("ccsbench")  # not part of ../shared/data yet: skips until it is added there
    dataset = ctrlkit.get_dataset("ccsbench", path=str(root))
    read = 0
    for subset in dataset.subsets() or [dataset.options["subset"]]:
        for split in ("train", "validation", "test"):
            subset_dataset = ctrlkit.get_dataset("ccsbench", path=str(root), subset=subset)
            try:
                examples = subset_dataset.load(split)
            except DatasetError as exc:
                if f"no {split} file" in str(exc):
                    continue
                raise
            groups = groups_of(examples, subset_dataset)
            _same_paper_same_group(examples, groups)
            read += 1
    assert read, f"{root}: no CCSBench split file found"
