"""The openai backbone with several endpoints (``base_url=URL1,URL2``: N vLLM servers of one
model), against real chat-completions servers on 127.0.0.1 (recording_chat.py's)."""

import json
import threading
import time

import pytest
from helpers import invoke_ctrlkit
from helpers.recording_chat import INSTRUCTION, KEY, ChatServer, Reply, closed_port, echo

import ctrlkit
from ctrlkit import ConfigurationError, CtrlkitError, ModelInput, OptionError
from ctrlkit.backbones.endpoints import FAILURES_BEFORE_COOLDOWN, Endpoints
from ctrlkit.sweeps.sweep import sweep

PASSWORD = "url-password-4242"
DOCS = [ModelInput(f"doc {i}") for i in range(12)]
SUMMARIES = [f"summary: {INSTRUCTION}\n\ndoc {i}" for i in range(12)]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("no_proxy", "*")  # a proxy configured on the machine must not take 127.0.0.1
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))  # the endpoints are not in the key


@pytest.fixture
def serve():
    """``serve(answer)``: a loopback chat server answering ``answer(request)`` (default: echo)."""
    started = []

    def start(answer=echo):
        chat = ChatServer()
        chat.default = answer
        threading.Thread(target=chat.http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        started.append(chat)
        return chat

    yield start
    for chat in started:
        chat.http.shutdown()
        chat.http.server_close()


def slowly(seconds):
    return lambda request: Reply(body=echo(request).body, delay=seconds)


def failing(request):
    return Reply(500, {"error": "boom"})


def backbone(base_url, **options):
    return ctrlkit.get_backbone("openai", **{"model": "m", "base_url": base_url, "backoff": 0.01, **options})


def usage(model) -> list[tuple]:
    return [(e["url"], e["served"], e["failed"], e["failed_over"]) for e in model.recorded_options()["endpoints"]]


def test_two_endpoints_share_the_concurrency_limit(serve):
    """Four requests in flight, each to the endpoint with fewer outstanding: never more than two on one."""
    a, b = serve(slowly(0.05)), serve(slowly(0.05))
    model = backbone(f"{a.url},{b.url}", concurrency=4)
    assert model.generate(DOCS) == SUMMARIES
    assert len(a.requests) + len(b.requests) == 12 and a.requests and b.requests
    assert a.max_in_flight <= 2 and b.max_in_flight <= 2 and a.max_in_flight + b.max_in_flight > 2
    assert usage(model) == [(a.url, len(a.requests), 0, 0), (b.url, len(b.requests), 0, 0)]


def test_a_slow_endpoint_listed_first_serves_fewer_requests_than_a_fast_one(serve):
    slow, fast = serve(slowly(0.5)), serve(slowly(0.01))
    assert backbone(f"{slow.url},{fast.url}", concurrency=2).generate(DOCS[:10]) == SUMMARIES[:10]
    # the first request goes to the first listed (a tie); while it is held, every other goes to the
    # fast one. Taking turns would have given each 5.
    assert len(slow.requests) >= 1 and len(fast.requests) >= 3 * len(slow.requests)
    assert len(slow.requests) + len(fast.requests) == 10


def test_with_one_request_at_a_time_the_tie_goes_to_the_first_listed(serve):
    a, b = serve(), serve()
    backbone([a.url, b.url], concurrency=1).generate(DOCS[:4])
    assert (len(a.requests), len(b.requests)) == (4, 0)
    backbone([b.url, a.url], concurrency=1).generate(DOCS[:3])
    assert (len(a.requests), len(b.requests)) == (4, 3)


@pytest.mark.parametrize("fault", ["refused", "500"])
def test_a_failing_endpoint_is_failed_over_at_once_then_asked_last(serve, fault, caplog):
    good = serve()
    bad_url = f"http://127.0.0.1:{closed_port()}/v1" if fault == "refused" else serve(failing).url
    alone = backbone(good.url, concurrency=1).generate(DOCS[:6])
    model = backbone(f"{bad_url},{good.url}", concurrency=1, backoff=30.0)  # a backoff would wait ~30 s
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="ctrlkit"):
        assert model.generate(DOCS[:6]) == alone == SUMMARIES[:6]
    assert time.monotonic() - started < 5
    # the first request of each pair fails on it and goes to the other; once it failed twice in a
    # row, the others are asked first
    assert FAILURES_BEFORE_COOLDOWN == 2
    assert usage(model) == [(bad_url, 0, 2, 2), (good.url, 6, 0, 0)]
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 2 and all("\n" not in line for line in said)
    assert said[0].startswith(f"ctrlkit: backbone 'openai': endpoint {bad_url} failed (")
    assert said[0].endswith("); retrying on the other endpoints, then with backoff (up to 6 attempts a request "
                            "on each of 2 endpoints)")
    assert said[1].startswith(f"ctrlkit: backbone 'openai': endpoint {bad_url} failed 2 attempts in a row (")
    assert said[1].endswith("); the others are asked first for 30 s at a time while it keeps failing")


