"""The openai backbone against a real chat-completions server on 127.0.0.1 that records requests."""

import json
import threading
import time

import pytest

import ctrlkit
from ctrlkit import ConfigurationError, CtrlkitError, ModelInput

from helpers.recording_chat import INSTRUCTION, KEY, ChatServer, Reply, closed_port, echo


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "*")  # a proxy configured on the machine must not take 127.0.0.1
    # a cache of its own: a loopback port can come back in a later test, whose run of the same model
    # on the same inputs would otherwise be answered from this test's cache
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def server():
    chat = ChatServer()
    thread = threading.Thread(target=chat.http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield chat
    chat.http.shutdown()
    chat.http.server_close()


def backbone(server, **options):
    return ctrlkit.get_backbone("openai", **{"model": "m", "base_url": server.url, "backoff": 0.01, **options})


def test_a_batch_runs_concurrently_and_keeps_input_order(server):
    # later inputs answer sooner, so completion order is the reverse of input order
    server.default = lambda request: Reply(body=echo(request).body, delay=0.3 - 0.03 * len(server.requests))
    summaries = backbone(server, concurrency=4).generate([ModelInput(f"doc {i}") for i in range(8)])
    assert summaries == [f"summary: {INSTRUCTION}\n\ndoc {i}" for i in range(8)]
    assert len(server.requests) == 8 and 1 < server.max_in_flight <= 4
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert set(request["body"]) == {"model", "messages", "temperature", "max_tokens"}
    assert (request["body"]["model"], request["body"]["temperature"], request["body"]["max_tokens"]) == ("m", 0.0, 256)
    assert "Authorization" not in request["headers"]  # no key: a local server needs none


def test_messages_pass_through_and_text_is_wrapped_with_instruction_and_guidance(server):
    chat = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Summarize: x"})
    inputs = [ModelInput("ignored", messages=chat), ModelInput("The document.", guidance="focus on sports")]
    backbone(server, base_url=server.url + "/", instruction="TL;DR please.", concurrency=1).generate(inputs)
    assert server.requests[0]["body"]["messages"] == list(chat)
    assert server.requests[1]["body"]["messages"] == [
        {"role": "user", "content": "TL;DR please.\n\nGuidance: focus on sports\n\nThe document."}]


@pytest.mark.parametrize("retry_after", ["0", "Wed, 21 Oct 2015 07:28:00 GMT"])
def test_429_waits_as_retry_after_says_then_succeeds(server, retry_after):
    server.replies = [Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": retry_after})]
    started = time.perf_counter()
    summaries = backbone(server, backoff=30.0).generate([ModelInput("doc")])  # backoff alone would wait ~30 s
    assert time.perf_counter() - started < 5
    assert summaries == [f"summary: {INSTRUCTION}\n\ndoc"] and len(server.requests) == 2


def test_server_errors_are_retried_until_retries_run_out_and_the_error_names_the_input(server):
    def fail_doc_1(request):
        return Reply(500, {"error": "boom"}) if request["body"]["messages"][-1]["content"].endswith("doc 1") \
            else echo(request)

    server.default = fail_doc_1
    with pytest.raises(CtrlkitError) as failure:
        backbone(server, max_retries=2, concurrency=1).generate([ModelInput(f"doc {i}") for i in range(3)])
    assert str(failure.value) == ("backbone 'openai': request for input 1 failed after 3 attempts: "
                                  "HTTP 500 Internal Server Error")
    contents = [r["body"]["messages"][-1]["content"] for r in server.requests]
    assert sum(content.endswith("doc 1") for content in contents) == 3


@pytest.mark.parametrize("body", [b"<html>Not Found</html>", {"choices": []},
                                  {"choices": [{"message": {"role": "assistant", "content": None}}]}])
def test_a_malformed_body_is_a_clear_error_without_retry(server, body):
    server.replies = [Reply(200, body)]
    with pytest.raises(CtrlkitError, match=r"^backbone 'openai': request for input 0 got a malformed response "
                                           r"\(no choices\[0\]\.message\.content string\)"):
        backbone(server).generate([ModelInput("doc")])
    assert len(server.requests) == 1


def test_a_timeout_is_retried_then_reported(server):
    server.default = lambda request: Reply(body=echo(request).body, delay=1.0)
    with pytest.raises(CtrlkitError, match=r"^backbone 'openai': request for input 0 failed after 2 attempts: "
                                           r"no response within 0\.2 s$"):
        backbone(server, timeout=0.2, max_retries=1).generate([ModelInput("doc")])
    assert len(server.requests) == 2


def test_a_server_never_reached_fails_at_once_in_one_line(monkeypatch, caplog):
    """Refused with the default backoff (1 s, then 2, 4, 8, 16: half a minute): not retried."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = f"http://127.0.0.1:{closed_port()}/v1"
    model = ctrlkit.get_backbone("openai:m", base_url=url)
    started = time.monotonic()
    with pytest.raises(CtrlkitError) as failed:
        model.generate([ModelInput("doc"), ModelInput("other")])
    assert time.monotonic() - started < 3
    message = str(failed.value)
    assert "\n" not in message and message.startswith("backbone 'openai': request for input ")
    assert f"cannot reach {url} (connection error: " in message and "refused" in message
    assert message.endswith("; check that this machine is online, the server runs and the address is right (--set "
                            "openai.base_url or $OPENAI_BASE_URL); no API key is set either ($OPENAI_API_KEY or "
                            "--set openai.api_key)")
    assert "retrying" not in caplog.text


def test_a_refused_connection_after_the_server_answered_is_retried_then_reported(server, caplog):
    """A server that answered and then went away (a restart) is worth waiting for, and the wait is said."""
    model = backbone(server, max_retries=2, backoff=0.01)
    assert model.generate([ModelInput("doc")]) == [f"summary: {INSTRUCTION}\n\ndoc"]
    server.http.shutdown()
    server.http.server_close()
    with caplog.at_level("WARNING", logger="ctrlkit"):
        with pytest.raises(CtrlkitError, match=r"input 0 failed after 3 attempts: connection error: .*refused"):
            model.generate([ModelInput("doc two")])
    said = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith("ctrlkit: backbone 'openai': connection error: ")
    assert said[0].endswith("; retrying with backoff (up to 3 attempts a request)")


def test_401_is_not_retried_and_the_key_never_leaks(server):
    def refuse(request):  # like hosted APIs, the server quotes the key it was given
        return Reply(401, {"error": {"message": f"Incorrect API key provided: {request['headers']['Authorization']}"}})

    server.default = refuse
    model = backbone(server, api_key=KEY)
    with pytest.raises(CtrlkitError) as failure:
        model.generate([ModelInput("doc")])
    assert str(failure.value) == ("backbone 'openai': request for input 0 failed: HTTP 401 Unauthorized: "
                                  "Incorrect API key provided: Bearer ***")
    assert len(server.requests) == 1 and server.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert model.options["api_key"] == "***"
    for text in (json.dumps(model.options), repr(model), str(failure.value), repr(failure.value)):
        assert KEY not in text


def test_a_long_server_message_is_cut_to_one_short_line(server):
    server.replies = [Reply(400, {"error": {"message": "bad request\n" + "x" * 5000}})]
    with pytest.raises(CtrlkitError) as failure:
        backbone(server).generate([ModelInput("doc")])
    message = str(failure.value)
    assert "HTTP 400 Bad Request: bad request xxx" in message and "\n" not in message and len(message) < 300
    assert len(server.requests) == 1


def test_the_spec_argument_sets_the_model(server):
    model = ctrlkit.get_backbone("openai:my-model", base_url=server.url)
    assert model.options["model"] == "my-model"
    model.generate([ModelInput("doc")])
    assert server.requests[0]["body"]["model"] == "my-model"


def test_the_environment_gives_base_url_and_key_which_stays_out_of_options(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = ctrlkit.get_backbone("openai:m")
    assert model.generate([ModelInput("doc")]) == [f"summary: {INSTRUCTION}\n\ndoc"]
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {KEY}"
    assert model.options["api_key"] == ""
    assert model.options["base_url"] == server.url  # the endpoint used is recorded, wherever it came from


def test_endpoints_given_by_the_environment_are_told_apart_in_the_cache_key(monkeypatch):
    """Two servers behind $OPENAI_BASE_URL may serve different weights under one model name:
    neither may be served the other's cached generations, nor a sweep reuse the other's cells."""
    identities = []
    for url in ("http://127.0.0.1:9/v1", "https://api.example/v1"):
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        identities.append(ctrlkit.get_backbone("openai:m").identity())
    assert identities[0] != identities[1]


def test_the_cache_key_holds_the_endpoints_in_any_order(monkeypatch):
    """Reordering endpoints only routes requests, so it keeps the key; adding or changing one does
    not, nor another model or temperature. One endpoint keeps the key it had before lists."""
    one, two = "http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"
    key = ctrlkit.get_backbone("openai:m", base_url=f"{one},{two}").identity()
    for base_url in (f"{two},{one}", f"{two}, {one}", [two, one]):
        assert ctrlkit.get_backbone("openai:m", base_url=base_url).identity() == key
    monkeypatch.setenv("OPENAI_BASE_URL", f"{two},{one}")
    assert ctrlkit.get_backbone("openai:m").identity() == key
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert key["options"]["model"] == "m" and key["options"]["base_url"] == ",".join(sorted([one, two]))
    single = ctrlkit.get_backbone("openai:m", base_url=one).identity()
    assert single != key and single["options"]["base_url"] == one
    assert ctrlkit.get_backbone("openai:m", base_url=f"{one},http://127.0.0.1:11/v1").identity() != key
    assert ctrlkit.get_backbone("openai:other", base_url=f"{one},{two}").identity() != key
    assert ctrlkit.get_backbone("openai:m", base_url=f"{one},{two}", temperature=0.7).identity() != key


def test_no_model_is_a_configuration_error(server):
    with pytest.raises(ConfigurationError, match="backbone 'openai' needs a model: --backbone openai:MODEL"):
        ctrlkit.get_backbone("openai", base_url=server.url).generate([ModelInput("doc")])
    assert not server.requests


def test_a_run_end_to_end_records_options_without_the_key(server, tmp_path):
    result = ctrlkit.run(controller="none", backbone="openai:m", metrics=["rouge"], baseline=None, limit=3,
                         options={"openai": {"base_url": server.url, "api_key": KEY}}, out=str(tmp_path))
    assert len(result.samples) == 3 and len(server.requests) == 3
    assert all(sample["prediction"].startswith(f"summary: {INSTRUCTION}\n\n") for sample in result.samples)
    recorded = (tmp_path / "results.json").read_text()
    options = json.loads(recorded)["config"]["options"]["openai"]
    assert options["model"] == "m" and options["base_url"] == server.url and options["api_key"] == "***"
    assert KEY not in recorded and KEY not in (tmp_path / "samples.jsonl").read_text()
