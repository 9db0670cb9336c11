"""NEWTS (Bahrainian et al.): CNN/DailyMail articles, each with two LDA topics and a human
topic-focused summary per topic. Each CSV row gives two examples, one per topic.

Articles are split into train and test deterministically by a hash of ``docId``, so the topic
space (built from train) never sees the articles evaluated (test). A topic is defined by the
train summaries written for it and by its own description (words, phrases and sentence).
"""

import csv
import hashlib
from functools import cached_property
from pathlib import Path

from ctrlkit import Dataset, DatasetError, Example, Option

_COLUMNS = ("docId", "article", "tid1", "tid2", "words1", "words2", "phrases1", "phrases2",
            "sentences1", "sentences2", "summary1", "summary2")
_LABELS = {"words": "words", "phrases": "phrases", "sentences": "sentences", "id": "tid"}


class Newts(Dataset):
    """NEWTS CSV (e.g. NEWTS_test_600.csv): two topic-focused examples per article."""

    splits = ("train", "test")
    default_split = "test"
    controls = ("topic", "topic_id", "topic_words", "topic_phrases", "topic_sentences")
    options = (
        Option("path", str, "", "the NEWTS CSV file (--data)"),
        Option("test_fraction", float, 0.5, "share of articles in the test split", minimum=0.0, maximum=1.0),
        Option("topic_label", str, "words", "what names a topic in the controls", choices=tuple(_LABELS)),
        Option("topic_documents", str, "both", "what defines a topic for the topic space",
               choices=("both", "summaries", "descriptions")),
    )

    def load(self, split):
        self.check_split(split)
        return [example for row in self.rows if self._split(row) == split for example in self._examples(row)]

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
        """The CSV rows, checked; read once."""
        path = Path(self.options["path"]) if self.options["path"] else None
        if path is None:
            raise DatasetError("dataset 'newts' needs the NEWTS CSV: --data PATH (from ali-bahrainian/NEWTS)")
        if not path.is_file():
            raise DatasetError(f"{path}: no such file")
        try:
            with open(path, newline="", encoding="utf-8") as file:
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
                    rows.append(row)
        except (UnicodeDecodeError, csv.Error) as exc:
            raise DatasetError(f"{path}: cannot read as CSV ({exc})") from None
        return rows

    def _split(self, row) -> str:
        digest = hashlib.sha1(row["docId"].encode("utf-8")).digest()
        return "test" if int.from_bytes(digest[:8], "big") / 2**64 < self.options["test_fraction"] else "train"

    def _label(self, row, k) -> str:
        return _clean(row[f"{_LABELS[self.options['topic_label']]}{k}"])

    def _examples(self, row):
        for k in "12":
            yield Example(
                id=f"{row.get('AssignmentId') or row['line']}-{k}",
                document=row["article"],
                references=[row[f"summary{k}"]],
                controls={
                    "topic": self._label(row, k),
                    "topic_id": row[f"tid{k}"],
                    "topic_words": _clean(row[f"words{k}"]),
                    "topic_phrases": _clean(row[f"phrases{k}"]),
                    "topic_sentences": _clean(row[f"sentences{k}"]),
                },
                meta={"doc_id": row["docId"], "line": row["line"]},
            )


def _clean(description: str) -> str:
    return description.strip().rstrip(",").strip()
