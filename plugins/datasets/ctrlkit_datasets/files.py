"""Examples from any JSONL or CSV file, with mappable field names.

Both read their file lazily, one line at a time: a run's ``--limit N`` reads the first N usable
lines and ``--sample N`` keeps N (``Dataset.iter_examples``). They spell their field options
alike (``id_field``, ``document_field``, ``references_field``, ``control_fields``), as the ``hf``
dataset does. A field an option names that no line read holds is an error naming the field, the
option and the file; a field some lines lack is read where it is (partial controls)."""

import csv
import logging
from pathlib import Path

from ctrlkit import Dataset, DatasetError, Example, Option
from ctrlkit.plugin_api import SKIP_INVALID
from ctrlkit.plugin_api import missing_field, read_jsonl, require_text

from .csvfiles import open_csv
from .hub import parse_renames

logger = logging.getLogger("ctrlkit")

_PATH = Option("path", str, "", "the file to read (--data)")
_ID = Option("id_field", str, "id", "field holding the example id (a row without it: its line number)")
_DOCUMENT = Option("document_field", str, "document", "field holding the source text")
_CONTROL_FIELDS = Option("control_fields", str, "", "comma-separated fields copied into the controls; "
                         "TARGET=SOURCE copies field SOURCE into control TARGET")



def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


class _FileDataset(Dataset):
    controls = None  # whatever the file holds
    noun = "field"
    """What errors call a record's named parts: a JSON object's fields, a CSV file's columns."""
    unit = "line"
    label = "jsonl"
    """The name it is registered under, for what ``__init__`` says (``name`` is set after it)."""
    renamed: dict[str, str] = {}
    """Old spellings of an option -> the option: still declared (so that a ``--set`` with one is
    taken), their value moved to the new option with one warning line."""

    def __init__(self, **options):
        defaults = {option.name: option.default for option in self.options}
        for old, new in self.renamed.items():
            if options.get(old, defaults[old]) != defaults[old]:
                logger.warning("ctrlkit: option %s.%s is deprecated; it is now %s.%s", self.label, old, self.label, new)
                if options.get(new, defaults[new]) == defaults[new]:
                    options[new] = options[old]
            options[old] = defaults[old]
        super().__init__(**options)
        self.given = frozenset(name for name, value in self.options.items() if value != defaults.get(name))
        """The options set to other than their defaults: a default field name no line holds is no
        mistake (a file without references), a field asked for by name is."""
        self.renames = parse_renames(self.options["control_fields"], f"{self.label}.control_fields")

    def load(self, split):
        return list(self.iter_examples(split))

    def iter_examples(self, split, keep=None):
        if split is not None:
            raise DatasetError(f"dataset '{self.name}' has no splits; point --data at the file you want")
        if not self.options["path"]:
            raise DatasetError(f"dataset '{self.name}' needs a file: --data PATH")
        return self._examples(keep)

    def mapped_fields(self) -> list[tuple[str, str]]:
        """``(field, option)`` for each field an option given by name maps."""
        mapped = [(self.options[option], option) for option in ("id_field", "document_field", "references_field",
                                                                   "controls_field")
                  if option in self.given and option in self.options]
        if self.noun == "column" and "references_field" in self.given:
            mapped = [pair for pair in mapped if pair[1] != "references_field"]
            mapped += [(field, "references_field") for field in _names(self.options["references_field"])]
        mapped += [(source, "control_fields") for _, source in self.renames]
        return [(field, option) for field, option in mapped if field]

    def _examples(self, keep):
        path = self.options["path"]
        mapped = self.mapped_fields()
        held: set[str] = set()
        first = None
        seen: set[str] = set()
        self.counted = self.skipped = 0
        read = 0
        try:
            for number, record in self._records():
                read += 1
                first = record if first is None else first
                held.update(field for field, _ in mapped if record.get(field) is not None)
                try:
                    example = self._example(record, f"{path}:{number}", number)
                except DatasetError:
                    if not self.options.get("skip_invalid"):
                        raise
                    self.skipped += 1
                    continue
                index, self.counted = self.counted, self.counted + 1
                if keep is not None and not keep(index):
                    continue
                # ids are checked among the examples kept: a run that keeps 5 holds 5 ids, not the file's
                if example.id in seen:
                    raise DatasetError(f"{path}: duplicate id {example.id!r}")
                seen.add(example.id)
                yield example
        except GeneratorExit:  # the reader stopped early (--limit): what was read must still hold each field
            self._check_held(mapped, held, first, read, early=True)
            raise
        self._check_held(mapped, held, first, read, early=False)

    def _check_held(self, mapped, held, first, read, early):
        for field, option in mapped:
            if field not in held and read:
                where = f"{self.options['path']} (no{'ne of the first ' + str(read) if early else ''} " \
                        f"{self.unit}{'s read' if early else ''} has it)"
                raise missing_field({} if first is None else {k: v for k, v in first.items() if k != field},
                                    field, where, f"{self.name}.{option}", self.noun)

    def _example(self, record, where, line):
        if self.options["document_field"] not in record:
            raise missing_field(record, self.options["document_field"], where, f"{self.name}.document_field",
                                self.noun)
        document = require_text(record, self.options["document_field"], where)
        identifier = record.get(self.options["id_field"])
        controls = self._controls(record, where)
        for target, field in self.renames:
            if field not in record:
                raise missing_field(record, field, where, f"{self.name}.control_fields", self.noun)
            controls[target] = record[field]
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
    """A CSV file with a header row; each column named in ``references_field`` is one reference."""

    noun = "column"
    unit = "row"
    label = "csv"
    renamed = {"reference_fields": "references_field"}

    options = (
        _PATH,
        _ID,
        _DOCUMENT,
        Option("references_field", str, "reference", "comma-separated columns, each holding one reference "
                                                     "(formerly reference_fields)"),
        _CONTROL_FIELDS,
        Option("delimiter", str, ",", "column delimiter"),
        Option("reference_fields", str, "", "deprecated: the old name of references_field"),
        SKIP_INVALID,
    )

    def _records(self):
        path = Path(self.options["path"])
        if not path.is_file():
            raise DatasetError(f"{path}: no such file")
        try:
            with open_csv(path) as file:
                reader = csv.DictReader(file, delimiter=self.options["delimiter"])
                for row in reader:
                    yield reader.line_num, row
        except (UnicodeDecodeError, csv.Error) as exc:
            raise DatasetError(f"{path}: cannot read as CSV ({exc})") from None

    def _references(self, record, where):
        references = []
        for field in _names(self.options["references_field"]):
            if field not in record:
                raise missing_field(record, field, where, f"{self.name}.references_field", self.noun)
            if (record[field] or "").strip():
                references.append(record[field])
        return references

    def _controls(self, record, where):
        return {}
