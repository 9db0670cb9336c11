"""The openai backbone (summarizer and judge) against hostile servers on 127.0.0.1.

Secrets: a redirect never carries the key to another origin, nor turns the POST into a GET
whose answer is used; a key a server echoes (verbatim, split across lines, spaced out,
JSON-escaped, percent-encoded, cut short) is masked in error messages before they are cut, and
in answers before they become summaries or verdicts, so it reaches no file; a key no header
can carry is refused without being quoted. Resources: an answer larger than
max_response_bytes, endless, trickled a byte at a time (over HTTP or HTTPS) or preceded by
endless interim responses, or a Retry-After of years, each ends within the limits the options
set. See docs/reliability.md.

Every server here stops with its test: handler loops watch a stop event, sockets time out,
and server_close() joins every handler thread.
"""

import html
import json
import random
import re
import shutil
import sqlite3
import ssl
import subprocess
import threading
import time
import urllib.parse
import uuid
from contextlib import closing
from http.server import ThreadingHTTPServer

import pytest

import ctrlkit
from ctrlkit import CtrlkitError, ModelInput, OptionError
from ctrlkit.redaction import redact

from helpers.chat_server import JsonHandler
from helpers import run_ctrlkit

KEY = f"sk-proj-{uuid.uuid4().hex}Zq{uuid.uuid4().hex[:10]}"
RUN = 8  # a run of this many characters of the key counts as a leak


def completion(content: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}).encode()


def echoed_forms(key: str) -> dict[str, str]:
    """The key as a careless server might quote it."""
    return {
        "verbatim": key,
        "split across lines": f"{key[:11]}\n{key[11:30]}\r\n{key[30:]}",
        "one character at a time": " ".join(key),
        "JSON-escaped": json.dumps(f"{key[:9]}\n{key[9:]}")[1:-1],  # the text holds a backslash and n
        "unicode escapes": "".join(f"\\u{ord(c):04x}" for c in key),
        "percent-encoded": "".join(f"%{ord(c):02X}" for c in key),
        "percent-encoded twice": "".join(f"%25{ord(c):02X}" for c in key),
        "HTML references": "".join(f"&#{ord(c)};" for c in key),
        "cut to a prefix": key[:12],
        "a suffix": key[-10:],
        # round 3: the key's UTF-16 bytes, read as one byte a character (NULs between its
        # characters), as JSON escapes of those bytes, or read in the wrong byte order
        "UTF-16LE read as bytes": key.encode("utf-16-le").decode("latin-1"),
        "UTF-16BE read as bytes": key.encode("utf-16-be").decode("latin-1"),
        "UTF-16LE escapes": "".join(f"\\u{byte:04x}" for byte in key.encode("utf-16-le")),
        "UTF-16 in the wrong byte order": key.encode("utf-16-le").decode("utf-16-be"),
        # after round 3: invisible characters the masking did not know, and HTML references as
        # browsers read them (no semicolon, any number of leading zeros)
        "invisible operators between": "\u2061".join(key),
        "tag characters between": "".join(c + chr(0xE0000 + ord(c)) for c in key),
        "HTML references without semicolons": "".join(f"&#{ord(c)}" for c in key),
        "HTML references zero-padded": "".join(f"&#{ord(c):010d};" for c in key),
        "HTML hex references without semicolons": "".join(f"&#x{ord(c):x}" for c in key),
    }


IGNORABLE = [(0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
             (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
             (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
             (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF)]
"""Unicode 15's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt): characters a
text shows nothing for."""
_IGNORED = re.compile("[" + "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in IGNORABLE) + "]")


def leaks(text: str) -> list[str]:
    """The runs of RUN characters of KEY that ``text`` holds, as it is or once escapes, percent
    codes, HTML references and whitespace are undone (written apart from ctrlkit.redaction)."""
    plain = re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)), text)
    plain = urllib.parse.unquote(urllib.parse.unquote(html.unescape(plain)))
    plain = _IGNORED.sub("", re.sub(r"\\+[nrt]|\s+|\x00", "", plain))
    plain = "".join(chr(ord(c) >> 8) if ord(c) & 0xFF == 0 and 0x20 < ord(c) >> 8 < 0x7F else c for c in plain)
    return sorted({KEY[i : i + RUN] for i in range(len(KEY) - RUN + 1) for form in (text, plain)
                   if KEY[i : i + RUN] in form})


