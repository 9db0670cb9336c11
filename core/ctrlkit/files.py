"""Reading and writing files: atomic writes (a reader sees the old file or the new one, never
half of one) and line-checked JSONL reading.

Every file ctrlkit writes goes through one path here. A file is written to a temporary file made
exclusively, with a random name, in the target's folder (so a link planted under a fixed name such
as ``NAME.partial`` is never written through), synced, and renamed over the target (which replaces
a link planted at the target's name instead of following it). A folder (a training checkpoint) is
built in a fresh temporary folder the same way and swapped in with :func:`replace_folder`: the old
one is renamed aside first and removed only once the new one is in place, so a kill at any moment
leaves a whole folder under one of the two names, and :func:`recover_folder` puts it back. A full
disk or any other failure is one CtrlkitError naming the file, with the old file left as it was
and no temporary file behind."""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
import stat
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Callable, Iterable, Iterator

from .errors import CtrlkitError, DatasetError, OptionError
from .outputs import missing_folders, removed_if_left_empty


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically; a failure (disk full, a folder in the way) is one
    CtrlkitError naming the file, and leaves the previous file and no temporary file (nor a folder made
    for it) behind. A lone
    surrogate, which UTF-8 cannot encode, is written as U+FFFD (a path from a non-UTF-8 file name)."""
    from .intake import replace_surrogates

    atomic_write_bytes(path, replace_surrogates(text).encode("utf-8"))


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, as :func:`atomic_write_text` writes text (a file made
    elsewhere, such as a sweep cell a Ray worker ran, is written here byte for byte)."""
    path = Path(path)
    try:
        with removed_if_left_empty(missing_folders(path.parent)):  # no folder made for a file not written
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_and_replace(path, data)
    except OSError as exc:
        raise CtrlkitError(f"cannot write {path}: {exc.strerror or exc}") from None


def _write_and_replace(path: Path, data: bytes | Callable[[IO[bytes]], None]) -> None:
    with _replacing(path) as file:
        if callable(data):
            data(file)
        else:
            file.write(data)


