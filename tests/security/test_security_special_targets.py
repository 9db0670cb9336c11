"""An output path (``-o``) naming a device node, a pipe or a socket: ctrlkit's one atomic write
path (``ctrlkit.files``) refuses it in one line and leaves it as it was, instead of replacing it
with a regular file (as root, ``-o /dev/null`` would have destroyed the system's node). A link
planted at the name is still replaced, never written through. Device nodes are not made here
(that needs root, and the real /dev is never touched): a FIFO and a socket stand for them, as the
check is the same (the name's own type, links not followed)."""
import json
import os
import socket
import stat
import tempfile
from pathlib import Path

import pytest

import ctrlkit
from ctrlkit.files import atomic_stream, atomic_write_bytes, atomic_write_json, atomic_write_text, atomic_write_with

from helpers import invoke_ctrlkit

WRITERS = {
    "text": lambda path: atomic_write_text(path, "text"),
    "bytes": lambda path: atomic_write_bytes(path, b"bytes"),
    "json": lambda path: atomic_write_json(path, {"a": 1}),
    "with": lambda path: atomic_write_with(path, lambda file: file.write(b"x")),
}


def _stream(path):
    with atomic_stream(path) as file:
        file.write(b"line\n")


WRITERS["stream"] = _stream


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_atomic_write_refuses_a_fifo_in_one_line_and_leaves_it(tmp_path, writer):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ctrlkit.CtrlkitError) as caught:
        WRITERS[writer](fifo)
    assert str(caught.value).startswith(f"{fifo} is not a regular file") and "\n" not in str(caught.value)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["fifo"]  # no temporary file left


def test_a_socket_is_refused_too(tmp_path):
    with tempfile.TemporaryDirectory(dir="/tmp") as short:  # a socket's path must be short
        path = Path(short) / "s"
        server = socket.socket(socket.AF_UNIX)
        try:
            server.bind(str(path))
            with pytest.raises(ctrlkit.CtrlkitError, match="is not a regular file"):
                atomic_write_text(path, "text")
            assert stat.S_ISSOCK(os.lstat(path).st_mode)
        finally:
            server.close()


def test_a_link_at_the_name_is_still_replaced_and_never_written_through(tmp_path):
    fifo, link = tmp_path / "fifo", tmp_path / "link"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    atomic_write_text(link, "text")
    assert not link.is_symlink() and link.read_text() == "text"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_agreement_and_meta_eval_refuse_a_fifo_as_their_output(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"given": {"paper": i, "system": f"s{i}", "human": i / 10},
                                        "scores": {"m": (i * 7 % 10) / 10}}) + "\n" for i in range(10)))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for argv in (["agreement", str(rows), "--field", "given.human", "--field", "scores.m", "--resamples", "0"],
                 ["meta-eval", str(rows), "--human", "given.human", "--resamples", "0"]):
        done = invoke_ctrlkit(*argv, "-o", str(fifo))
        stderr = done.stderr
        assert done.returncode != 0
        assert stderr.strip().splitlines()[-1] == f"Error: {fifo} is not a regular file; refusing to replace it " \
                                                  f"with one", stderr
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
