"""Examples from any JSONL or CSV file, with mappable field names."""

import csv
from pathlib import Path

from ctrlkit import Dataset, DatasetError, Example, Option
from ctrlkit.plugin_api import SKIP_INVALID
from ctrlkit.plugin_api import missing_field, read_jsonl, require_text

from .csvfiles import open_csv

_PATH = Option("path", str, "", "the file to read (--data)")
_ID = Option("id_field", str, "id", "field holding the example id (a row without it: its line number)")
_DOCUMENT = Option("document_field", str, "document", "field holding the source text")
_CONTROL_FIELDS = Option("control_fields", str, "", "comma-separated fields copied into the controls")


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


class _FileDataset(Dataset):
    controls = None  # whatever the file holds
    noun = "field"
    """What errors call a record's named parts: a JSON object's fields, a CSV file's columns."""

    def load(self, split):
        if split is not None:
            raise DatasetError(f"dataset '{self.name}' has no splits; point --data at the file you want")
        if not self.options["path"]:
            raise DatasetError(f"dataset '{self.name}' needs a file: --data PATH")
        examples = self.build_examples(
            self._records(), lambda numbered: self._example(numbered[1], f"{self.options['path']}:{numbered[0]}",
                                                            numbered[0]))
        seen = set()
        for example in examples:
            if example.id in seen:
                raise DatasetError(f"{self.options['path']}: duplicate id {example.id!r}")
            seen.add(example.id)
        return examples

    def _example(self, record, where, line):
        if self.options["document_field"] not in record:
            raise missing_field(record, self.options["document_field"], where, f"{self.name}.document_field",
                                self.noun)
        document = require_text(record, self.options["document_field"], where)
        identifier = record.get(self.options["id_field"])
        controls = self._controls(record, where)
        for field in _names(self.options["control_fields"]):
            if field not in record:
                raise missing_field(record, field, where, f"{self.name}.control_fields", self.noun)
            controls[field] = record[field]
        references = self._references(record, where)
        return Example(
            id=str(line) if identifier in (None, "") else str(identifier),
            document=document,
            references=references,
            controls=controls,
            meta={"source": where},
        )


class JsonlDataset(_FileDataset):
    """One JSON object per line: ``{"id", "document", "references": [...] or "...", "controls": {...}}``."""

    options = (
        _PATH,
        _ID,
        _DOCUMENT,
        Option("references_field", str, "references", "field holding a reference or a list of them"),
        Option("controls_field", str, "controls", "field holding the controls object"),
        _CONTROL_FIELDS,
        SKIP_INVALID,
    )

    def _records(self):
        return read_jsonl(self.options["path"])

    def _references(self, record, where):
        field = self.options["references_field"]
        value = record.get(field)
        if value is None:
            return []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise DatasetError(f"{where}: field '{field}' must be a string or a list of strings")
        return [item for item in value if item.strip()]

    def _controls(self, record, where):
        field = self.options["controls_field"]
        value = record.get(field, {})
        if not isinstance(value, dict):
            raise DatasetError(f"{where}: field '{field}' must be an object")
        return dict(value)


class CsvDataset(_FileDataset):
    """A CSV file with a header row; each column named in ``reference_fields`` is one reference."""

    noun = "column"

    options = (
        _PATH,
        _ID,
        _DOCUMENT,
        Option("reference_fields", str, "reference", "comma-separated columns, each holding one reference"),
        _CONTROL_FIELDS,
        Option("delimiter", str, ",", "column delimiter"),
        SKIP_INVALID,
    )

    def _records(self):
        path = Path(self.options["path"])
        if not path.is_file():
            raise DatasetError(f"{path}: no such file")
        try:
            with open_csv(path) as file:
                reader = csv.DictReader(file, delimiter=self.options["delimiter"])
                rows = [(reader.line_num, row) for row in reader]
        except (UnicodeDecodeError, csv.Error) as exc:
            raise DatasetError(f"{path}: cannot read as CSV ({exc})") from None
        return rows

    def _references(self, record, where):
        references = []
        for field in _names(self.options["reference_fields"]):
            if field not in record:
                raise missing_field(record, field, where, f"{self.name}.reference_fields", self.noun)
            if (record[field] or "").strip():
                references.append(record[field])
        return references

    def _controls(self, record, where):
        return {}