def test_after_its_cooldown_a_failing_endpoint_is_asked_first_again(serve):
    bad, good = serve(failing), serve()
    model = backbone(f"{bad.url},{good.url}", concurrency=1, cooldown=0)
    assert model.generate(DOCS[:5]) == SUMMARIES[:5]
    assert usage(model) == [(bad.url, 0, 5, 5), (good.url, 5, 0, 0)]


def test_the_cooldown_orders_endpoints_and_a_success_ends_it():
    clock = [0.0]
    pool = Endpoints(["http://a/v1", "http://b/v1/"], "/chat/completions", cooldown=10.0, clock=lambda: clock[0])
    a, b = pool.all
    assert (a.url, b.url, b.shown) == ("http://a/v1/chat/completions", "http://b/v1/chat/completions", "http://b/v1/")
    for _ in range(FAILURES_BEFORE_COOLDOWN):
        assert pool.take(set()) is a
        pool.failed(a)
    held = pool.take(set())
    assert held is b and pool.take(set()) is b  # b is asked even with one outstanding: a is cooling
    assert pool.take({b}) is a  # a cooling endpoint is still asked when nothing else is left
    pool.released(a)
    clock[0] = 10.5
    assert pool.take(set()) is a  # cooled down, and fewer outstanding than b
    pool.failed(a)  # still failing: cooling again at once
    clock[0] = 21.0
    taken = pool.take(set())
    assert taken is a
    pool.served(a, set())
    pool.failed(a)  # one failure after a success is not yet a cool-down
    assert pool.take(set()) is a


def test_when_every_endpoint_fails_the_request_fails_in_one_line_naming_each(serve):
    a, b = serve(failing), serve(failing)
    with pytest.raises(CtrlkitError) as failure:
        backbone(f"{a.url},{b.url}", max_retries=1).generate([ModelInput("doc")])
    assert str(failure.value) == (f"backbone 'openai': request for input 0 failed on each of its 2 endpoints: "
                                  f"{a.url} after 2 attempts (HTTP 500 Internal Server Error); "
                                  f"{b.url} after 2 attempts (HTTP 500 Internal Server Error)")
    assert len(a.requests) == len(b.requests) == 2


def test_an_endpoint_never_reached_is_not_asked_again_for_that_request(serve):
    closed, failing_one = f"http://127.0.0.1:{closed_port()}/v1", serve(failing)
    with pytest.raises(CtrlkitError) as failure:
        backbone(f"{closed},{failing_one.url}", max_retries=2).generate([ModelInput("doc")])
    message = str(failure.value)
    assert "\n" not in message and message.startswith(
        f"backbone 'openai': request for input 0 failed on each of its 2 endpoints: {closed} never answered "
        f"(connection error: ")
    assert message.endswith(f"; {failing_one.url} after 3 attempts (HTTP 500 Internal Server Error)")
    assert "refused" in message and len(failing_one.requests) == 3


