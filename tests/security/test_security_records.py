"""Secrets never reach a record: every file ctrlkit writes (results.json, samples.jsonl, sweep.json,
cell folders, table files, training.json and its checkpoint, interference.json, report.html and
report.md, the cache) is searched for keys given by ``--set``, by the environment, inside a URL
and as a bearer token, after run, evaluate with a judge, sweep (and its rerun with another key),
train (interrupted and resumed with another key), analyze interference and report.
See docs/reliability.md, "Secrets are never written"."""

import json
import uuid
from pathlib import Path

import pytest

import ctrlkit
from ctrlkit.analyses.interference import interference
from ctrlkit.options import Option, parse_assignments
from ctrlkit.report.write import write_report
from ctrlkit.secrets import MASK, is_secret, mask_secrets, scrub_text
from ctrlkit_datasets.files import JsonlDataset

from helpers.chat_server import JsonHandler, serving
from helpers import run_ctrlkit

KEY_A = f"sk-keya-{uuid.uuid4().hex}"
KEY_B = f"sk-keyb-{uuid.uuid4().hex}"
ENV_KEY = f"sk-envkey-{uuid.uuid4().hex}"
TOKEN = f"hf_token{uuid.uuid4().hex}"
URL_PASSWORD = f"urlpw{uuid.uuid4().hex}"
BEARER = f"sk-bearer{uuid.uuid4().hex}"
SECRETS = (KEY_A, KEY_B, ENV_KEY, TOKEN, URL_PASSWORD, BEARER)
# a non-secret option whose text carries credentials: a URL's user:password, a query key, a bearer token
MIRROR = f"https://reader:{URL_PASSWORD}@mirror.example/data?api_key={KEY_A}&x=1 (Authorization: Bearer {BEARER})"


def _named(value):
    """A test id without the session's random key, so that every process (pytest-xdist's workers)
    collects the same ids."""
    return value.replace(KEY_A, "KEY_A") if isinstance(value, str) else None


def _leaks(root: Path) -> dict[str, list[str]]:
    """Which secrets occur in which file under ``root`` (UTF-8 or UTF-16, as SQLite may store text)."""
    found = {}
    for path in (p for p in root.rglob("*") if p.is_file() and p.parent.name != "inputs"):
        data = path.read_bytes()
        hits = [secret for secret in SECRETS
                if any(secret.encode(codec) in data for codec in ("utf-8", "utf-16-le", "utf-16-be"))]
        if hits:
            found[str(path.relative_to(root))] = hits
    return found


class _Handler(JsonHandler):
    """Summarizes by echoing the last line of the prompt; labels focus when asked as a judge."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.seen.append(self.headers.get("Authorization", ""))
        messages = body["messages"]
        if any("label the focus" in m["content"] for m in messages if m["role"] == "system"):
            content = '{"label": "empirical"}'
        else:
            content = "Summary: " + messages[-1]["content"].splitlines()[-1]
        self.reply(200, {"choices": [{"message": {"role": "assistant", "content": content}}]})


@pytest.fixture
def server():
    with serving(_Handler) as chat:
        yield chat


class Vault(JsonlDataset):
    """A JSONL dataset behind a token, as a Hub dataset or a private mirror would be."""

    options = JsonlDataset.options + (Option("hf_token", str, "", "access token"),
                                      Option("mirror", str, "", "where the file came from"))


@pytest.fixture
def vault(throwaway_plugins):
    class Plugin:
        @ctrlkit.hookimpl
        def register_datasets(self, register):
            register("vault", Vault)

    throwaway_plugins(Plugin(), "vault-plugin")


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A private cache under the scanned folder, the key in the environment, and a data file."""
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("no_proxy", "*")
    (tmp_path / "inputs").mkdir()
    rows = [{"id": f"d{i}", "document": f"Paper {i} measures things. It reports {i} numbers.",
             "references": [f"Paper {i} reports numbers."], "controls": {"focus": "high", "length": 20 + 20 * i}}
            for i in range(3)]
    data = tmp_path / "inputs" / "docs.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return tmp_path, str(data)


# ---------------------------------------------------------------------------------------------
# What a secret is
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["api_key", "key", "token", "secret", "password", "hf_token", "access_token",
                                  "client_secret", "db_password", "db-password", "apiKey", "accessToken",
                                  "authorization", "Authorization", "apikey", "credentials", "auth"])
def test_secret_names(name):
    assert is_secret(name)


@pytest.mark.parametrize("name", ["max_tokens", "keywords", "monkey", "tokenizer", "top_n", "base_url", "model",
                                  "instruction", "key_field", "tokens", "author"])
def test_names_that_are_not_secret(name):
    assert not is_secret(name)