@contextmanager
def _replacing(path: Path) -> Iterator[IO[bytes]]:
    """A binary file that replaces ``path`` when the block ends without an error; on an error it
    is removed and ``path`` left as it was. A device node, pipe or socket at ``path`` (``-o
    /dev/null`` as root, a FIFO) is refused in one line, before and again just before the rename
    (never replaced by a regular file); a link there is replaced, never written through."""
    _refuse_special(path)
    # mkstemp opens with O_CREAT | O_EXCL under a random name: never a file or link someone planted
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes 0600; results are for sharing
        file = os.fdopen(handle, "wb")
        try:
            yield file
            file.flush()
            os.fsync(file.fileno())
        except BaseException:
            _close_failed(file)
            raise
        file.close()
        _refuse_special(path)
        os.replace(temporary, path)  # replaces a link at ``path``; never writes where it points
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _refuse_special(path: Path) -> None:
    """One CtrlkitError when ``path`` itself (not where a link there points) is a device node,
    FIFO or socket: replacing it by a regular file would destroy it (a system node such as
    ``/dev/null``) or leave a reader of the pipe waiting. A regular file, a link or nothing there is
    fine; a folder fails the rename with its own one-line message."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # nothing there (or an unreadable parent, which the write reports)
        return
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode)):
        raise CtrlkitError(f"{path} is not a regular file; refusing to replace it with one")


def _close_failed(file: IO[bytes]) -> None:
    """Close a file whose writing failed: the flush closing tries again would fail the same way (a
    full disk) and hide why the block failed."""
    try:
        file.close()
    except OSError:
        pass


@contextmanager
def atomic_stream(path: str | Path) -> Iterator["_NamingFailures"]:
    """A binary file to write ``path`` in pieces (a samples.jsonl scored chunk by chunk), made
    atomic as :func:`atomic_write_bytes` makes a whole write: ``path`` is replaced only when the
    block ends without an error. A failure of the disk is one CtrlkitError naming the file."""
    path = Path(path)
    writing = False
    try:
        with removed_if_left_empty(missing_folders(path.parent)):
            path.parent.mkdir(parents=True, exist_ok=True)
            with _replacing(path) as file:
                writing = True
                yield _NamingFailures(file, path)
                writing = False
    except OSError as exc:
        if writing:  # raised by the block's own work (reading its input), not by this file
            raise
        raise CtrlkitError(f"cannot write {path}: {exc.strerror or exc}") from None


class _NamingFailures:
    """A binary file whose failed write is one CtrlkitError naming ``path``."""

    def __init__(self, file: IO[bytes], path: Path):
        self.file, self.path = file, path

    def write(self, data: bytes) -> int:
        try:
            return self.file.write(data)
        except OSError as exc:
            raise CtrlkitError(f"cannot write {self.path}: {exc.strerror or exc}") from None


def atomic_write_with(path: str | Path, write: Callable[[IO[bytes]], None]) -> None:
    """Write ``path`` atomically by calling ``write`` with a binary file (``torch.save``,
    ``numpy.save``, ``savefig``), as :func:`atomic_write_bytes` writes bytes."""
    path = Path(path)
    try:
        with removed_if_left_empty(missing_folders(path.parent)):
            path.parent.mkdir(parents=True, exist_ok=True)
            _write_and_replace(path, write)
    except OSError as exc:
        raise CtrlkitError(f"cannot write {path}: {exc.strerror or exc}") from None


def _aside(folder: Path) -> Path:
    return folder.with_name(f".{folder.name}.old")


def recover_folder(folder: str | Path) -> bool:
    """Finish a :func:`replace_folder` that a kill interrupted: when ``folder`` is missing and the
    old copy set aside is there, it is put back (True); when both are there, the new one is whole
    and the old copy goes. A temporary folder a kill left half built goes too. A link at any of
    these names is not ours and is removed, never followed."""
    folder = Path(folder)
    aside = _aside(folder)
    try:
        for left in folder.parent.glob(f".{glob.escape(folder.name)}.*.tmp") if folder.parent.is_dir() else ():
            if left.is_dir() and not left.is_symlink():
                shutil.rmtree(left)
            else:
                left.unlink()
        if folder.is_symlink():
            folder.unlink()
        if aside.is_symlink() or (aside.exists() and not aside.is_dir()):
            aside.unlink()
        elif aside.is_dir():
            if folder.is_dir():
                shutil.rmtree(aside)
            elif not folder.exists():
                os.rename(aside, folder)
                return True
    except OSError as exc:
        raise CtrlkitError(f"cannot recover {folder} from {aside}: {exc.strerror or exc}") from None
    return False


def replace_folder(folder: str | Path, build: Callable[[Path], None]) -> None:
    """Make ``folder`` anew: ``build`` fills a fresh temporary folder beside it (made exclusively,
    with a random name, so a planted ``.NAME.tmp`` link is never written through), which then
    takes the place of the old one. The old one is renamed aside, the new one renamed in, and only
    then the old one removed: a kill at any moment leaves a whole folder (:func:`recover_folder`),
    and a failure (a full disk) leaves the old one as it was and no temporary folder."""
    folder = Path(folder)
    recover_folder(folder)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}.", suffix=".tmp"))
    except OSError as exc:
        raise CtrlkitError(f"cannot write {folder}: {exc.strerror or exc}") from None
    try:
        build(temporary)
        aside = _aside(folder)
        if folder.exists():
            os.rename(folder, aside)
        os.rename(temporary, folder)
    except BaseException as exc:
        shutil.rmtree(temporary, ignore_errors=True)
        recover_folder(folder)
        if isinstance(exc, OSError):
            raise CtrlkitError(f"cannot write {folder}: {exc.strerror or exc}") from None
        raise
    shutil.rmtree(aside, ignore_errors=True)


FILES_ASIDE = ".files.old"
"""The folder :func:`replace_files` sets old files aside in, inside the folder it writes."""
_JOURNAL = ".names"
LOADED_FIRST = ("config.json", "adapter_config.json")
"""The files a model loader reads first, without which a folder holds no model (Hugging Face's
and peft's): set aside first and moved in last, so that while files are swapped the folder holds
no loadable model rather than a half one."""


def replace_files(folder: str | Path, build: Callable[[Path], None], first: Iterable[str] = LOADED_FIRST) -> None:
    """Write the files ``build`` makes into ``folder`` (a trained model saved into ``--out``,
    beside other files) so that a reader finds the old set or the new one, never a mix.

    ``build`` fills a fresh temporary folder inside ``folder``. Files equal to those already there
    are left alone; when one file changed (a model saved again: its weights), it is renamed over
    the old one, atomically. When several did, each old one is renamed aside into
    ``FILES_ASIDE`` (the names in its journal, the ``first`` ones first) and each new one moved
    in (the ``first`` ones last), so a reader sees no model while they move, and a kill at any
    moment is undone by :func:`recover_files` (the old set put back). A failure (a full disk) is
    one CtrlkitError naming the folder, with the old files as they were."""
    folder = Path(folder)
    recover_files(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        temporary = Path(tempfile.mkdtemp(dir=folder, prefix=".files.", suffix=".tmp"))
    except OSError as exc:
        raise CtrlkitError(f"cannot write {folder}: {exc.strerror or exc}") from None
    try:
        build(temporary)
        names = sorted(os.listdir(temporary))
        changed = [name for name in names if not _same_file(temporary / name, folder / name)]
        if len(changed) == 1:
            os.replace(temporary / changed[0], folder / changed[0])
        elif changed:
            loaded_first = [name for name in first if name in names]
            moving = loaded_first + [name for name in changed if name not in loaded_first]
            aside = folder / FILES_ASIDE
            os.mkdir(aside)  # never an existing folder or a planted link: recover_files removed those
            atomic_write_text(aside / _JOURNAL, "\n".join(moving) + "\n")
            for name in moving:
                if os.path.lexists(folder / name):
                    os.rename(folder / name, aside / name)
            for name in reversed(moving):
                os.rename(temporary / name, folder / name)
            shutil.rmtree(aside)
    except BaseException as exc:
        recover_files(folder)
        shutil.rmtree(temporary, ignore_errors=True)
        if isinstance(exc, OSError):
            raise CtrlkitError(f"cannot write {folder}: {exc.strerror or exc}") from None
        raise
    shutil.rmtree(temporary, ignore_errors=True)


def recover_files(folder: str | Path) -> bool:
    """Undo a :func:`replace_files` that a kill interrupted: when files were set aside and not
    every new one was moved in, the new ones moved in are removed and the old ones put back (True);
    when every new one was, the old ones go. Temporary folders a kill left go too."""
    folder = Path(folder)
    aside = folder / FILES_ASIDE
    put_back = False
    try:
        if not folder.is_dir():
            return False
        pending = [path for path in folder.glob(".files.*.tmp") if path.is_dir() and not path.is_symlink()]
        if aside.is_symlink() or (aside.exists() and not aside.is_dir()):
            aside.unlink()
        elif aside.is_dir():
            journal = aside / _JOURNAL
            moving = journal.read_text(encoding="utf-8").split() if journal.is_file() else []
            waiting = {name for path in pending for name in os.listdir(path)}
            if any(name in waiting for name in moving):  # a kill before the last new file was in
                for name in moving:
                    if os.path.lexists(aside / name):
                        os.replace(aside / name, folder / name)
                    elif name not in waiting and os.path.lexists(folder / name):
                        os.unlink(folder / name)  # new, with no old one to put back
                put_back = True
            shutil.rmtree(aside)
        for path in folder.glob(".files.*.tmp"):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    except OSError as exc:
        raise CtrlkitError(f"cannot recover the files of {folder} from {aside}: {exc.strerror or exc}") from None
    return put_back


_COMPARED_BYTES = 64 << 20
"""Files up to this size are compared byte for byte to leave equal ones alone; larger ones (a
model's weights) are taken as changed."""


def _same_file(new: Path, old: Path) -> bool:
    if old.is_symlink() or not old.is_file() or not new.is_file():
        return False
    size = new.stat().st_size
    if size != old.stat().st_size or size > _COMPARED_BYTES:
        return False
    return new.read_bytes() == old.read_bytes()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def to_json(data, **options) -> str:
    """Strict JSON of ``data`` (no NaN, encodable as UTF-8). JSON data is written as it is, with
    these conversions only: a lone surrogate becomes U+FFFD, a NaN or infinity null, a numpy
    scalar or 0-d array the Python value it holds, a tuple a list, and a dict key that is a number,
    true/false or null its JSON text (as Python's json writes them). Anything else (a set, bytes,
    a Path, a Decimal, a complex number, a tuple as a key, an object, an integer of over 4,300
    digits, nesting over ``intake.MAX_DEPTH``) is one CtrlkitError naming the field, and nothing
    is written. Refused rather than turned into text: a results file is read back and compared
    (a sweep's settings, ``report``), and a value written as some other type (a set as a string,
    a Decimal as a rounded float) would read back as a different value without a word, while an
    object's text may hold what it should not (a key). Values from plugins and data are made
    plain where they enter (``ctrlkit.intake``), so this is a last guard against ctrlkit's own
    mistakes, which the generation cache makes cheap to rerun."""
    from .intake import Intake

    try:
        return json.dumps(Intake("output").value(data, "output"), ensure_ascii=False, allow_nan=False, **options)
    except (TypeError, ValueError):
        raise CtrlkitError(f"{unwritable(data)}; nothing was written") from None


def unwritable(data, where: str = "the value") -> str:
    """Where in ``data`` the first value that :func:`to_json` cannot write is, and what it is
    (``"field metrics.x is a set, not JSON data"``), found without recursion."""
    stack = [(data, ())]
    while stack:
        value, path = stack.pop()
        shown = "field " + ".".join(path) if path else where
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, (str, int, float, bool)) and key is not None:
                    return f"{shown} has a key of type {type(key).__name__}, not text"
            stack.extend((item, (*path, str(key))) for key, item in reversed(value.items()))
        elif isinstance(value, (list, tuple)):
            stack.extend((item, (*path[:-1], f"{path[-1]}[{i}]") if path else (f"[{i}]",))
                         for i, item in reversed(list(enumerate(value))))
        elif isinstance(value, int) and not isinstance(value, bool):
            if value.bit_length() > 14_000:  # over 4,214 digits: at or near the 4,300 Python writes
                return f"{shown} is an integer of about {int(value.bit_length() * 0.30103) + 1} digits, too long to write"
        elif not (value is None or isinstance(value, (str, float, bool)) or _numpy_scalar(value)):
            return f"{shown} is {_kind(value)}, not JSON data (text, a number, true/false, null, a list or an object)"
    return f"{where} cannot be written as JSON"


def _numpy_scalar(value) -> bool:
    return getattr(value, "shape", None) == () and callable(getattr(value, "item", None))


def _kind(value) -> str:
    name = type(value).__name__
    return f"an {name}" if name.lstrip("_")[:1].lower() in "aeiou" else f"a {name}"


def atomic_write_json(path: str | Path, data) -> None:
    """``data`` as strict JSON (:func:`to_json`) in ``path``, atomically; a value that cannot be
    written is one CtrlkitError naming the file and the field, with the old file left as it was."""
    try:
        text = to_json(data, indent=2)
    except CtrlkitError as exc:
        raise CtrlkitError(f"cannot write {path}: {exc}") from None
    atomic_write_text(path, text + "\n")


def jsonl_bytes(rows: Iterable[dict], name: str = "JSONL", first_line: int = 1) -> bytes:
    """The bytes :func:`atomic_write_jsonl` writes for ``rows`` (one strict JSON object a line); a
    row that cannot be written is one CtrlkitError naming ``name``, the line (the first row's is
    ``first_line``) and the field."""
    from .intake import replace_surrogates

    lines = []
    for number, row in enumerate(rows, first_line):
        try:
            lines.append(to_json(row) + "\n")
        except CtrlkitError as exc:
            raise CtrlkitError(f"cannot write {name} line {number}: {exc}") from None
    return replace_surrogates("".join(lines)).encode("utf-8")


def atomic_write_jsonl(path: str | Path, rows: Iterable[dict]) -> None:
    atomic_write_bytes(path, jsonl_bytes(rows, str(path)))


MAX_TEXT_FILE_BYTES = 1 << 20
"""The largest file an option may name as a text (a prompt, a judge template): one goes into every
request, so a larger file is a mistake, not a prompt."""


def read_text_file(path: str | Path, where: str) -> tuple[str, str]:
    """The UTF-8 text of the file at ``path`` with universal newlines (as ``read_text`` gives them),
    and the ``sha256:...`` of the bytes read, which a component records beside the option that named
    the file (``OPTION_digest``). An unreadable, non-UTF-8 or over-large (``MAX_TEXT_FILE_BYTES``)
    file, or one that is not a regular file (a folder, a pipe that would never end), is one
    OptionError starting with ``where`` (which names the option and the file)."""
    try:
        if os.path.exists(path) and not (os.path.isfile(path) or os.path.isdir(path)):
            raise OptionError(f"{where} is not a regular file")  # opening a pipe would wait for a writer
        with open(path, "rb") as file:
            raw = file.read(MAX_TEXT_FILE_BYTES + 1)
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise OptionError(f"{where} is not UTF-8 text") from None
    except OSError as exc:
        raise OptionError(f"{where} cannot be read: {exc.strerror or exc}") from None
    if len(raw) > MAX_TEXT_FILE_BYTES:
        raise OptionError(f"{where} is larger than {MAX_TEXT_FILE_BYTES // 1024} KiB, too large for a prompt")
    return text.replace("\r\n", "\n").replace("\r", "\n"), "sha256:" + hashlib.sha256(raw).hexdigest()


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict]]:
    """``(line number, object)`` for each non-blank line; errors name the file and line (one
    nested over ``intake.MAX_DEPTH`` deep too)."""
    for number, _, record in read_jsonl_offsets(path):
        yield number, record