def test_endpoints_none_of_which_answers_fail_at_once_without_showing_secrets(monkeypatch):
    first = f"http://127.0.0.1:{closed_port()}/v1"
    second = f"http://127.0.0.1:{closed_port()}/v1?api_key={PASSWORD}"
    model = ctrlkit.get_backbone("openai:m", base_url=f"{first},{second}", api_key=KEY)  # default backoff: 1 s, 2, ...
    started = time.monotonic()
    with pytest.raises(CtrlkitError) as failure:
        model.generate([ModelInput("doc")])
    assert time.monotonic() - started < 3
    message = str(failure.value)
    assert "\n" not in message and PASSWORD not in message and KEY not in message
    assert message.startswith(f"backbone 'openai': request for input 0 cannot reach any of its 2 endpoints: {first} "
                              "(connection error: ")
    assert f"); {second.replace(PASSWORD, '***')} (connection error: " in message
    assert message.endswith("); check that this machine is online, the servers run and the addresses are right "
                            "(--set openai.base_url or $OPENAI_BASE_URL)")
    assert PASSWORD not in json.dumps(model.recorded_options())


def test_a_sweep_whose_first_endpoint_holds_a_key_records_every_endpoint_and_resumes(serve, tmp_path):
    """The record is masked where the backbone is made and again where it is written, the sweep's
    arguments once: all three must agree, or the cell would run again on every resume."""
    a, b = serve(), serve()
    given = dict(out=str(tmp_path / "s"), controllers=["none"], backbones=["openai:m"], metrics=["rouge"], limit=2,
                 bootstrap=0, options={"openai": {"base_url": f"{a.url}?api_key={PASSWORD},{b.url}"}})
    sweep(**given)
    (found,) = (tmp_path / "s" / "cells").rglob("results.json")
    assert PASSWORD not in found.read_text(encoding="utf-8")
    assert json.loads(found.read_text(encoding="utf-8"))["config"]["options"]["openai"]["base_url"] == \
        f"{a.url}?api_key=***,{b.url}"
    assert [row["reused"] for row in sweep(**given)] == [True]


def test_a_client_error_is_not_failed_over(serve):
    refusing, good = serve(lambda request: Reply(400, {"error": {"message": "bad model"}})), serve()
    with pytest.raises(CtrlkitError, match=r"^backbone 'openai': request for input 0 failed: HTTP 400 Bad Request: "
                                           r"bad model$"):
        backbone(f"{refusing.url},{good.url}").generate([ModelInput("doc")])
    assert len(refusing.requests) == 1 and not good.requests


def test_a_run_records_each_endpoint_and_the_same_endpoints_reuse_its_cache(serve, tmp_path):
    a, b, c = serve(slowly(0.05)), serve(slowly(0.05)), serve()
    secret_b = f"{b.url}?api_key={PASSWORD}"  # the server sees the query in the path; only the record matters
    arguments = dict(controller="none", backbone="openai:m", metrics=["rouge"], baseline=None, limit=4)
    first = ctrlkit.run(**arguments, options={"openai": {"base_url": [a.url, secret_b], "concurrency": 2}},
                        out=str(tmp_path / "run"))
    recorded_text = (tmp_path / "run" / "results.json").read_text()
    recorded = json.loads(recorded_text)["config"]["options"]["openai"]
    assert PASSWORD not in recorded_text
    assert recorded["base_url"] == f"{a.url},{b.url}?api_key=***"
    assert recorded["endpoints"] == [
        {"url": a.url, "served": len(a.requests), "failed": 0, "failed_over": 0},
        {"url": f"{b.url}?api_key=***", "served": len(b.requests), "failed": 0, "failed_over": 0}]
    assert len(a.requests) + len(b.requests) == 4 and a.requests and b.requests
    # the same servers listed in another order: the same key, so the cache answers
    again = ctrlkit.run(**arguments, options={"openai": {"base_url": [secret_b, a.url]}})
    assert again.results["cache"] == {"hits": 4, "misses": 0} and len(a.requests) + len(b.requests) == 4
    assert again.results["config"]["options"]["openai"]["base_url"] == f"{b.url}?api_key=***,{a.url}"
    assert [s["prediction"] for s in again.samples] == [s["prediction"] for s in first.samples]
    assert again.results["config"]["options"]["openai"]["endpoints"] == [
        {"url": f"{b.url}?api_key=***", "served": 0, "failed": 0, "failed_over": 0},
        {"url": a.url, "served": 0, "failed": 0, "failed_over": 0}]
    # another server may serve other weights under the same name: it generates its own
    other = ctrlkit.run(**arguments, options={"openai": {"base_url": c.url}})
    assert other.results["cache"] == {"hits": 0, "misses": 4} and len(c.requests) == 4