@pytest.mark.parametrize("given, recorded", [
    ({"openai": {"api_key": "sk-1", "model": "m"}}, {"openai": {"api_key": MASK, "model": "m"}}),
    ({"hub": {"hf_token": 12345, "use_auth": True, "token": ""}}, {"hub": {"hf_token": MASK, "use_auth": True,
                                                                           "token": ""}}),
    ({"headers": {"Authorization": "Bearer sk-abcdefgh"}}, {"headers": {"Authorization": MASK}}),
    ({"credentials": {"user": "me", "password": "pw"}}, {"credentials": {"user": MASK, "password": MASK}}),
    ({"base_url": "https://me:pw@host:8/v1"}, {"base_url": "https://***@host:8/v1"}),
    ({"url": "http://host/v1?api_key=sk-9&access_token=t0&n=1"},
     {"url": "http://host/v1?api_key=***&access_token=***&n=1"}),
    ({"base_url": "http://a/v1?api_key=sk-1,https://b/v1?token=t2&n=1"},  # a list of endpoints: each kept
     {"base_url": "http://a/v1?api_key=***,https://b/v1?token=***&n=1"}),
    ({"url": "http://host/v1?token=a,b,c&n=1"}, {"url": "http://host/v1?token=***&n=1"}),
    ({"url": "http://host/v1?token=***,sk-live"}, {"url": "http://host/v1?token=***"}),
    ({"note": ["curl -H 'Authorization: Bearer sk-abcdefghij' x"]},
     {"note": ["curl -H 'Authorization: Bearer ***' x"]}),
    ({"metrics": ["rouge", "stas"], "limit": 3, "data": None},
     {"metrics": ["rouge", "stas"], "limit": 3, "data": None}),
])
def test_mask_secrets(given, recorded):
    assert mask_secrets(given) == recorded


@pytest.mark.parametrize("text", ["http://a/v1?api_key=sk-1,http://b/v1?token=t2&n=1#f;x",
                                  "Authorization: Bearer sk-abcdefghij https://me:pw@h/v1?key=1,HTTPS://g/?secret=2"])
def test_masking_twice_is_masking_once(text):
    """A record is masked where it is made and again where it is written; both must agree, or a sweep
    would find its own records changed."""
    assert scrub_text(scrub_text(text)) == scrub_text(text) and "sk-" not in scrub_text(text)


@pytest.mark.parametrize("invisible", ["\u2061", "\u034f", "\U000e0041", "\u200b", "\ufe0f", "\u3164", "\u00ad"],
                         ids=lambda char: f"U+{ord(char):04X}")
def test_a_secret_in_a_recorded_text_with_invisible_characters_between_its_characters_is_masked(invisible):
    # a bearer token spelled with an invisible character between its characters ended the token's
    # run after 3 characters, too short to be taken for a token, and was recorded whole
    token = invisible.join("sk-abcdefghijklmn")
    assert scrub_text(f"Authorization: Bearer {token} end") == "Authorization: Bearer *** end"
    assert scrub_text(f"Authorization: Bearer{invisible} {token}").endswith("***")
    assert scrub_text(f"https://me:{token}@h/v1") == "https://***@h/v1"
    assert scrub_text(f"http://h/v1?api_key={token}&n=1") == "http://h/v1?api_key=***&n=1"
    assert scrub_text(scrub_text(f"Bearer {token}")) == scrub_text(f"Bearer {token}")


def test_scrub_text_leaves_ordinary_text_alone():
    text = "Summarize the bearer bond market in 3 sentences; see https://example.org/page?id=4."
    assert scrub_text(text) == text


@pytest.mark.parametrize("option, value", [(Option("token", int, 0, "t"), KEY_A),
                                           (Option("api_key", str, "", "k", choices=("a", "b")), KEY_A),
                                           (Option("password", bool, False, "p"), KEY_A)], ids=_named)
def test_an_option_error_never_shows_a_secret_value(option, value):
    with pytest.raises(ctrlkit.OptionError) as failure:
        option.coerce(value, "hub")
    message = str(failure.value)
    assert KEY_A not in message and MASK in message and f"'hub.{option.name}'" in message


@pytest.mark.parametrize("assignment", [f"openai_api_key={KEY_A}", f"api_key={KEY_A}", f".api_key={KEY_A}"],
                         ids=_named)
def test_a_malformed_set_never_shows_its_value(assignment):
    with pytest.raises(ctrlkit.OptionError, match="--set expects COMPONENT.OPTION=VALUE") as failure:
        parse_assignments([assignment])
    assert KEY_A not in str(failure.value) and assignment.partition("=")[0] in str(failure.value)


