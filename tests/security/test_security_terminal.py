"""No line ctrlkit prints can drive the terminal it is printed on: errors (a server's body or
reason phrase, a value given on the command line, a name from data), warning lines through the
"ctrlkit" logger, progress lines and what commands echo all show a control character (ESC with
its CSI and OSC sequences, the C1 controls, a lone CR) and a bidirectional override as U+FFFD, as
the printed tables always did. See docs/reliability.md (Round 3: terminal output).
"""

import io
import json
import logging
import sys

import click
import pytest

from ctrlkit.progress import say

from helpers import invoke_ctrlkit, run_ctrlkit
from helpers.chat_server import JsonHandler, serving

ATTACKS = {
    "clipboard write (OSC 52)": "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07",
    "screen clear (CSI)": "\x1b[2J\x1b[H",
    "fake coloured text": "\x1b[32mok: all tests passed\x1b[0m",
    "C1 CSI": "\x9b31mred",
    "C1 OSC with ST": "\x9d8;;http://evil/\x9c",
    "hyperlink": "\x1b]8;;http://127.0.0.1:9/\x1b\\link\x1b]8;;\x1b\\",
    "bidi override": "abc\u202edcba\u202c",
    "bidi isolate and marks": "\u2066x\u2069\u200f\u061c",
    "lone CR rewriting the line": "harmless\rctrlkit: done, 0 errors",
    "backspaces": "secret\b\b\b\b\b\bpublic",
    "NUL and DEL": "a\x00b\x7f",
}
FORBIDDEN = "".join(chr(c) for c in [*range(0, 9), *range(11, 32), *range(0x7F, 0xA0)]) + \
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"


def assert_inert(text: str) -> None:
    bad = sorted({f"U+{ord(char):04X}" for char in text if char in FORBIDDEN})
    assert bad == [], f"{bad} in {text!r}"


ALL = "".join(ATTACKS.values())


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_a_progress_line_shows_no_control(capsys, attack):
    say(f"generate [{ATTACKS[attack]}]: 1/2 examples")
    err = capsys.readouterr().err
    assert_inert(err)
    assert err.startswith("ctrlkit: generate [") and err.endswith(" examples\n") and "\ufffd" in err


def test_what_a_command_prints_passes_through_visible_on_both_streams(monkeypatch):
    from ctrlkit.progress import visible_output

    monkeypatch.setattr(logging.getLogger(), "handlers", [])  # pytest's own: logging's last resort prints
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        with visible_output():
            click.echo(f"table | {ALL} |")
            click.echo(f"note: {ALL}", err=True)
            print(ALL, file=sys.stderr)
            logging.getLogger("ctrlkit").warning("ctrlkit: metric %r failed: %s", ALL, ALL)  # last resort
            sys.stdout.writelines([ALL, "\n"])
        assert (sys.stdout, sys.stderr) == (out, err)  # put back
    finally:
        sys.stdout, sys.stderr = saved
    assert_inert(out.getvalue())
    assert_inert(err.getvalue())
    assert out.getvalue().count("\n") == 2 and err.getvalue().count("\n") == 3  # line breaks kept
    assert "table | " in out.getvalue() and "metric " in err.getvalue()


def test_the_stream_underneath_is_the_one_for_the_bar():
    from ctrlkit.progress import VisibleStream, unfiltered

    raw = io.StringIO()
    assert unfiltered(VisibleStream(raw)) is raw and unfiltered(raw) is raw


def test_a_command_line_value_quoted_back_in_an_error_is_inert(tmp_path):
    hostile = ALL.replace("\x00", "")  # an argument cannot hold a NUL
    result = invoke_ctrlkit("run", "--only-topics", hostile, "--limit", "1", "--no-baseline",
                            "-o", tmp_path / "run")
    assert result.returncode != 0 and "only_topics" in result.stderr
    assert_inert(result.stderr)
    result = invoke_ctrlkit("run", "-d", "jsonl", "--data", tmp_path / hostile.replace("/", ""))
    assert result.returncode != 0 and "no such file" in result.stderr
    assert_inert(result.stderr)
    result = invoke_ctrlkit("run", "--seed", hostile)  # click's own refusal quotes it too
    assert result.returncode != 0
    assert_inert(result.stderr)


def test_under_verbose_errors_are_still_inert(tmp_path, monkeypatch):
    monkeypatch.setenv("CTRLKIT_VERBOSE", "")  # --verbose sets it; put back after the test
    result = invoke_ctrlkit("--verbose", "run", "--only-topics", ALL.replace("\x00", ""), "--limit", "1",
                            "--no-baseline", "-o", tmp_path / "run")
    assert result.returncode != 0 and "only_topics" in result.stderr
    assert_inert(result.stderr)


class _Hostile(JsonHandler):
    """503 with a hostile reason phrase (retried: a warning line), then 400 with a hostile body."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append(self.path)
        if len(self.server.seen) == 1:
            self.send_response(503, "busy " + ATTACKS["screen clear (CSI)"] + ATTACKS["C1 CSI"] + "\u202e")
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.reply(400, {"error": {"message": ALL}})


def test_a_servers_reason_phrase_and_error_body_reach_the_terminal_inert(tmp_path):
    with serving(_Hostile) as server:
        result = run_ctrlkit("run", "-b", "openai:m", "--no-baseline", "--limit", "1", "--set", "openai.backoff=0",
                             "--set", "openai.max_retries=1", "-o", str(tmp_path / "run"),
                             env={"OPENAI_BASE_URL": server.url, "no_proxy": "*", "NO_PROXY": "*",
                                  "OPENAI_API_KEY": ""}, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "retrying" in result.stderr and "HTTP 400" in result.stderr, result.stderr  # both lines were printed
    assert_inert(result.stdout + result.stderr)


def test_a_hostile_topic_name_in_data_is_inert_in_warnings_and_tables(tmp_path):
    rows = [{"id": f"d{i}\x1b[2J", "document": "Some text about things. More text here.",
             "references": "Text.", "controls": {"topic": f"t{i % 2}{ALL}"}} for i in range(4)]
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = invoke_ctrlkit("run", "-d", "jsonl", "--data", data, "--no-baseline", "--only-topics", "nothing",
                            "-o", tmp_path / "run")
    assert result.returncode != 0 and "known topics" in result.stderr, result.stderr
    assert_inert(result.stderr + result.stdout)