@pytest.mark.parametrize("base_url, refusal", [
    ("http://127.0.0.1:9/v1,,http://127.0.0.1:10/v1", "has an empty item (item 2 of 3); separate endpoints with "
                                                       "one comma each"),
    ("http://127.0.0.1:9/v1,", "has an empty item (item 2 of 2)"),
    (["http://127.0.0.1:9/v1", " "], "has an empty item (item 2 of 2)"),
    ("http://127.0.0.1:9/v1,ftp://127.0.0.1/v1", "must start with http:// or https://, got ftp: (item 2 of 2)"),
    (f"http://127.0.0.1:9/v1,http://me:{PASSWORD}@127.0.0.1:10/v1", "holds credentials (user:password@host) "
                                                                    "(item 2 of 2), which would be sent"),
    ("http://127.0.0.1:9/v1, http://127.0.0.1:9/v1/", "lists the same endpoint twice (items 1 and 2 of 2)"),
])
def test_a_bad_list_of_endpoints_is_refused_in_one_line(base_url, refusal, monkeypatch):
    with pytest.raises(ConfigurationError) as refused:
        ctrlkit.get_backbone("openai:m", base_url=base_url)
    message = str(refused.value)
    assert message.startswith("backbone 'openai': base_url (--set openai.base_url or $OPENAI_BASE_URL) ")
    assert refusal in message and "\n" not in message and PASSWORD not in message
    if isinstance(base_url, str):
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        with pytest.raises(ConfigurationError, match=refusal.replace("(", r"\(").replace(")", r"\)")):
            ctrlkit.get_backbone("openai:m")


@pytest.mark.parametrize("base_url, refusal", [
    ("http://127\u30020.0.1:9/v1", "has a non-ASCII character in its host (U+3002)"),
    ("http://example\uff0ecom/v1", "has a non-ASCII character in its host (U+FF0E)"),
    ("http://b\u00fccher.example/v1", "has a non-ASCII character in its host (U+00FC)"),
    ("http://" + "a" * 64 + ".example/v1", "has a host label of 64 characters, over the 63"),
    ("http://" + ".".join(["a" * 60] * 5) + "/v1", "has a host of 304 characters, over the 253"),
    ("http://a..example/v1", "has an empty label in its host"),
    ("http://.example/v1", "has an empty label in its host"),
    ("http://exa%mple.com/v1", "has a character in its host other than"),
    ("http://127.0.0.1:port/v1", "has a port that is not a number from 1 to 65535"),
    ("http://127.0.0.1:65536/v1", "has a port that is not a number from 1 to 65535"),
    ("http://127.0.0.1:-1/v1", "has a port that is not a number from 1 to 65535"),
    ("http://127.0.0.1:0/v1", "has port 0"),
    ("http:///v1", "has no host"),
    ("http://:8000/v1", "has no host"),
    ("http:/127.0.0.1/v1", "has no host"),
    ("gopher://127.0.0.1/v1", "must start with http:// or https://, got gopher:"),
    ("127.0.0.1:8000/v1", "must start with http:// or https://"),
    ("http://127.0.0.1 :9/v1", "holds whitespace or a control character (U+0020)"),
    ("http://127.0.0.1:9/v\n1", "holds whitespace or a control character (U+000A)"),
    ("http://127.0.0.1:9/\tv1", "holds whitespace or a control character (U+0009)"),
    ("http://127.0.0.1\x00:9/v1", "holds whitespace or a control character (U+0000)"),
    ("http://127.0.0.1:9/v1\u200b", "holds whitespace or a control character (U+200B)"),
    ("http://127.0.0.1:9/v1,http://" + "b" * 70 + "/v1", "has a host label of 70 characters, over the 63 a label "
                                                          "may have (item 2 of 2); no request was sent"),
])
def test_a_malformed_base_url_is_refused_before_any_request(base_url, refusal):
    started = time.monotonic()
    with pytest.raises(ConfigurationError) as refused:
        ctrlkit.get_backbone("openai:m", base_url=base_url, max_retries=5)
    message = str(refused.value)
    assert message.startswith("backbone 'openai': base_url (--set openai.base_url or $OPENAI_BASE_URL) ")
    assert refusal in message and "\n" not in message, message
    assert "b" * 70 not in message and "a" * 64 not in message  # the URL itself is not shown
    assert time.monotonic() - started < 5  # refused, not retried


