"""EntSUM (Maddela, Kulkarni and Preotiuc-Pietro, "EntSUM: A Data Set for Entity-Centric
Extractive Summarization", ACL 2022): New York Times articles, each with human summaries
centred on one named entity. One example per (document, entity): the control is
``{"entity": name}``, the references are that pair's summaries (one per annotator), and, where
the annotations give them, the controls ``salient_sentences`` and ``summary_sentences`` hold the
annotators' salient sentences and summary sentences (the guidance controller's ``salient`` and
``summary_sentences`` sources: the oracle Lead3-ent upper bound).

The release (huggingface.co/datasets/bloomberg/entsum, also Zenodo record 6359875) is three
JSONL files, ``nyt_annotated_one_annotation.jsonl``, ``..._two_annotation.jsonl`` and
``..._all_annotation.jsonl`` (both together). Its card says each line holds the NYT document
id, the sentence ids, the summary(s), the salient sentences and the summary sentences; the
article text is not released (it comes from the NYT Annotated Corpus, LDC2008T19), so the user
supplies it with the ``texts`` option: a JSONL file with one object per document
(``{"doc_id": ..., "text": ...}``), or a folder of ``DOC_ID.txt`` files.

Fields read from each annotation line (names assumed, not confirmed: the card does not name its
keys; change each with its ``*_field`` option):

- ``doc_id`` (required): the NYT document id, the key into ``texts``;
- ``entity`` (required): the entity name;
- ``summary`` (required): a string, a list of strings (one per annotator), or a list of lists
  of sentences (one per annotator);
- ``salient_sentences`` and ``summary_sentences`` (optional: absent, null or empty, the example
  simply lacks that control): a list of sentences (strings), a list of lists of them (one per
  annotator), or sentence indices (integers, 0-based, alone or in per-annotator lists) into the
  article. An index is resolved to the article's sentences as ``ctrlkit.text.sentences`` (pysbd)
  splits it, which need not be the annotators' splitter; an index outside the article is
  refused, naming file and line. Give sentences as strings where the release has them.

Any other field (the sentence ids) is ignored. Lines for the same (document, entity) pair are
merged into one example: their summaries pooled as references, their salient and summary
sentences pooled (each sentence once, in order of appearance).
"""

from pathlib import Path

from ctrlkit import Dataset, DatasetError, Example, Option
from ctrlkit.plugin_api import missing_field, read_jsonl, require_text
from ctrlkit.plugin_api import SKIP_INVALID
from ctrlkit.plugin_api import sentences

FILES = {name: f"nyt_annotated_{name}_annotation.jsonl" for name in ("one", "two", "all")}
ORACLE_CONTROLS = {"salient_field": "salient_sentences", "summary_sentences_field": "summary_sentences"}
"""Option naming the annotation field -> the control its sentences are stored in."""


class EntSum(Dataset):
    """EntSUM annotation JSONL plus user-supplied article texts: entity-centric examples."""

    controls = ("entity",)
    group_field = "doc_id"  # several entities per document
    optional_controls = tuple(ORACLE_CONTROLS.values())
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
        Option("salient_field", str, "salient_sentences", "annotation field holding the salient sentences "
                                                          "(strings or 0-based indices; optional)"),
        Option("summary_sentences_field", str, "summary_sentences", "annotation field holding the summary "
                                                                    "sentences (strings or 0-based indices; optional)"),
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
                raise missing_field(first, self.options[option], f"{path}:1", f"{self.name}.{option}")

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
                raise missing_field(record, self.options["texts_id_field"], where, f"{self.name}.texts_id_field")
            texts[str(identifier)] = require_text(record, self.options["texts_text_field"], where,
                                                  f"{self.name}.texts_text_field")
        return texts

    def _example(self, path, number, record, texts) -> Example:
        where = f"{path}:{number}"
        doc_id = record.get(self.options["doc_id_field"])
        if doc_id in (None, ""):
            raise missing_field(record, self.options["doc_id_field"], where, f"{self.name}.doc_id_field")
        doc_id = str(doc_id)
        entity = require_text(record, self.options["entity_field"], where, f"{self.name}.entity_field").strip()
        text = texts.get(doc_id)
        if not text or not text.strip():
            raise DatasetError(f"{where}: no text for document '{doc_id}' in {self.options['texts']}")
        references = _summaries(record.get(self.options["summary_field"]),
                                f"{where}: field '{self.options['summary_field']}'")
        controls = {"entity": entity}
        for option, control in ORACLE_CONTROLS.items():
            field = self.options[option]
            found = _oracle_sentences(record.get(field), text, f"{where}: field '{field}'", doc_id)
            if found:
                controls[control] = found
        return Example(id=f"{doc_id}:{entity}", document=text, references=references, controls=controls,
                       meta={"doc_id": doc_id, "source": where})


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


def _oracle_sentences(value, document: str, where: str, doc_id: str) -> list[str]:
    """Salient or summary sentences: None or absent gives none; strings are sentences; integers
    are 0-based indices into ``sentences(document)``; a list may hold per-annotator lists of either.
    Each sentence once, in order of appearance."""
    if value is None:
        return []
    items = [value] if isinstance(value, (str, int)) and not isinstance(value, bool) else value
    if not isinstance(items, list):
        raise DatasetError(f"{where} must be a list of sentences or sentence indices, got {type(value).__name__}")
    flat = [inner for item in items for inner in (item if isinstance(item, list) else [item])]
    found = []
    for item in flat:
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            raise DatasetError(f"{where} must hold sentences (strings), sentence indices (integers) or "
                               f"per-annotator lists of them, not {type(item).__name__}")
        if isinstance(item, int):
            split = sentences(document)
            if not 0 <= item < len(split):
                raise DatasetError(f"{where}: sentence index {item} is out of range: document '{doc_id}' has "
                                   f"{len(split)} sentences (0 to {len(split) - 1}, split by ctrlkit.text.sentences)")
            item = split[item]
        item = item.strip()
        if item and item not in found:
            found.append(item)
    return found


def _merged(examples: list[Example]) -> list[Example]:
    """One example per (document, entity): later lines' summaries join the first's references,
    and their salient and summary sentences the first's."""
    by_id: dict[str, Example] = {}
    for example in examples:
        first = by_id.setdefault(example.id, example)
        if first is example:
            continue
        first.references.extend(r for r in example.references if r not in first.references)
        for control in ORACLE_CONTROLS.values():
            pooled = first.controls.get(control, [])
            pooled += [s for s in example.controls.get(control, []) if s not in pooled]
            if pooled:
                first.controls[control] = pooled
    return list(by_id.values())