def read_jsonl_offsets(path: str | Path) -> Iterator[tuple[int, int, dict]]:
    """:func:`read_jsonl` with where each line starts in the file: ``(line number, offset, object)``,
    so that a line can be read again alone (:func:`read_jsonl_line`)."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: {'not a regular file' if path.exists() else 'no such file'}")
    offset = 0
    with open(path, "rb") as file:
        for number, raw in enumerate(file, 1):
            line = _decoded(raw, path, number)
            if line.strip():
                yield number, offset, _parsed_line(line, path, number)
            offset += len(raw)


def read_jsonl_line(path: str | Path, offset: int, number: int) -> dict:
    """The object on the line ``number`` of ``path`` that starts at byte ``offset``, checked as
    :func:`read_jsonl` checks it."""
    path = Path(path)
    try:
        with open(path, "rb") as file:
            file.seek(offset)
            raw = file.readline()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    return _parsed_line(_decoded(raw, path, number), path, number)


def _decoded(raw: bytes, path: Path, number: int) -> str:
    """A line's text; the first line's byte order mark (some editors write one) is dropped."""
    try:
        return raw.decode("utf-8-sig" if number == 1 else "utf-8")
    except UnicodeDecodeError:
        raise DatasetError(f"{path}:{number}: not valid UTF-8") from None


class RepeatedKey(ValueError):
    """A JSON object that gives one key twice (a reader would silently keep the last value)."""


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    found = dict(pairs)
    if len(found) < len(pairs):
        seen: set[str] = set()
        repeated = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise RepeatedKey(f"key {json.dumps(repeated, ensure_ascii=False)[:80]} is given twice in one object")
    return found


def strict_json(text: str):
    """``json.loads`` that refuses an object giving one key twice (:class:`RepeatedKey`), where
    Python's parser keeps the last value without a word."""
    return json.loads(text, object_pairs_hook=_unique_keys)


