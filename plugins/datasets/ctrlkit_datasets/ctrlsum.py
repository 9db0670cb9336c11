"""CTRLsum's line-aligned files (He et al.): ``{split}.source``, ``{split}.target`` and
``{split}.oracleword``, line i of each belonging to example i.

An oracleword line holds the keywords of each summary sentence, groups separated by ``|`` and
words by spaces. ``keywords`` is every keyword word in order (duplicates removed), what the
``sr`` metric checks; ``keyword_groups`` keeps the groups as lists.
"""

from pathlib import Path

from ctrlkit import Dataset, DatasetError, Example, Option
from ctrlkit.options import SKIP_INVALID


class CtrlSum(Dataset):
    """CTRLsum source/target/oracleword files: keywords as controls."""

    splits = ("train", "val", "test")
    default_split = "test"
    controls = ("keywords", "keyword_groups")
    options = (
        Option("path", str, "", "folder holding {split}.source, .target and .oracleword (--data)"),
        SKIP_INVALID,
    )

    def load(self, split):
        self.check_split(split)
        if not self.options["path"]:
            raise DatasetError("dataset 'ctrlsum' needs the folder of its files: --data PATH")
        folder = Path(self.options["path"])
        columns = {kind: self._lines(folder / f"{split}.{kind}") for kind in ("source", "target", "oracleword")}
        counts = {kind: len(lines) for kind, lines in columns.items()}
        if len(set(counts.values())) != 1:
            raise DatasetError(f"{folder}: {split} files are not aligned (lines: " +
                               ", ".join(f"{kind} {n}" for kind, n in counts.items()) + ")")
        rows = zip(range(1, counts["source"] + 1), *columns.values())
        return self.build_examples(rows, lambda row: self._example(folder, split, *row))

    @staticmethod
    def _lines(path: Path) -> list[str]:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise DatasetError(f"{path}: no such file") from None
        except UnicodeDecodeError:
            raise DatasetError(f"{path}: not valid UTF-8") from None
        # lines end at "\n" only: str.splitlines would also cut at \x85, \u2028, \x0c ... inside a
        # line and shift every later line out of alignment with the other files
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        return lines  # read_text has already turned \r\n and \r into \n

    @staticmethod
    def _example(folder, split, line, source, target, oracleword) -> Example:
        for kind, text in (("source", source), ("target", target)):
            if not text.strip():
                raise DatasetError(f"{folder / f'{split}.{kind}'}:{line}: the line is empty")
        groups = [group.split() for group in oracleword.split("|") if group.split()]
        keywords = list(dict.fromkeys(word for group in groups for word in group))
        return Example(id=f"{split}-{line}", document=source.strip(), references=[target.strip()],
                       controls={"keywords": keywords, "keyword_groups": groups}, meta={"line": line})