def test_the_leak_check_sees_every_form():
    for name, form in echoed_forms(KEY).items():
        assert leaks(f"before {form} after"), name
    assert leaks("nothing here, sk-proj and *** only") == []


def test_masking_covers_exactly_the_runs_of_8_or_more_characters_of_the_key():
    # against a brute force over every window, on small alphabets where runs overlap and repeat
    rng = random.Random(14)
    for trial in range(2000):
        alphabet = "abc" if trial % 2 else "abcdefgh"
        key = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 20)))
        run = min(8, len(key))
        pieces = []
        for _ in range(rng.randint(0, 8)):
            start = rng.randint(0, len(key))
            pieces.append(key[start : rng.randint(start, len(key))] if rng.random() < 0.4
                          else "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10))))
        text = "".join(pieces)
        covered = [False] * len(text)
        for i in range(len(text) - run + 1):
            if text[i : i + run] in key:
                covered[i : i + run] = [True] * run
        expected = re.sub(r"1+", "***", "".join("1" if c else ch for c, ch in zip(covered, text)))
        assert redact(text, key) == expected, (text, key)


@pytest.mark.parametrize("code", sorted({code for low, high in IGNORABLE for code in (low, (low + high) // 2, high)}
                                         | set(range(0xE0020, 0xE0080, 7)) | set(range(0xFE00, 0xFE10))),
                         ids=lambda code: f"U+{code:04X}")
def test_a_key_with_an_ignorable_character_between_its_characters_is_masked(code):
    # U+2061-2064, U+034F and the tag characters were missed after round 3; every default-ignorable
    # code point is checked, between each two characters, doubled, and at the run's edges
    char = chr(code)
    assert redact(f"key {char.join(KEY)} end", KEY) == "key *** end"
    assert redact(f"key {(char * 2).join(KEY[:20])}!", KEY) == "key ***!"
    assert char not in redact(f"key {char}{KEY}{char} end", KEY)


@pytest.mark.parametrize("reference", ["&#{};", "&#{}", "&#0000000{};", "&#00000000000000000000{}", "&#x{:x}",
                                       "&#X{:X};", "&#x00000{:x};", "&#x0000000000{:x}",
                                       "&amp;#{};", "&amp;amp;#x{:x};"])  # escaped twice, three times
def test_a_key_as_html_references_without_semicolons_or_padded_with_zeros_is_masked(reference):
    spelled = "".join(reference.format(ord(c)) for c in KEY)
    assert redact(f"key {spelled} end", KEY) == "key *** end"
    mixed = "".join(reference.format(ord(c)) if i % 3 == 0 else c for i, c in enumerate(KEY) if not c.isdigit())
    assert "***" in redact(mixed, "".join(c for c in KEY if not c.isdigit()))


def test_an_html_reference_past_any_code_point_stands_for_no_character():
    # browsers read every digit: &#1150 is one character (U+047E), not 's' then '0'; and a
    # number with more digits than any code point has is no character at all
    assert redact("&#1150" + KEY[1:], KEY) == "&#1150***"
    assert redact("&#x73a" + KEY[1:], KEY) == "&#x73a***"
    for nothing in ("&#0000000000000000000000;", "&#99999999;", "&#1150000000000000000000", "&#x110000",
                    "&#x" + "f" * 40 + ";"):
        assert redact(KEY[:7] + nothing + KEY[7:], KEY) == "***", nothing


# ------------------------------------------------------------------------------ hostile servers


class _Hostile(ThreadingHTTPServer):
    """A loopback server that answers every request with ``behave(handler, body)`` and records
    each request (method, path, headers)."""

    daemon_threads = False  # so server_close() joins every handler thread
    block_on_close = True

    def __init__(self, behave):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.behave = behave
        self.seen: list[dict] = []
        self.stop = threading.Event()
        self.origin = f"http://127.0.0.1:{self.server_address[1]}"
        self.url = f"{self.origin}/v1"

    def handle_error(self, request, client_address):
        """A client that hangs up mid-answer is what several tests want."""


class _Handler(JsonHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5  # a write to a client that stopped reading gives up, so no handler outlives its test

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers)})
        self.server.behave(self, body)

    do_GET = do_POST = do_PUT = do_HEAD = handle_any

    def pause(self, seconds: float) -> bool:
        """Sleep unless the test is over; False once it is."""
        return not self.server.stop.wait(seconds)


@pytest.fixture
def serve(monkeypatch):
    monkeypatch.setenv("no_proxy", "*")  # a proxy configured on the machine must not take 127.0.0.1
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    running = []

    def start(behave, tls: ssl.SSLContext | None = None) -> _Hostile:
        server = _Hostile(behave)
        if tls:
            server.socket = tls.wrap_socket(server.socket, server_side=True)
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
        thread.start()
        running.append((server, thread))
        return server

    yield start
    for server, thread in running:
        server.stop.set()
        server.shutdown()
        server.server_close()  # joins the handler threads
        thread.join(5)
        assert not thread.is_alive()


def backbone(server, **options):
    return ctrlkit.get_backbone("openai", **{"model": "m", "base_url": server.url, "api_key": KEY,
                                             "backoff": 0.01, "max_retries": 0, "timeout": 2.0, **options})


def within(seconds: float, call):
    """``call()``, failing the test instead of hanging when it takes longer than ``seconds``."""
    outcome = {}

    def target():
        try:
            outcome["value"] = call()
        except BaseException as error:  # handed to the test below
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def failure_of(model, inputs=None, seconds=10.0) -> str:
    """The one-line error ``model`` raises on ``inputs``; it must carry no part of the key."""
    with pytest.raises(CtrlkitError) as failure:
        within(seconds, lambda: model.generate(inputs or [ModelInput("doc")]))
    message = str(failure.value)
    assert "\n" not in message and message.startswith("backbone 'openai': request for input ")
    assert leaks(message) == [] and leaks(repr(failure.value.args)) == [], message
    return message


# ------------------------------------------------------------------------------ 1. redirects


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_is_refused_and_never_carries_the_key(serve, status):
    elsewhere = serve(lambda handler, body: handler.reply(200, completion("an answer from elsewhere")))

    def redirect(handler, body):
        handler.send_response(status)
        handler.send_header("Location", f"{elsewhere.url}/chat/completions?stolen={KEY}")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    endpoint = serve(redirect)
    message = failure_of(backbone(endpoint))
    assert f"HTTP {status} " in message and "redirects are not followed" in message
    assert f"(Location: {elsewhere.origin})" in message and "stolen" not in message
    assert len(endpoint.seen) == 1 and endpoint.seen[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert elsewhere.seen == []  # no request at all: no key, no GET whose answer became a summary


def test_a_redirect_within_the_same_origin_is_refused_too(serve):
    def redirect(handler, body):
        if handler.path.startswith("/v1/"):
            handler.send_response(307)
            handler.send_header("Location", "/v2/chat/completions")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
        else:
            handler.reply(200, completion("moved answer"))

    server = serve(redirect)
    assert "(Location: " + server.origin + ")" in failure_of(backbone(server))
    assert [request["path"] for request in server.seen] == ["/v1/chat/completions"]


# ------------------------------------------------------------------------------ 2. echoed keys


def _refuse_quoting(status: int, text: str, as_json: bool = True):
    def behave(handler, body):
        handler.reply(status, {"error": {"message": text}} if as_json else text.encode())
    return behave


@pytest.mark.parametrize("where", [150, 175, 190, 196, 250])
def test_a_key_quoted_near_or_past_the_cut_leaves_no_part_of_itself(serve, where):
    # the old code cut to 200 characters first, then looked for the whole key: a key crossing
    # the cut survived but for its tail
    text = "Incorrect API key provided: " + "x" * (where - 28) + KEY + " is not valid here. " + "y" * 300
    server = serve(_refuse_quoting(401, text))
    message = failure_of(backbone(server))
    assert "HTTP 401 Unauthorized: Incorrect API key provided: xxx" in message and len(message) < 320


@pytest.mark.parametrize("form", sorted(echoed_forms(KEY)))
@pytest.mark.parametrize("as_json", [True, False], ids=["json-error", "raw-body"])
def test_a_key_echoed_in_any_form_in_an_error_is_masked(serve, form, as_json):
    server = serve(_refuse_quoting(400, f"bad request from key {echoed_forms(KEY)[form]} (see docs)", as_json))
    message = failure_of(backbone(server))
    assert "HTTP 400 Bad Request: bad request from key *** (see docs)" in message, message


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
@pytest.mark.parametrize("status", [400, 200], ids=["error", "malformed-answer"])
def test_a_key_echoed_in_utf16_bytes_is_masked_in_the_error(serve, encoding, status):
    # the body in UTF-16 (with a byte-order mark for "utf-16"), read by ctrlkit as UTF-8
    body = "bad request from key ".encode() + KEY.encode(encoding) + b" (see docs)"
    server = serve(lambda handler, _: handler.reply(status, body))
    message = failure_of(backbone(server))
    assert "from key " in message and "***" in message and "\x00" not in message, message


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_a_key_in_utf16_inside_an_answer_is_masked_in_the_summary(serve, encoding):
    content = f"Summary. {KEY.encode(encoding).decode('latin-1')} End."  # JSON carries each NUL as \u0000
    server = serve(lambda handler, body: handler.reply(200, completion(content)))
    assert within(10, lambda: backbone(server).generate([ModelInput("doc")])) == ["Summary. *** End."]


def test_a_key_echoed_in_the_reason_phrase_or_a_malformed_answer_is_masked(serve):
    spaced = " ".join(KEY)

    def behave(handler, body):
        if len(handler.server.seen) == 1:
            handler.send_response(503, f"overloaded {spaced}")
            handler.send_header("Content-Length", "0")
            handler.end_headers()
        else:  # a 200 that is not a completion, quoting the key where the old cut fell
            handler.reply(200, ("<html>" + "z" * 180 + KEY + "</html>").encode())

    server = serve(behave)
    message = failure_of(backbone(server, max_retries=1))
    assert "malformed response" in message and "***" in message
    server.seen.clear()
    message = failure_of(backbone(server, max_retries=0))
    assert message.endswith("failed after 1 attempts: HTTP 503 overloaded ***"), message


@pytest.mark.parametrize("form", sorted(echoed_forms(KEY)))
def test_a_key_echoed_in_an_answer_never_becomes_part_of_the_summary(serve, form):
    server = serve(lambda handler, body: handler.reply(200, completion(f"Summary. {echoed_forms(KEY)[form]} End.")))
    summaries = within(10, lambda: backbone(server).generate([ModelInput("doc")]))
    assert summaries == ["Summary. *** End."] and leaks(summaries[0]) == []


HOSTILE_ANSWERS = {  # 1 MiB each, built to be slow for the patterns that mask the key
    "backslashes": "\\" * (1 << 20),
    "backslashes before u": ("\\" * 4000 + "u00") * 262,
    "the key's prefixes": (KEY[:7] + "\\") * (1 << 17),
    "a.a.a.": "a." * (1 << 19),
    "percent codes": ("%25" * 300 + "z") * 1160,
}


@pytest.mark.parametrize("where", ["error", "malformed", "answer"])
@pytest.mark.parametrize("name", sorted(HOSTILE_ANSWERS))
def test_a_hostile_answer_cannot_hold_a_request_past_its_timeout(serve, name, where):
    # round 3: masking such an answer took time quadratic in its length (a 60 KB answer held a
    # run with timeout=3 for 150 s); the whole call now ends within the timeout, plus the linear
    # time masking takes (well under one more timeout for 1 MiB)
    text = HOSTILE_ANSWERS[name]
    reply = {"error": (400, {"error": {"message": text}}), "malformed": (200, text.encode()),
             "answer": (200, completion(text))}[where]
    server = serve(lambda handler, body: handler.reply(*reply))
    model = backbone(server, timeout=3.0, max_response_bytes=8 << 20)
    if where == "answer":
        assert within(6.0, lambda: model.generate([ModelInput("doc")])) == [text]
    else:
        failure_of(model, seconds=6.0)


def test_fewer_than_8_characters_of_the_key_are_left_alone(serve):
    # each neighbour ends in a letter that is not hex, so no run of 8 arises across a space by chance
    answer = f"Summary about {KEY[:7]} tokens plus {KEY[9:16]}, written {KEY[-7:]}."
    server = serve(lambda handler, body: handler.reply(200, completion(answer)))
    assert within(10, lambda: backbone(server).generate([ModelInput("doc")])) == [answer]


def test_without_a_key_answers_are_left_alone(serve):
    answer = f"Summary with sk-proj-like text {KEY} that no key was given for."
    server = serve(lambda handler, body: handler.reply(200, completion(answer)))
    assert within(10, lambda: backbone(server, api_key="").generate([ModelInput("doc")])) == [answer]
    assert "Authorization" not in server.seen[0]["headers"]


def _echoing_chat(handler, body):
    """Summaries and judge verdicts that quote the key (forms taken in turn); the judge's
    answer to the summary of "Paper 2" is unparseable, so it is recorded as a failure."""
    request = json.loads(body)
    forms = handler.server.forms
    prompt = request["messages"][-1]["content"]
    number = int(re.findall(r"Paper (\d+)", prompt)[-1])
    if any("label the focus" in m["content"] for m in request["messages"] if m["role"] == "system"):
        if number == 2:
            content = f"I cannot label this; my key is {forms[number]}."
        else:
            content = json.dumps({"label": "empirical", "note": "key " + forms[number + 3]})
    else:
        content = f"Paper {number} summary, written with key {forms[number]}."
    handler.reply(200, completion(content))


UTF16_FORMS = [form for name, form in echoed_forms(KEY).items() if "UTF-16" in name]


@pytest.mark.parametrize("forms", [list(echoed_forms(KEY).values()), UTF16_FORMS * 2], ids=["any-form", "utf-16"])
def test_an_echoed_key_reaches_no_file_through_summaries_or_judge_verdicts(serve, tmp_path, forms):
    server = serve(_echoing_chat)
    server.forms = forms
    rows = [{"id": f"d{i}", "document": f"Paper {i} measures things.", "references": f"Paper {i} reports.",
             "controls": {"focus": "high"}} for i in range(5)]
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    env = {"OPENAI_BASE_URL": server.url, "CTRLKIT_CACHE_DIR": str(tmp_path / "cache"), "no_proxy": "*",
           "NO_PROXY": "*"}
    result = run_ctrlkit("run", "-d", "jsonl", "--data", str(data), "-b", "openai:gen", "-m", "focus",
                         "--judge", "openai:judge", "--no-baseline", "--set", f"openai.api_key={KEY}",
                         "--set", "focus.retries=1", "-o", str(tmp_path / "run"), env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert leaks(result.stdout + result.stderr) == []
    samples = [json.loads(line) for line in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    # not vacuous: the server quoted the key, and what came back was masked, not dropped
    assert [sample["prediction"] for sample in samples] == [f"Paper {i} summary, written with key ***."
                                                             for i in range(5)]
    assert "I cannot label this; my key is ***." in json.dumps(samples)  # the failed verdict's answer
    with closing(sqlite3.connect(tmp_path / "cache" / "cache.sqlite3")) as cache:
        verdicts = [json.loads(value) for (value,) in cache.execute("SELECT value FROM judge")]
    assert sorted(verdicts) == ['{"label": "empirical", "note": "key ***"}'] * 4  # only parsed ones are cached
    assert len(server.seen) == 5 + 5 + 1  # summaries, verdicts, and the unparseable one asked again
    written = [path for path in tmp_path.rglob("*") if path.is_file() and path != data]
    assert any(path.name.startswith("cache.sqlite3") for path in written) and len(written) >= 3
    found = {}
    for path in written:
        raw = path.read_bytes()
        for encoding in ("utf-8", "utf-16-le", "utf-16-be"):
            if hits := leaks(raw.decode(encoding, "ignore")):
                found[f"{path.relative_to(tmp_path)} ({encoding})"] = hits
    assert found == {}


def test_a_key_read_with_its_line_break_is_sent_without_it(serve, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", f"{KEY}\r\n")  # as read from a key file
    server = serve(lambda handler, body: handler.reply(200, completion("fine")))
    assert within(10, lambda: backbone(server, api_key="").generate([ModelInput("doc")])) == ["fine"]
    assert server.seen[0]["headers"]["Authorization"] == f"Bearer {KEY}"


@pytest.mark.parametrize("bad", ["\n", "\x00", " ", "\u00e9"])
def test_a_key_a_header_cannot_carry_is_refused_without_quoting_it(serve, tmp_path, bad):
    # http.client's own refusal is a traceback that quotes the header: the key
    key = KEY[:20] + bad + KEY[20:]
    with pytest.raises(ctrlkit.ConfigurationError) as refused:
        backbone(serve(lambda handler, body: None), api_key=key)
    assert "API key" in str(refused.value) and leaks(str(refused.value)) == [] and KEY[:20] not in str(refused.value)
    if bad == "\x00":
        return  # no environment variable can hold it
    data = tmp_path / "docs.jsonl"
    data.write_text(json.dumps({"id": "a", "document": "One. Two.", "references": "One."}) + "\n")
    result = run_ctrlkit("run", "-d", "jsonl", "--data", str(data), "-b", "openai:m", "-m", "rouge", "--no-baseline",
                         "--set", "openai.base_url=http://127.0.0.1:9/v1", "-o", str(tmp_path / "out"),
                         env={"OPENAI_API_KEY": key, "no_proxy": "*"}, cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr and "API key" in result.stderr
    assert leaks(result.stdout + result.stderr) == []


@pytest.mark.parametrize("base_url", ["file:///etc", "ftp://127.0.0.1/v1", "data:,x", "127.0.0.1:8000/v1"])
def test_a_base_url_that_is_not_http_is_refused(base_url, monkeypatch):
    with pytest.raises(ctrlkit.ConfigurationError, match=r"base_url .* must start with http:// or https://"):
        ctrlkit.get_backbone("openai:m", base_url=base_url)
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    with pytest.raises(ctrlkit.ConfigurationError):
        ctrlkit.get_backbone("openai:m")


# ------------------------------------------------------------------------------ 3. size, time, waits


def test_an_answer_announced_larger_than_the_cap_is_refused_unread(serve):
    def huge(handler, body):
        handler.send_response(200)
        handler.send_header("Content-Length", str(300_000_000))
        handler.end_headers()
        handler.wfile.write(b'{"choices": [' + b" " * 65536)

    message = failure_of(backbone(serve(huge), max_response_bytes=65536), seconds=5)
    assert message.endswith("failed: the answer has 300000000 bytes, more than max_response_bytes=65536 allows "
                            "(raise it with --set openai.max_response_bytes=N)")


def test_a_complete_answer_over_the_cap_is_refused_and_one_under_it_accepted(serve):
    content = "long summary " * 20_000  # 260 kB of valid completion
    server = serve(lambda handler, body: handler.reply(200, completion(content)))
    assert "more than max_response_bytes=65536" in failure_of(backbone(server, max_response_bytes=65536))
    assert within(10, lambda: backbone(server, max_response_bytes=400_000).generate([ModelInput("d")])) == [content]


def test_an_endless_chunked_answer_is_cut_at_the_cap(serve):
    sent = []

    def endless(handler, body):
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        chunk = b'{"choices": [' + b" " * 16_000
        # bounded, so a client that reads everything (the old code) costs 20 MB, not all memory
        while sum(sent) < 20_000_000 and not handler.server.stop.is_set():
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            sent.append(len(chunk))
        handler.pause(30)  # then never ends the answer

    message = failure_of(backbone(serve(endless), max_response_bytes=65536, timeout=3.0), seconds=8)
    assert message.endswith("failed: the answer has more bytes than max_response_bytes=65536 allows "
                            "(raise it with --set openai.max_response_bytes=N)")
    assert sum(sent) < 20_000_000  # the client hung up long before the server's own limit


@pytest.mark.parametrize("phase", ["headers", "body"])
def test_an_answer_trickled_a_byte_at_a_time_ends_at_the_timeout(serve, phase):
    data = completion("trickled summary")
    whole = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data)) + data
    head = whole.index(b"\r\n\r\n") + 4

    def trickle(handler, body):
        # every byte arrives well within the per-read timeout, so only a total deadline stops it
        fast, slow = (b"", whole) if phase == "headers" else (whole[:head], whole[head:])
        handler.wfile.write(fast)
        for byte in slow:
            if not handler.pause(0.05):
                return
            handler.wfile.write(bytes([byte]))

    server = serve(trickle)
    started = time.monotonic()
    message = failure_of(backbone(server, timeout=1.0, max_retries=1), seconds=8)
    assert message.endswith("failed after 2 attempts: no response within 1 s")
    assert time.monotonic() - started < 4  # two attempts of 1 s, not 2 x 230 bytes x 0.05 s
    assert len(server.seen) == 2


def test_endless_interim_responses_end_at_the_timeout(serve):
    def stall(handler, body):
        while handler.pause(0.05):  # "100 Continue" forever: the client skips each and waits for the next
            handler.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    started = time.monotonic()
    assert failure_of(backbone(serve(stall), timeout=1.0), seconds=8).endswith("no response within 1 s")
    assert time.monotonic() - started < 3


def _throttled(retry_after: str, answer: str):
    """A handler that answers the first request 429 with ``Retry-After: retry_after``, then ``answer``."""
    def throttle(handler, body):
        if len(handler.server.seen) == 1:
            handler.send_response(429)
            handler.send_header("Retry-After", retry_after)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
        else:
            handler.reply(200, completion(answer))
    return throttle


@pytest.mark.parametrize("retry_after", ["99999999", "Fri, 31 Dec 9999 23:59:59 GMT", "3600.5"])
def test_a_retry_after_of_years_waits_no_longer_than_max_retry_wait(serve, retry_after):
    server = serve(_throttled(retry_after, "after the wait"))
    started = time.monotonic()
    model = backbone(server, max_retries=1, max_retry_wait=0.3, backoff=0.01)
    assert within(5, lambda: model.generate([ModelInput("doc")])) == ["after the wait"]
    assert 0.25 <= time.monotonic() - started < 3  # waited the cap, not the years asked
    assert len(server.seen) == 2


@pytest.mark.parametrize("retry_after", ["-5", "nan", "inf", "1e999", "1" * 400, "soon",
                                         "Thu, 99 Foo 2025 25:61:00 GMT"])
def test_a_negative_or_unreadable_retry_after_leaves_the_backoff_to_decide(serve, retry_after):
    model = backbone(serve(_throttled(retry_after, "after the backoff")), max_retries=1, backoff=0.4,
                     max_retry_wait=30)
    started = time.monotonic()
    assert within(5, lambda: model.generate([ModelInput("doc")])) == ["after the backoff"]
    assert 0.15 <= time.monotonic() - started < 3  # the backoff's 0.2 to 0.6 s, neither 0 nor forever


@pytest.mark.parametrize("name", ["timeout", "backoff", "max_retry_wait", "temperature"])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-1"])
def test_a_non_finite_or_negative_time_is_refused_as_an_option(name, value):
    with pytest.raises(OptionError) as refused:
        ctrlkit.get_backbone("openai:m", **{name: value})
    assert f"option 'openai.{name}'" in str(refused.value) and "\n" not in str(refused.value)


def test_the_new_limits_are_transport_options_outside_the_cache_key():
    small = ctrlkit.get_backbone("openai:m", max_response_bytes=2048, max_retry_wait=1)
    assert small.identity() == ctrlkit.get_backbone("openai:m").identity()
    assert ctrlkit.get_backbone("openai:m").options["max_response_bytes"] == 4 * 1024 * 1024


def test_over_https_the_deadline_holds_too(serve, tmp_path, monkeypatch):
    """Hosted endpoints are HTTPS: the watched connection must still verify and speak TLS, and
    the watchdog must wake a read blocked inside TLS."""
    if not shutil.which("openssl"):
        pytest.skip("needs the openssl command to make a certificate")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "key.pem"),
                    "-out", str(tmp_path / "cert.pem")], check=True, capture_output=True, timeout=60)
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "cert.pem"))  # the client trusts this certificate only
    data = completion("over TLS")

    def answer(handler, body):
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(data))
        if len(handler.server.seen) == 1:
            handler.wfile.write(data)
            return
        for byte in data:  # the second time, trickled
            if not handler.pause(0.05):
                return
            handler.wfile.write(bytes([byte]))

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    server = serve(answer, tls=context)
    model = backbone(server, base_url=server.url.replace("http://", "https://"), timeout=1.0)
    assert within(10, lambda: model.generate([ModelInput("doc")])) == ["over TLS"]
    started = time.monotonic()
    assert failure_of(model, seconds=8).endswith("failed after 1 attempts: no response within 1 s")
    assert time.monotonic() - started < 3