def _parsed_line(line: str, path: Path, number: int) -> dict:
    from .intake import check_nesting, too_deep

    try:
        record = strict_json(line)
    except RepeatedKey as exc:
        raise DatasetError(f"{path}:{number}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{path}:{number}: invalid JSON ({exc.msg})") from None
    except RecursionError:  # nesting deeper than the parser's stack
        raise too_deep(f"{path}:{number}", DatasetError) from None
    except ValueError as exc:  # an integer of over 4300 digits
        raise DatasetError(f"{path}:{number}: invalid JSON ({exc})") from None
    if not isinstance(record, dict):
        raise DatasetError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
    return check_nesting(record, f"{path}:{number}", DatasetError)


def read_json(path: str | Path, expected: type | tuple[type, ...], error: type[CtrlkitError] = CtrlkitError,
              what: str = "JSON"):
    """The JSON value in ``path``, which must be an ``expected`` (dict, list, or a tuple of them);
    else one ``error`` naming the file (one nested over ``intake.MAX_DEPTH`` deep too)."""
    from .intake import check_nesting, too_deep

    path = Path(path)
    try:
        data = strict_json(path.read_text(encoding="utf-8"))
    except RecursionError:  # nesting deeper than the parser's stack
        raise too_deep(str(path), error) from None
    except (OSError, ValueError) as exc:  # ValueError: also bad UTF-8, JSON, huge integers
        raise error(f"{path}: cannot read as {what} ({exc})") from None
    check_nesting(data, str(path), error)
    if not isinstance(data, expected):
        kinds = " or ".join({dict: "object", list: "list"}[kind] for kind in
                            (expected if isinstance(expected, tuple) else (expected,)))
        raise error(f"{path}: expected a JSON {kinds}")
    return data


