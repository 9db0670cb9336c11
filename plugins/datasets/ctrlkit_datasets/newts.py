"""NEWTS (Bahrainian et al.): CNN/DailyMail articles, each with two LDA topics and a human
topic-focused summary per topic. Each CSV row gives two examples, one per topic.

The official splits are two files, ``NEWTS_train_2400.csv`` and ``NEWTS_test_600.csv``: point
``--data`` at the folder holding both and each split is its file. Given one CSV file, its
articles are split into train and test deterministically by a hash of ``docId``, so the topic
space (built from train) never sees the articles evaluated (test); ``describe_split`` says
which of the two a run used. A topic is defined by the train summaries written for it and by its
own description (words, phrases and sentence).
"""

import csv
import hashlib
from functools import cached_property
from pathlib import Path

from ctrlkit import Dataset, DatasetError, Example, Option

from .csvfiles import open_csv

_COLUMNS = ("docId", "article", "tid1", "tid2", "words1", "words2", "phrases1", "phrases2",
            "sentences1", "sentences2", "summary1", "summary2")
_LABELS = {"words": "words", "phrases": "phrases", "sentences": "sentences", "id": "tid"}


class Newts(Dataset):
    """NEWTS CSV (e.g. NEWTS_test_600.csv): two topic-focused examples per article."""

    splits = ("train", "test")
    default_split = "test"
    controls = ("topic", "topic_id", "topic_words", "topic_phrases", "topic_sentences")
    group_field = "doc_id"  # two topics (two examples) per article; an article may recur in several rows
    options = (
        Option("path", str, "", "the folder holding NEWTS_train_2400.csv and NEWTS_test_600.csv (the official "
                                "splits), or one NEWTS CSV file, split by article (--data)"),
        Option("test_fraction", float, 0.5, "share of articles in the test split of a single file",
               minimum=0.0, maximum=1.0),
        Option("topic_label", str, "words", "what names a topic in the controls", choices=tuple(_LABELS)),
        Option("topic_documents", str, "both", "what defines a topic for the topic space",
               choices=("both", "summaries", "descriptions")),
    )

    def load(self, split):
        self.check_split(split)
        if self.split_files is not None and split not in self.split_files:
            raise DatasetError(f"{self.options['path']}: no NEWTS_{split}_*.csv file for split '{split}'")
        return [example for row in self.rows if self._split(row) == split for example in self._examples(row)]

    def describe_split(self, split) -> str:
        if self.split_files is not None:
            return f"the official {split} file, {self.split_files[split].name}"
        return (f"the {split} part of one file split by a hash of docId (test_fraction "
                f"{self.options['test_fraction']:g}); the official splits are two files: give their folder")

    @cached_property
    def split_files(self) -> dict[str, Path] | None:
        """``{split: file}`` when the path is a folder of official split files, else None."""
        path = Path(self.options["path"]) if self.options["path"] else None
        if path is None or not path.is_dir():
            return None
        files = {}
        for split in self.splits:
            found = sorted(f for f in path.iterdir() if f.is_file() and f.suffix.lower() == ".csv"
                           and f.name.lower().startswith(f"newts_{split}"))
            if len(found) > 1:
                raise DatasetError(f"{path}: {found[0].name} and {found[1].name} could both be the {split} split; "
                                   "keep one")
            if found:
                files[split] = found[0]
        if not files:
            raise DatasetError(f"{path}: no NEWTS_train_*.csv or NEWTS_test_*.csv file in this folder")
        return files

    def topic_documents(self):
        which = self.options["topic_documents"]
        documents = []
        descriptions = {}
        for row in self.rows:
            for k in "12":
                label = self._label(row, k)
                if which != "summaries":
                    descriptions[label] = " ".join(_clean(row[f"{kind}{k}"]) for kind in ("words", "phrases", "sentences"))
                if which != "descriptions" and self._split(row) == "train":
                    documents.append((label, row[f"summary{k}"]))
        return documents + sorted(descriptions.items())

    @cached_property
    def rows(self) -> list[dict]:
        """The CSV rows of every split file (or of the one file), checked; read once."""
        if not self.options["path"]:
            raise DatasetError("dataset 'newts' needs the NEWTS CSV files: --data FOLDER or FILE "
                               "(from ali-bahrainian/NEWTS)")
        if self.split_files is None:
            return self._read(Path(self.options["path"]), None)
        return [row for split, path in self.split_files.items() for row in self._read(path, split)]

    def _read(self, path: Path, split: str | None) -> list[dict]:
        if not path.is_file():
            raise DatasetError(f"{path}: no such file")
        try:
            with open_csv(path) as file:
                reader = csv.DictReader(file)
                missing = [column for column in _COLUMNS if column not in (reader.fieldnames or [])]
                if missing:
                    raise DatasetError(f"{path}: column '{missing[0]}' is missing (not a NEWTS CSV?)")
                rows = []
                for row in reader:
                    for column in ("article", "summary1", "summary2"):
                        if not (row[column] or "").strip():
                            raise DatasetError(f"{path}:{reader.line_num}: field '{column}' is empty")
                    short = [column for column in _COLUMNS if row[column] is None]
                    if short:  # the row ends before this column
                        raise DatasetError(f"{path}:{reader.line_num}: field '{short[0]}' is missing")
                    row["line"] = reader.line_num
                    row["split"] = split or self._hashed_split(row)
                    rows.append(row)
        except (UnicodeDecodeError, csv.Error) as exc:
            raise DatasetError(f"{path}: cannot read as CSV ({exc})") from None
        return rows

    def _line_id(self, row) -> str:
        """A row's line number, with its split file's name when there are two files."""
        return f"{row['split']}:{row['line']}" if self.split_files is not None else str(row["line"])

    @staticmethod
    def _split(row) -> str:
        return row["split"]

    def _hashed_split(self, row) -> str:
        digest = hashlib.sha1(row["docId"].encode("utf-8")).digest()
        return "test" if int.from_bytes(digest[:8], "big") / 2**64 < self.options["test_fraction"] else "train"

    def _label(self, row, k) -> str:
        return _clean(row[f"{_LABELS[self.options['topic_label']]}{k}"])

    def _examples(self, row):
        for k in "12":
            yield Example(
                id=f"{row.get('AssignmentId') or self._line_id(row)}-{k}",
                document=row["article"],
                references=[row[f"summary{k}"]],
                controls={
                    "topic": self._label(row, k),
                    "topic_id": row[f"tid{k}"],
                    "topic_words": _clean(row[f"words{k}"]),
                    "topic_phrases": _clean(row[f"phrases{k}"]),
                    "topic_sentences": _clean(row[f"sentences{k}"]),
                },
                meta={"doc_id": row["docId"], "line": row["line"], "split": row["split"]},
            )


def _clean(description: str) -> str:
    return description.strip().rstrip(",").strip()