def test_credentials_in_the_openai_base_url_are_refused_without_being_shown(monkeypatch):
    """urllib would take ``me:PASSWORD@127.0.0.1`` for a host name and ask the resolver for it."""
    for given in ({"base_url": f"http://me:{URL_PASSWORD}@127.0.0.1:9/v1"}, {}):
        if not given:
            monkeypatch.setenv("OPENAI_BASE_URL", f"https://{URL_PASSWORD}@api.example/v1")
        with pytest.raises(ctrlkit.ConfigurationError, match="holds credentials") as refused:
            ctrlkit.get_backbone("openai:m", api_key=KEY_A, **given)
        assert URL_PASSWORD not in str(refused.value) and KEY_A not in str(refused.value)


def test_a_secret_query_parameter_in_the_openai_base_url_is_never_recorded():
    backbone = ctrlkit.get_backbone("openai:m", base_url=f"http://127.0.0.1:9/v1?api-key={URL_PASSWORD}", api_key=KEY_A)
    shown = json.dumps([backbone.options, backbone.identity()])
    assert URL_PASSWORD not in shown and KEY_A not in shown and "api-key=***" in shown


@pytest.mark.parametrize("value", [f'"{KEY_A}\\n"', "1979-05-27T07:32:00Z", "[1, 2]", "nan"], ids=_named)
def test_a_sweep_config_error_never_shows_a_secret_value(tmp_path, value):
    from ctrlkit.sweeps.config import load_config

    config = tmp_path / "sweep.toml"
    config.write_text(f'controllers = ["none"]\n[options.openai]\napi_key = {value}\n', encoding="utf-8")
    with pytest.raises(ctrlkit.ConfigurationError, match="options.openai.api_key") as refused:
        load_config(config)
    assert KEY_A not in str(refused.value) and "1979" not in str(refused.value)


# ---------------------------------------------------------------------------------------------
# Every command, then every file
# ---------------------------------------------------------------------------------------------

def test_run_evaluate_and_interference_write_no_secret_anywhere(server, vault, work):
    root, data = work
    options = {"openai": {"base_url": server.url, "api_key": KEY_A, "backoff": "0.01"},
               "vault": {"hf_token": TOKEN, "mirror": MIRROR}, "prompt": {"controls": "length"}}
    run = ctrlkit.run(dataset="vault", data=data, controller="prompt", backbone="openai:gen",
                      metrics=["rouge", "focus"], judge="openai:judge", options=options, out=str(root / "run"))
    recorded = run.results["config"]["options"]
    assert recorded["openai"]["api_key"] == MASK and recorded["vault"]["hf_token"] == MASK
    assert recorded["vault"]["mirror"] == "https://***@mirror.example/data?api_key=***&x=1 (Authorization: Bearer ***)"

    predictions = root / "inputs" / "predictions.jsonl"
    predictions.write_text("".join(json.dumps({"id": f"d{i}", "prediction": f"Paper {i}."}) + "\n" for i in range(3)))
    ctrlkit.evaluate(predictions=str(predictions), dataset="vault", data=data, metrics=["focus"], judge="openai:judge",
                     options={"openai": {"base_url": server.url}, "vault": {"hf_token": TOKEN}}, out=str(root / "eval"))
    interference(dataset="vault", data=data, controller="prompt", backbone="openai:gen",
                      attributes=["length"], metrics=["length"], options=options, out=str(root / "run"))
    for folder in ("run", "eval"):  # the run's report shows the interference beside it
        write_report(root / folder)

    assert f"Bearer {KEY_A}" in server.seen and f"Bearer {ENV_KEY}" in server.seen  # not vacuous
    assert "Interference" in (root / "run" / "report.html").read_text() and (root / "cache" / "cache.sqlite3").is_file()
    assert _leaks(root) == {}