def require_text(record: dict, field: str, where: str, option: str | None = None) -> str:
    """The non-empty string in ``record[field]``, or a DatasetError naming ``where`` and the field
    (and, for a field the record lacks, the fields it has and ``option``, which names another)."""
    if field not in record:
        raise missing_field(record, field, where, option)
    if record[field] is None:
        raise DatasetError(f"{where}: field '{field}' is missing")
    value = record[field]
    if not isinstance(value, str):
        raise DatasetError(f"{where}: field '{field}' must be a string, got {type(value).__name__}")
    if not value.strip():
        raise DatasetError(f"{where}: field '{field}' is empty")
    return value


MAX_FIELDS_SHOWN = 20


def missing_field(record: dict, field: str, where: str, option: str | None = None,
                  noun: str = "field") -> DatasetError:
    """``where: field 'x' is missing (fields: a, b); --set OPTION=FIELD reads another`` (or, when
    ``record`` has the field with nothing in it, that it is empty); ``noun`` is "column" for a CSV."""
    if field in record:
        return DatasetError(f"{where}: {noun} '{field}' is empty")
    names = [_field_name(name) for name in record]
    shown = ", ".join(names[:MAX_FIELDS_SHOWN]) + (f" and {len(names) - MAX_FIELDS_SHOWN} more"
                                                   if len(names) > MAX_FIELDS_SHOWN else "")
    hint = f"; --set {option}={noun.upper()} reads another" if option else ""
    return DatasetError(f"{where}: {noun} '{field}' is missing ({noun}s: {shown or 'none'}){hint}")


def _field_name(name) -> str:
    """A record's field name as a message shows it: as it is, or quoted with its line breaks and
    other control characters escaped (a broken CSV header can hold a whole file) and cut to 60."""
    text = str(name)
    if text.isprintable() and len(text) <= 60:
        return text
    text = repr(text)
    return text if len(text) <= 60 else text[:57] + "..."