@pytest.mark.parametrize("base_url, refusal", [
    ("http://[::1/v1", "has a '[' or ']' in its host other than around one IPv6 address"),
    ("http://[::1:8000/v1", "has a '[' or ']' in its host other than around one IPv6 address"),
    ("http://[zz]:80/", "has a host in brackets that is not an IPv6 address"),
    ("http://[hunter2-secret]/v1", "has a host in brackets that is not an IPv6 address"),
    ("http://user:hunter2-secret@[zz]:80/", "has a host in brackets that is not an IPv6 address"),
    ("http://user:hunter2-secret@[::1/v1", "has a '[' or ']' in its host other than around one IPv6 address"),
    ("http://[1.2.3.4]/v1", "has a host in brackets that is not an IPv6 address"),
    ("http://[v1.hunter2-secret]/v1", "has a host in brackets that is not an IPv6 address"),
    ("http://[]/v1", "has a host in brackets that is not an IPv6 address"),
    ("http://hunter2-secret[::1]/v1", "has a '[' or ']' in its host other than around one IPv6 address"),
    ("http://[::1]hunter2-secret/v1", "has something other than ':PORT' after the ']' of its IPv6 address"),
    ("http://[::1]]/v1", "has a '[' or ']' in its host other than around one IPv6 address"),
    ("http://]::1[/v1", "has a '[' or ']' in its host other than around one IPv6 address"),
    ("http://[[::1]]/v1", "has a '[' or ']' in its host other than around one IPv6 address"),
    ("http://[fe80::1%25hunter2 secret]/v1", "has an IPv6 zone after '%25' that is not letters"),
    ("http://[::1]:hunter2-secret/v1", "has a port that is not a number from 1 to 65535"),
    ("http://127.0.0.1:9/v1,https://[hunter2-secret]:443/v1", "has a host in brackets that is not an IPv6 address "
                                                               "(item 2 of 2); no request was sent"),
])
def test_a_malformed_ipv6_base_url_is_one_line_naming_the_option_and_quoting_nothing(base_url, refusal):
    # after round 3 urllib's own ValueError reached the user through a generic "cannot be created"
    # line that quoted the host ('zz' does not appear to be an IPv4 or IPv6 address)
    with pytest.raises(ConfigurationError) as refused:
        ctrlkit.get_backbone("openai:m", base_url=base_url, max_retries=5)
    message = str(refused.value)
    assert message.startswith("backbone 'openai': base_url (--set openai.base_url or $OPENAI_BASE_URL) "), message
    assert refusal in message and "\n" not in message, message
    assert "hunter2" not in message and "zz" not in message and "1.2.3.4" not in message, message


