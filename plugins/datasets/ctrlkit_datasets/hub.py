"""Any Hugging Face ``datasets`` dataset, with its columns mapped to ctrlkit's fields.

The dataset is a Hub name (``--set hf.hub_name=cnn_dailymail --set hf.config=3.0.0``), or a local
copy (``--data PATH``): a folder written by ``save_to_disk``, or a folder of data files that
``datasets.load_dataset`` reads (CSV, JSON, Parquet). The split is passed to ``load_dataset``
as its ``split`` argument, so slices and sums work there (``--split "test[:100]"``,
``"train+validation"``); a ``save_to_disk`` folder of a DatasetDict takes a plain split name,
and one of a single Dataset is read whatever the split.

Columns map to fields by option: ``document_field``, ``references_field`` (a string or a list
of strings), ``id_field`` (else the row number) and ``control_fields`` (``topic=category``
copies the ``category`` column into the ``topic`` control).

``datasets`` is an optional dependency (``pip install 'ctrlkit-datasets[hf]'``), imported only
when a dataset is loaded.
"""

from pathlib import Path

from ctrlkit import Dataset, DatasetError, Example, Option, OptionError
from ctrlkit.plugin_api import require_text
from ctrlkit.plugin_api import SKIP_INVALID
from ctrlkit.plugin_api import hub_unreachable, is_local, offline_setting
from ctrlkit.plugin_api import quiet_new_imports
from ctrlkit.plugin_api import scrub_text

INSTALL = "pip install 'ctrlkit-datasets[hf]'"


def import_datasets():
    """The ``datasets`` module, or a DatasetError saying how to install it."""
    try:
        import datasets
    except ImportError:
        raise DatasetError(f"reading Hugging Face datasets needs the 'datasets' library: {INSTALL}") from None
    quiet_new_imports()
    return datasets


def load_hub(source: str, /, **arguments):
    """``datasets.load_dataset(source, **arguments)``, its failures as one-line DatasetErrors."""
    datasets = import_datasets()
    # with HF_HUB_OFFLINE set, datasets reads its cache at once; otherwise it would retry for a minute
    why = None if is_local(source) or offline_setting() else hub_unreachable()
    if why:
        raise DatasetError(scrub_text(f"{source!r} is not a local folder and the Hugging Face Hub cannot be reached "
                                      f"({why}); pass a local copy with --data PATH, or set HF_HUB_OFFLINE=1 to use "
                                      "one in the local Hub cache"))
    try:
        return datasets.load_dataset(source, **arguments)
    except ConnectionError as exc:
        raise DatasetError(scrub_text(f"cannot reach the Hugging Face Hub for '{source}' ({exc}); download a copy "
                                      "and pass it with --data PATH")) from None
    except (OSError, ValueError) as exc:
        raise DatasetError(scrub_text(f"cannot load '{source}' with datasets.load_dataset: "
                                      f"{' '.join(str(exc).split())}")) from None


def parse_renames(text: str, option: str) -> list[tuple[str, str]]:
    """``"topic=category,keywords"`` -> ``[("topic", "category"), ("keywords", "keywords")]``."""
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        target, _, source = (piece.strip() for piece in item.partition("="))
        if not target or ("=" in item and not source):
            raise OptionError(f"option '{option}' expects NAME or TARGET=SOURCE items, got {item!r}")
        pairs.append((target, source or target))
    return pairs


class HubDataset(Dataset):
    """A Hugging Face dataset (Hub name or local copy); one example per row."""

    splits = ("train", "validation", "test")
    default_split = "test"
    options = (
        Option("hub_name", str, "", "Hub name (or anything datasets.load_dataset takes)"),
        Option("path", str, "", "a local copy: a save_to_disk folder or a folder of data files (--data); "
                                "used instead of hub_name"),
        Option("config", str, "", "the dataset's configuration (load_dataset's second argument)"),
        Option("document_field", str, "document", "column holding the source text"),
        Option("references_field", str, "summary", "column holding a reference or a list of them ('' for none)"),
        Option("control_fields", str, "", "comma-separated columns copied into the controls; TARGET=SOURCE "
                                          "renames (topic=category)"),
        Option("id_field", str, "id", "column holding the example id (a row without it: its row number)"),
        SKIP_INVALID,
    )

    def __init__(self, **options):
        super().__init__(**options)
        self.renames = parse_renames(self.options["control_fields"], "hf.control_fields")

    def load(self, split):
        return list(self.iter_examples(split))

    def iter_examples(self, split, keep=None):
        """The rows one at a time (a ``datasets.Dataset`` is memory-mapped: ``--limit N`` reads N)."""
        if split is None:
            raise DatasetError(f"dataset '{self.name}' needs a split: --split NAME (e.g. test, or test[:100])")
        rows, label = self._rows(split)
        columns = set(rows.column_names)
        wanted = [(self.options["document_field"], "document_field"),
                  (self.options["references_field"], "references_field"),
                  *((column, "control_fields") for _, column in self.renames),
                  *([(self.options["id_field"], "id_field")] if self.options["id_field"] != "id" else [])]
        for column, option in wanted:
            if column and column not in columns:
                raise DatasetError(f"{label}: no column '{column}' (columns: {', '.join(sorted(columns))}); "
                                   f"--set {self.name}.{option}={'TARGET=' if option == 'control_fields' else ''}"
                                   "COLUMN reads another")
        return self._kept(self.built_examples(enumerate(rows, 1), lambda item: self._example(*item, label)), keep)

    def _kept(self, examples, keep):
        self.counted = 0
        for example in examples:
            index, self.counted = self.counted, self.counted + 1
            if keep is None or keep(index):
                yield example

    def _rows(self, split):
        """The split's rows (a ``datasets.Dataset``) and how errors name it."""
        source = self.options["path"] or self.options["hub_name"]
        if not source:
            raise DatasetError(f"dataset '{self.name}' needs a dataset: --data PATH or --set {self.name}.hub_name=NAME")
        label = f"{source}[{split}]"
        if self.options["path"] and _saved_to_disk(self.options["path"]):
            datasets = import_datasets()
            saved = datasets.load_from_disk(self.options["path"])
            if not isinstance(saved, datasets.DatasetDict):
                return saved, label
            if split not in saved:
                raise DatasetError(f"{source}: no split {split!r} (has {', '.join(saved)})")
            return saved[split], label
        return load_hub(source, name=self.options["config"] or None, split=split), label

    def _example(self, number, row, label):
        where = f"{label} row {number}"
        identifier = row.get(self.options["id_field"])
        return Example(
            id=str(number) if identifier in (None, "") else str(identifier),
            document=require_text(row, self.options["document_field"], where),
            references=_references(row, self.options["references_field"], where),
            controls={target: row[source] for target, source in self.renames if row[source] not in (None, "", [])},
            meta={"source": where},
        )


def _saved_to_disk(path: str) -> bool:
    """True for a folder written by ``save_to_disk`` (a DatasetDict's or a single Dataset's)."""
    return any((Path(path) / name).is_file() for name in ("dataset_dict.json", "state.json"))


def _references(row, field, where) -> list[str]:
    if not field or row[field] is None:
        return []
    value = [row[field]] if isinstance(row[field], str) else row[field]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DatasetError(f"{where}: field '{field}' must be a string or a list of strings")
    return [item for item in value if item.strip()]
