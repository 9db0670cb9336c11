"""EntSUM (Maddela, Kulkarni and Preotiuc-Pietro, "EntSUM: A Data Set for Entity-Centric
Extractive Summarization", ACL 2022): New York Times articles, each with human summaries
centred on one named entity. One example per (document, entity): the control is
``{"entity": name}`` and the references are that pair's summaries (one per annotator).

The release (huggingface.co/datasets/bloomberg/entsum, also Zenodo record 6359875) is three
JSONL files, ``nyt_annotated_one_annotation.jsonl``, ``..._two_annotation.jsonl`` and
``..._all_annotation.jsonl`` (both together). Its card says each line holds the NYT document
id, the sentence ids, the summary(s), the salient sentences and the summary sentences; the
article text is not released (it comes from the NYT Annotated Corpus, LDC2008T19), so the user
supplies it with the ``texts`` option: a JSONL file with one object per document
(``{"doc_id": ..., "text": ...}``), or a folder of ``DOC_ID.txt`` files.

Assumed, not confirmed (the card does not name its keys): the document id, entity and summary
are the fields ``doc_id``, ``entity`` and ``summary``; change them with the ``*_field``
options. A summary is a string, a list of strings (one per annotator), or a list of lists
of sentences (one per annotator). Lines for the same (document, entity) pair are merged into
one example, their summaries pooled as references.
"""

from pathlib import Path

from ctrlkit import Dataset, DatasetError, Example, Option
from ctrlkit.files import read_jsonl, require_text
from ctrlkit.options import SKIP_INVALID

FILES = {name: f"nyt_annotated_{name}_annotation.jsonl" for name in ("one", "two", "all")}


class EntSum(Dataset):
    """EntSUM annotation JSONL plus user-supplied article texts: entity-centric examples."""

    controls = ("entity",)
    options = (
        Option("path", str, "", "an EntSUM JSONL file, or the folder holding the release's three (--data)"),
        Option("annotations", str, "all", "which release file a folder gives", choices=tuple(FILES)),
        Option("texts", str, "", "the article texts: a JSONL file (one object per document) or a folder of "
                                 "DOC_ID.txt files"),
        Option("texts_id_field", str, "doc_id", "field of a texts JSONL object holding the document id"),
        Option("texts_text_field", str, "text", "field of a texts JSONL object holding the article text"),
        Option("doc_id_field", str, "doc_id", "annotation field holding the NYT document id"),
        Option("entity_field", str, "entity", "annotation field holding the entity name"),
        Option("summary_field", str, "summary", "annotation field holding the summary or summaries"),
        SKIP_INVALID,
    )

    def load(self, split):
        if split is not None:
            raise DatasetError(f"dataset '{self.name}' has no splits; choose the file with --data "
                               f"or --set {self.name}.annotations=one|two|all")
        path = self._annotation_file()
        lines = list(read_jsonl(path))
        if lines:
            self._check_fields(path, lines[0][1])
        texts = self._texts()
        examples = self.build_examples(lines, lambda line: self._example(path, *line, texts))
        return _merged(examples)

    def _annotation_file(self) -> Path:
        if not self.options["path"]:
            raise DatasetError(f"dataset '{self.name}' needs an EntSUM annotation file: --data PATH "
                               "(nyt_annotated_all_annotation.jsonl from bloomberg/entsum)")
        path = Path(self.options["path"])
        return path / FILES[self.options["annotations"]] if path.is_dir() else path

    def _check_fields(self, path, first: dict) -> None:
        """Refuse, naming the fields there are, a file whose first line lacks a mapped field."""
        for option in ("doc_id_field", "entity_field", "summary_field"):
            if self.options[option] not in first:
                raise DatasetError(f"{path}:1: field '{self.options[option]}' is missing (fields: "
                                   f"{', '.join(first)}); set {self.name}.{option}")

    def _texts(self):
        """``doc_id -> text`` lookup: a dict from a JSONL file, or a reader of a folder's files."""
        if not self.options["texts"]:
            raise DatasetError(f"dataset '{self.name}' needs the article texts, which EntSUM does not release: "
                               f"--set {self.name}.texts=PATH (a JSONL file or a folder of DOC_ID.txt files "
                               "made from the NYT Annotated Corpus)")
        source = Path(self.options["texts"])
        if source.is_dir():
            return _FolderTexts(source)
        texts = {}
        for number, record in read_jsonl(source):
            where = f"{source}:{number}"
            identifier = record.get(self.options["texts_id_field"])
            if identifier in (None, ""):
                raise DatasetError(f"{where}: field '{self.options['texts_id_field']}' is missing")
            texts[str(identifier)] = require_text(record, self.options["texts_text_field"], where)
        return texts

    def _example(self, path, number, record, texts) -> Example:
        where = f"{path}:{number}"
        doc_id = record.get(self.options["doc_id_field"])
        if doc_id in (None, ""):
            raise DatasetError(f"{where}: field '{self.options['doc_id_field']}' is missing")
        doc_id = str(doc_id)
        entity = require_text(record, self.options["entity_field"], where).strip()
        text = texts.get(doc_id)
        if not text or not text.strip():
            raise DatasetError(f"{where}: no text for document '{doc_id}' in {self.options['texts']}")
        return Example(
            id=f"{doc_id}:{entity}",
            document=text,
            references=_summaries(record.get(self.options["summary_field"]), f"{where}: field "
                                                                          f"'{self.options['summary_field']}'"),
            controls={"entity": entity},
            meta={"doc_id": doc_id, "source": where},
        )


class _FolderTexts:
    """``DOC_ID.txt`` files of a folder, read when asked for."""

    def __init__(self, folder: Path):
        self.folder = folder

    def get(self, doc_id: str) -> str | None:
        path = self.folder / f"{doc_id}.txt"
        return path.read_text(encoding="utf-8") if path.is_file() else None


def _summaries(value, where) -> list[str]:
    """A string, a list of strings (one per annotator) or a list of lists of sentences."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise DatasetError(f"{where} must be a string or a list, got {type(value).__name__}")
    summaries = []
    for item in items:
        if isinstance(item, list) and all(isinstance(sentence, str) for sentence in item):
            item = " ".join(sentence.strip() for sentence in item)
        if not isinstance(item, str):
            raise DatasetError(f"{where} must hold strings or lists of sentences")
        if item.strip():
            summaries.append(item.strip())
    if not summaries:
        raise DatasetError(f"{where} is empty")
    return summaries


def _merged(examples: list[Example]) -> list[Example]:
    """One example per (document, entity): later lines' summaries join the first's references."""
    by_id: dict[str, Example] = {}
    for example in examples:
        first = by_id.setdefault(example.id, example)
        if first is not example:
            first.references.extend(r for r in example.references if r not in first.references)
    return list(by_id.values())