def test_a_sweep_records_no_key_and_a_rerun_with_another_key_reuses_every_cell(server, work):
    root, data = work
    env = {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": ENV_KEY, "CTRLKIT_CACHE_DIR": str(root / "cache")}
    command = ["sweep", "-o", str(root / "sweep"), "--controllers", "none,prompt", "--backbones", "openai:gen",
               "--metrics", "rouge", "--datasets", "jsonl", "--data", data, "--set", "openai.max_retries=1",
               "--set", "openai.backoff=0.01", "--set", "openai.temperature=0"]
    first = run_ctrlkit(*command, "--set", f"openai.api_key={KEY_A}", env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "2 cells (0 reused), 6 new generations" in first.stderr
    asked = len(server.seen)
    again = run_ctrlkit(*command, "--set", f"openai.api_key={KEY_B}", env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "2 cells (2 reused), 0 new generations" in again.stderr and len(server.seen) == asked
    from_environment = run_ctrlkit(*command, env=env)  # the key from the environment: the same outputs
    assert "2 cells (2 reused)" in from_environment.stderr, from_environment.stderr[-2000:]
    write_report(root / "sweep")

    assert set(server.seen) == {f"Bearer {KEY_A}"}  # not vacuous: the key was sent
    for result in (first, again, from_environment):
        assert not [secret for secret in SECRETS if secret in result.stdout + result.stderr]
    settings = json.loads((root / "sweep" / "sweep.json").read_text())["settings"]
    assert settings["options"]["openai"]["max_retries"] == "1"  # the other options as given
    written = {path.name for path in (root / "sweep").rglob("*")}
    assert {"sweep.json", "table.json", "table.csv", "table.md", "report.html", "report.md", "results.json"} <= written
    assert _leaks(root) == {}


def test_training_records_no_secret_and_resumes_with_another_key(vault, work, tmp_path_factory, monkeypatch):
    tiny_models = pytest.importorskip("helpers.tiny_models")
    pytest.importorskip("transformers")
    from ctrlkit.backbones.hf import HFSeq2Seq
    from ctrlkit.training.trainer import train

    root, data = work
    model = tiny_models.build_bart(tmp_path_factory.mktemp("tiny") / "bart")
    args = dict(backbone=f"hf:{model}", dataset="vault", data=data, max_steps=2, batch_size=1, lr=1e-3, save_every=1,
                out=str(root / "trained"))
    original, calls = HFSeq2Seq.loss, {"n": 0}

    def interrupted(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return original(self, *a, **k)

    monkeypatch.setattr(HFSeq2Seq, "loss", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(options={"vault": {"hf_token": KEY_A, "mirror": MIRROR}}, **args)
    state = root / "trained" / "checkpoint" / "trainer_state.json"
    assert json.loads(state.read_text())["settings"]["options"]["vault"]["hf_token"] == MASK
    assert _leaks(root) == {}  # the checkpoint of an interrupted training
    monkeypatch.setattr(HFSeq2Seq, "loss", original)
    record = train(options={"vault": {"hf_token": KEY_B, "mirror": MIRROR}}, **args)
    assert record["resumed"] and record["steps"] == 2
    assert record["config"]["options"]["vault"]["hf_token"] == MASK
    assert (root / "trained" / "training.json").is_file()
    assert _leaks(root) == {}


# ---------------------------------------------------------------------------------------------
# A folder written before secrets were masked: the report masks them
# ---------------------------------------------------------------------------------------------

OLD_OPTIONS = {"openai": {"api_key": KEY_A, "base_url": f"https://me:{URL_PASSWORD}@host/v1", "model": "m"},
               "vault": {"hf_token": TOKEN, "mirror": MIRROR}}


def _old_run(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps({
        "config": {"dataset": "vault", "controller": "none", "backbone": "openai:m", "options": OLD_OPTIONS,
                   "data": f"https://me:{URL_PASSWORD}@host/docs.jsonl"},
        "n_examples": 1, "metrics": {"rouge": {"rouge1": 0.5}}, "baseline": None}))
    (folder / "samples.jsonl").write_text(json.dumps({"id": "a", "controls": {}, "prediction": "p",
                                                      "scores": {"rouge": {"rouge1": 0.5}}}) + "\n")


def _old_sweep(folder: Path) -> None:
    _old_run(folder / "cells" / "one")
    (folder / "sweep.json").write_text(json.dumps({"settings": {"controllers": ["none"], "options": OLD_OPTIONS}}))
    (folder / "table.json").write_text(json.dumps({"rows": [
        {"controller": "none", "backbone": f"openai:m?api_key={KEY_B}", "dataset": "vault", "run": "cells/one",
         "metrics": {"rouge": {"rouge1": 0.5}}}]}))


def _old_interference(folder: Path) -> None:
    _old_run(folder)
    (folder / "interference.json").write_text(json.dumps({
        "attributes": ["length"], "values": ["rouge.rouge1"], "matrix": {"length": {"rouge.rouge1": 0.1}},
        "n_examples": 1, "config": {"controller": "length", "options": OLD_OPTIONS}}))


@pytest.mark.parametrize("write", [_old_run, _old_sweep, _old_interference])
def test_a_report_masks_the_secrets_an_old_folder_holds(tmp_path, write):
    folder = tmp_path / "old"
    write(folder)
    write_report(folder)
    for name in ("report.html", "report.md"):
        page = (folder / name).read_text(encoding="utf-8")
        assert not [secret for secret in SECRETS if secret in page], name
    assert "***" in (folder / "report.html").read_text(encoding="utf-8")  # the configuration is shown, masked