def test_a_malformed_hub_endpoint_or_proxy_is_said_in_words_quoting_nothing(monkeypatch):
    from ctrlkit.hub import hub_unreachable

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    for endpoint, proxy in (("http://[hunter2]/", None), ("http://[::1/", None), ("http://[::1]:99999/", None),
                            ("http://127.0.0.1:9", "http://user:hunter2@[zz]:3128")):
        monkeypatch.setenv("HF_ENDPOINT", endpoint)
        if proxy:
            monkeypatch.setenv("http_proxy", proxy)
        why = hub_unreachable()
        assert why.startswith("the endpoint ($HF_ENDPOINT) or its proxy is not a well-formed URL"), why
        assert "hunter2" not in why and "zz" not in why


@pytest.mark.parametrize("base_url", ["http://127.0.0.1:9/v1", "https://api.example.com/v1", "http://[::1]:8000/v1",
                                      "http://[::1]/v1", "http://[2001:db8::1]:8080/v1", "http://[::ffff:127.0.0.1]:9/v1",
                                      "http://[fe80::1%25eth0]:8000/v1", "http://[::1]:8000/v1?q=[x]",
                                      "http://my_host.internal:8000", "http://localhost/", "http://example.com./v1",
                                      "http://xn--bcher-kva.example/v1", "http://10.0.0.1:65535/v1"])
def test_a_well_formed_base_url_is_accepted(base_url):
    ctrlkit.get_backbone("openai:m", base_url=base_url)


@pytest.mark.parametrize("option", ["timeout", "max_retry_wait", "backoff", "cooldown"])
@pytest.mark.parametrize("value", ["1e300", "1e10", "inf"])
def test_a_time_option_beyond_a_day_is_refused_in_one_line(option, value):
    with pytest.raises(OptionError, match=rf"^option 'openai.{option}' (must be at most 86400|expects a finite)"):
        ctrlkit.get_backbone("openai:m", base_url="http://127.0.0.1:9/v1", **{option: value})


def test_a_list_holding_something_else_than_text_is_refused():
    refusal = r"^option 'openai.base_url' expects str, got \['http://127.0.0.1:9/v1', 9\]$"
    with pytest.raises(OptionError, match=refusal):
        ctrlkit.get_backbone("openai:m", base_url=["http://127.0.0.1:9/v1", 9])


def test_the_command_line_takes_endpoints_separated_by_commas(serve, tmp_path):
    a, b = serve(slowly(0.05)), serve(slowly(0.05))
    data = tmp_path / "docs.jsonl"
    data.write_text("".join(json.dumps({"id": str(i), "document": f"Doc {i}.", "references": "Doc."}) + "\n"
                            for i in range(6)))
    common = ["run", "-d", "jsonl", "--data", str(data), "-b", "openai:m", "-m", "rouge", "--no-baseline",
              "--set", "openai.concurrency=2", "--batch-size", "6"]
    env = {"no_proxy": "*", "CTRLKIT_CACHE_DIR": str(tmp_path / "cache")}
    result = invoke_ctrlkit(*common, "--set", f"openai.base_url={a.url},{b.url}", "-o", str(tmp_path / "out"), env=env)
    assert result.returncode == 0, result.stderr
    recorded = json.loads((tmp_path / "out" / "results.json").read_text())["config"]["options"]["openai"]
    assert [e["url"] for e in recorded["endpoints"]] == [a.url, b.url]
    assert [e["served"] for e in recorded["endpoints"]] == [len(a.requests), len(b.requests)]
    assert len(a.requests) + len(b.requests) == 6 and a.requests and b.requests
    refused = invoke_ctrlkit(*common, "--set", f"openai.base_url={a.url},,{b.url}", "-o", str(tmp_path / "bad"),
                             env=env)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "base_url (--set openai.base_url or $OPENAI_BASE_URL) has an empty item (item 2 of 3)" in refused.stderr
