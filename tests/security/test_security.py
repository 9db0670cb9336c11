"""Security promises, end to end: API keys never reach the disk or an error message, text from
data never becomes markup in a report (checked in a real browser), and nothing the toolkit loads
can run code (no pickle, no unsafe YAML, no eval). See docs/reliability.md.

Related tests that are not repeated here: tests/backbones/test_openai_backbone.py (the key in options,
repr and a 401 message, in process), tests/report/test_report.py (escaping of hand-written run and
sweep folders, chromium rendering), tests/sweeps/test_sweep.py (a !!python/object YAML sweep config).
"""

import ast
import json
import os
import pickle
import re
import uuid
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import ctrlkit
from ctrlkit.report.render import POLICY, STYLE
from ctrlkit.results import write_run

from helpers.browser import CHROMIUM, chromium
from helpers.chat_server import JsonHandler, serving
from helpers import ROOT, run_ctrlkit

# ---------------------------------------------------------------------------------------------
# 1. Secrets
# ---------------------------------------------------------------------------------------------

ENV_KEY = f"sk-envmarker-{uuid.uuid4().hex}"
SET_KEY = f"sk-setmarker-{uuid.uuid4().hex}"


class _Handler(JsonHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        authorization = self.headers.get("Authorization", "")
        self.server.seen.append({"authorization": authorization, "body": body})
        messages = body["messages"]
        prompt = messages[-1]["content"]
        if "FAIL401" in prompt:
            status, reply = 401, {"error": {"message": f"Incorrect API key provided: {authorization} "
                                                       f"(key {authorization.removeprefix('Bearer ')})"}}
        elif "FAIL500" in prompt:
            status, reply = 500, {"error": f"upstream broke for Authorization: {authorization}"}
        elif any("label the focus" in m["content"] for m in messages if m["role"] == "system"):
            status, reply = 200, {"choices": [{"message": {"role": "assistant", "content": '{"label": "empirical"}'}}]}
        else:
            summary = "Summary: " + prompt.splitlines()[-1]
            status, reply = 200, {"choices": [{"message": {"role": "assistant", "content": summary}}]}
        self.reply(status, reply)


@pytest.fixture
def chat_server():
    with serving(_Handler) as server:
        yield server


def _jsonl(path: Path, rows) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return str(path)


def _leaks(data: bytes) -> list[str]:
    """Which secret markers occur in ``data`` (UTF-8 or UTF-16, as SQLite may store text)."""
    found = []
    for needle in (ENV_KEY, SET_KEY, "Authorization", "authorization", "Bearer sk-"):
        for encoded in (needle.encode("utf-8"), needle.encode("utf-16-le"), needle.encode("utf-16-be")):
            if encoded in data:
                found.append(needle)
                break
    return found


def test_api_keys_never_reach_any_file_log_or_error_message(chat_server, tmp_path):
    cache = tmp_path / "cache"
    work = tmp_path / "work"  # the cwd of every run: a default runs/ folder would land here
    logs = tmp_path / "logs"
    work.mkdir(), logs.mkdir()
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    env = {"OPENAI_API_KEY": ENV_KEY, "OPENAI_BASE_URL": chat_server.url, "CTRLKIT_CACHE_DIR": str(cache),
           "no_proxy": "*", "NO_PROXY": "*", "HF_HUB_OFFLINE": "1"}
    rows = [{"id": f"d{i}", "document": f"Paper {i} measures things. It reports numbers.",
             "references": f"Paper {i} reports numbers.", "controls": {"focus": "high"}} for i in range(3)]
    data = _jsonl(inputs / "docs.jsonl", rows)
    predictions = _jsonl(inputs / "preds.jsonl", [{"id": f"d{i}", "prediction": f"Prediction {i}."} for i in range(3)])
    bad401 = _jsonl(inputs / "bad401.jsonl", [{**rows[0], "document": "FAIL401 please."}])
    bad500 = _jsonl(inputs / "bad500.jsonl", [{**rows[0], "document": "FAIL500 please."}])
    common = ["-d", "jsonl", "--data", data, "--set", "openai.backoff=0.01"]

    results = {
        # generator and judge both openai; the key given as an option wins over the environment
        "run-set-key": run_ctrlkit("run", *common, "-b", "openai:gen-model", "-m", "focus", "-m", "rouge",
                                   "--judge", "openai:judge-model", "--set", f"openai.api_key={SET_KEY}",
                                   "-o", str(tmp_path / "out" / "run"), env=env, cwd=work),
        # the same again: everything from the cache now
        "rerun-set-key": run_ctrlkit("run", *common, "-b", "openai:gen-model", "-m", "focus",
                                     "--judge", "openai:judge-model", "--set", f"openai.api_key={SET_KEY}",
                                     "-o", str(tmp_path / "out" / "rerun"), env=env, cwd=work),
        # a judge metric on existing predictions, with the key from the environment only
        "evaluate-env-key": run_ctrlkit("evaluate", *common, "-p", predictions, "-m", "focus",
                                        "--judge", "openai:judge-model", "-o", str(tmp_path / "out" / "eval"),
                                        env=env, cwd=work),
        # refused with a 401 whose body quotes the key
        "run-401": run_ctrlkit("run", "-d", "jsonl", "--data", bad401, "-b", "openai:gen-model", "-m", "rouge",
                               "--no-baseline", "--set", f"openai.api_key={SET_KEY}",
                               "-o", str(tmp_path / "out" / "r401"), env=env, cwd=work),
        "run-401-env-key": run_ctrlkit("run", "-d", "jsonl", "--data", bad401, "-b", "openai:gen-model",
                                       "-m", "rouge", "--no-baseline", "-o", str(tmp_path / "out" / "r401e"),
                                       env=env, cwd=work),
        # a 500 (quoting the key) every time, until the retries run out
        "run-retries": run_ctrlkit("run", "-d", "jsonl", "--data", bad500, "-b", "openai:gen-model", "-m", "rouge",
                                   "--no-baseline", "--set", "openai.max_retries=2", "--set", "openai.backoff=0.01",
                                   "-o", str(tmp_path / "out" / "r500"), env=env, cwd=work),
    }
    for name, result in results.items():
        (logs / f"{name}.stdout").write_text(result.stdout)
        (logs / f"{name}.stderr").write_text(result.stderr)
    for name in ("run-set-key", "rerun-set-key", "evaluate-env-key"):
        assert results[name].returncode == 0, results[name].stderr[-3000:]
    for name, expected in (("run-401", "HTTP 401"), ("run-401-env-key", "HTTP 401"),
                           ("run-retries", "failed after 3 attempts")):
        failed = results[name]
        assert failed.returncode != 0 and expected in failed.stderr, failed.stderr[-3000:]
        assert "Traceback" not in failed.stderr
    assert "Bearer ***" in results["run-401"].stderr  # the server's echo was scrubbed, not dropped

    # not vacuous: both keys were sent, the judge was asked, the cache was written
    sent = {request["authorization"] for request in chat_server.seen}
    assert f"Bearer {SET_KEY}" in sent and f"Bearer {ENV_KEY}" in sent
    assert any("label the focus" in m["content"] for r in chat_server.seen for m in r["body"]["messages"])
    assert sum("FAIL500" in r["body"]["messages"][-1]["content"] for r in chat_server.seen) == 3
    assert (cache / "cache.sqlite3").stat().st_size > 0
    recorded = json.loads((tmp_path / "out" / "run" / "results.json").read_text())["config"]["options"]["openai"]
    assert recorded["api_key"] == "***"

    # every file every run wrote, SQLite bytes (and WAL) included, and every log
    scanned = [path for path in tmp_path.rglob("*") if path.is_file() and inputs not in path.parents]
    assert len(scanned) >= 10 and any(path.name.startswith("cache.sqlite3") for path in scanned)
    leaks = {str(path.relative_to(tmp_path)): found for path in scanned if (found := _leaks(path.read_bytes()))}
    assert leaks == {}


def test_a_judge_error_in_process_carries_no_key(chat_server, tmp_path, monkeypatch):
    monkeypatch.setenv("CTRLKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("no_proxy", "*")
    data = _jsonl(tmp_path / "d.jsonl", [{"id": "x", "document": "FAIL401 paper.", "controls": {"focus": "low"}}])
    with pytest.raises(ctrlkit.CtrlkitError) as failure:
        ctrlkit.run(dataset="jsonl", data=data, backbone="extractive", metrics=["focus"], baseline=None,
                    judge="openai:judge-model", out=str(tmp_path / "out"),
                    options={"openai": {"base_url": chat_server.url, "api_key": SET_KEY}})
    assert chat_server.seen[0]["authorization"] == f"Bearer {SET_KEY}"
    for text in (str(failure.value), repr(failure.value), repr(failure.value.args)):
        assert SET_KEY not in text and ENV_KEY not in text and "\n" not in str(failure.value)
    leaks = {str(p): f for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".jsonl"
             if (f := _leaks(p.read_bytes()))}
    assert leaks == {}


# ---------------------------------------------------------------------------------------------
# 2. Untrusted text in reports, through a real run and a real browser
# ---------------------------------------------------------------------------------------------

PAYLOADS = [
    "<script>document.title='PWNED-script'</script>",
    "<img src=x onerror=\"document.title='PWNED-img'\">",
    "<body onload=\"document.title='PWNED-body'\">",
    "<a href=\"javascript:document.title='PWNED-link'\">click me</a>",
    "</style><style>body{background:url(http://127.0.0.1:9/style)}</style><p id=css-breakout>",
    "<svg onload=\"document.title='PWNED-svg'\"><circle r=\"9\"/></svg>",
    "</textarea></title></pre></p><iframe src=\"javascript:alert(1)\"></iframe>",
    "\"><img src=x onerror=alert(2)>",
    "'><svg/onload=alert(3)>",
    "<math><mi xlink:href=\"javascript:alert(4)\">x</mi></math><!--",
    "]]><![CDATA[<script>alert(5)</script>]]>",
    "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(6)\">",
]
FORBIDDEN_TAGS = {"script", "img", "iframe", "object", "embed", "link", "a", "math", "mi", "circle", "base",
                  "form", "input", "foreignobject", "textarea", "audio", "video", "source"}


class _Dom(HTMLParser):
    def __init__(self, page: str):
        super().__init__()
        self.tags, self.attributes, self.text, self.styles = [], [], [], []
        self._in_style = False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += attrs
        self._in_style = tag == "style"

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += attrs

    def handle_endtag(self, tag):
        self._in_style = False

    def handle_data(self, data):
        (self.styles if self._in_style else self.text).append(data)


def _hostile_run(tmp_path: Path) -> Path:
    """A real run whose documents, ids, controls and predictions carry every payload, then the
    names a plugin supplies (metric values, controller, interference attributes) carrying them too."""
    rows = [{"id": f"ex{i} {payload}", "document": f"Sentence {i} {payload} ends here.",
             "references": f"Reference {i} {payload}.", "controls": {"topic": payload}}
            for i, payload in enumerate(PAYLOADS)]
    data = _jsonl(tmp_path / "hostile.jsonl", rows)
    predictions = _jsonl(tmp_path / "preds.jsonl", [{"id": row["id"], "prediction": f"Predicted: {payload}"}
                                                    for row, payload in zip(rows, PAYLOADS)])
    folder = tmp_path / "eval"
    result = run_ctrlkit("evaluate", "-d", "jsonl", "--data", data, "-p", predictions, "-m", "rouge",
                         "-o", str(folder))
    assert result.returncode == 0, result.stderr[-3000:]
    samples = [json.loads(line) for line in (folder / "samples.jsonl").read_text().splitlines()]
    assert [s["prediction"] for s in samples] == [f"Predicted: {p}" for p in PAYLOADS]
    # names a plugin chooses: its metric, its value names, a controller's name
    results = json.loads((folder / "results.json").read_text())
    results["config"]["controller"] = PAYLOADS[0]
    results["config"]["dataset"] = PAYLOADS[4]
    results["metrics"][f"plugin{PAYLOADS[5]}"] = {PAYLOADS[1]: 0.5, PAYLOADS[3]: 0.25}
    for sample in samples:
        sample["scores"][f"plugin{PAYLOADS[8]}"] = {PAYLOADS[9]: 0.5}
    write_run(folder, results, samples)  # the pair as a run writes it: results.json records the samples' digest
    (folder / "interference.json").write_text(json.dumps({
        "attributes": [PAYLOADS[4], PAYLOADS[10]], "values": [PAYLOADS[5], "rouge.rougeL"],
        "matrix": {PAYLOADS[4]: {PAYLOADS[5]: 0.5}, PAYLOADS[10]: {"rouge.rougeL": 1.0}},
        "n_examples": PAYLOADS[2], "config": {"note": PAYLOADS[11]}}))
    return folder


def test_a_hostile_run_renders_inert_in_a_browser(tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"needs chromium at {CHROMIUM}")
    folder = _hostile_run(tmp_path)
    reported = run_ctrlkit("report", str(folder), "--examples", str(len(PAYLOADS)))
    assert reported.returncode == 0, reported.stderr[-3000:]
    page = folder / "report.html"
    dom = chromium(tmp_path, "--dump-dom", page.resolve().as_uri()).stdout
    parsed = _Dom(dom)
    assert parsed.tags.count("html") == 1 and "table" in parsed.tags and "svg" in parsed.tags
    assert not FORBIDDEN_TAGS & set(parsed.tags), FORBIDDEN_TAGS & set(parsed.tags)
    assert parsed.tags.count("style") == 1 and parsed.tags.count("meta") == 2 and parsed.tags.count("body") == 1
    bad = [(name, value) for name, value in parsed.attributes
           if name.startswith("on") or name in ("src", "href", "xlink:href", "srcdoc", "action", "formaction")
           or "javascript:" in (value or "").lower() or name == "id" and value == "css-breakout"]
    assert bad == []
    assert "".join(parsed.styles).strip() == STYLE.strip()  # </style> in the data did not end the stylesheet
    assert ("http-equiv", "Content-Security-Policy") in parsed.attributes and ("content", POLICY) in parsed.attributes
    text = "".join(parsed.text)
    for payload in PAYLOADS:  # shown, as text, in the examples
        assert f"Predicted: {payload}" in text, payload
    # the page title is the folder's name, not something a script set
    assert "<title>ctrlkit report: eval</title>" in dom

    markdown = (folder / "report.md").read_text()
    assert "<script" not in markdown.lower() and "<svg" not in markdown.lower() and "<img" not in markdown.lower()
    assert "](javascript:" not in markdown and "</style>" not in markdown


# ---------------------------------------------------------------------------------------------
# 3. Nothing the toolkit loads can run code
# ---------------------------------------------------------------------------------------------

_UNSAFE_MODULES = {"pickle", "cPickle", "_pickle", "dill", "cloudpickle", "joblib", "marshal", "shelve"}
_UNSAFE_YAML = {"load", "load_all", "unsafe_load", "unsafe_load_all", "full_load", "full_load_all",
                "Loader", "UnsafeLoader", "FullLoader"}


def _keyword(call: ast.Call, name: str):
    for keyword in call.keywords:
        if keyword.arg == name and isinstance(keyword.value, ast.Constant):
            return keyword.value.value
    return "missing"


def unsafe_loads(source: str, filename: str = "<source>") -> list[str]:
    """Every way ``source`` could run code while loading data: pickle and its kin, torch.load
    without weights_only=True, np.load without allow_pickle=False, yaml beyond safe_load,
    pandas.read_pickle, eval/exec/compile, trust_remote_code=True."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        where = f"{filename}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Import):
            found += [f"{where} import {a.name}" for a in node.names if a.name.split(".")[0] in _UNSAFE_MODULES]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in _UNSAFE_MODULES:
            found.append(f"{where} from {node.module} import")
        elif isinstance(node, ast.ImportFrom) and node.module == "yaml":
            found += [f"{where} from yaml import {a.name}" for a in node.names if a.name in _UNSAFE_YAML]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner, attribute = node.value.id, node.attr
            if owner == "yaml" and attribute in _UNSAFE_YAML:
                found.append(f"{where} yaml.{attribute}")
            elif owner in _UNSAFE_MODULES:
                found.append(f"{where} {owner}.{attribute}")
            elif attribute == "read_pickle":
                found.append(f"{where} {owner}.read_pickle")
        if isinstance(node, ast.Call):
            function = node.func
            if isinstance(function, ast.Name) and function.id in ("eval", "exec", "compile", "__import__"):
                found.append(f"{where} {function.id}(")
            elif isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name):
                owner, attribute = function.value.id, function.attr
                if owner == "torch" and attribute == "load" and _keyword(node, "weights_only") is not True:
                    found.append(f"{where} torch.load without weights_only=True")
                if owner in ("np", "numpy") and attribute == "load" and _keyword(node, "allow_pickle") is not False:
                    found.append(f"{where} np.load without allow_pickle=False")
            if _keyword(node, "trust_remote_code") not in ("missing", False):
                found.append(f"{where} trust_remote_code")
    return found


def test_the_static_check_catches_every_unsafe_load():
    bad = """
import pickle
from dill import loads
import yaml, torch, numpy as np, pandas as pd
pickle.load(f)
yaml.load(text)
yaml.load(text, Loader=yaml.FullLoader)
torch.load(p)
torch.load(p, weights_only=False)
np.load(p)
np.load(p, allow_pickle=True)
pd.read_pickle(p)
eval(text)
exec(text)
AutoModel.from_pretrained(name, trust_remote_code=True)
"""
    assert len(unsafe_loads(bad)) >= 14
    good = """
import ast, json, yaml, torch, numpy as np
yaml.safe_load(text); json.loads(text); ast.literal_eval(text); model.eval()
torch.load(p, weights_only=True); np.load(p, allow_pickle=False); np.save(p, a, allow_pickle=False)
"""
    assert unsafe_loads(good) == []


def test_no_source_file_can_unpickle_or_evaluate_data():
    files = [path for top in ("core", "plugins") for path in (ROOT / top).rglob("*.py")
             if ".venv" not in path.parts and "build" not in path.parts]
    assert len(files) > 40
    found = [hit for path in files for hit in unsafe_loads(path.read_text(encoding="utf-8"),
                                                            str(path.relative_to(ROOT)))]
    assert found == []
    # and the loads that exist are the safe ones, so the check above is looking at real code
    text = {path.name: path.read_text(encoding="utf-8") for path in files}
    assert "allow_pickle=False" in text["topics.py"] and "weights_only=True" in text["trainer.py"]
    assert "yaml.safe_load" in text["config.py"] and "safetensors" in text["hf.py"]


class _Boom:
    """Unpickling it would create the folder ``path``: the proof that code ran."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def test_a_topic_space_holding_a_pickle_is_refused_without_running_it(tmp_path):
    space = ctrlkit.TopicSpace.fit({"sports": ["goal match team"], "health": ["doctor clinic patient"]}, "tfidf")
    space.save(tmp_path / "space")
    proof = tmp_path / "code-ran"
    evil = np.empty(2, dtype=object)
    evil[0], evil[1] = _Boom(proof), _Boom(proof)
    np.save(tmp_path / "space" / "topic_vectors.npy", evil, allow_pickle=True)
    assert b"mkdir" in (tmp_path / "space" / "topic_vectors.npy").read_bytes()  # it really holds the pickle
    with pytest.raises(ValueError) as refused:
        ctrlkit.TopicSpace.load(tmp_path / "space")
    assert not proof.exists()
    assert "pickle" in str(refused.value).lower() and "\n" not in str(refused.value)


def test_a_focus_classifier_that_is_a_pickle_is_refused_without_running_it(tmp_path):
    from ctrlkit_metrics.focus import FocusClassifier

    proof = tmp_path / "code-ran"
    path = tmp_path / "classifier.pkl"
    path.write_bytes(pickle.dumps(_Boom(proof)))
    with pytest.raises(ctrlkit.CtrlkitError, match="not JSON"):
        FocusClassifier.load(path)
    assert not proof.exists()


def test_a_training_checkpoint_holding_code_is_refused(tmp_path):
    torch = pytest.importorskip("torch")
    proof = tmp_path / "code-ran"
    torch.save({"state": _Boom(proof)}, tmp_path / "optimizer.pt")
    source = (ROOT / "core" / "ctrlkit" / "training" / "trainer.py").read_text()
    assert 'torch.load(checkpoint / "optimizer.pt", weights_only=True)' in source
    assert 'torch.load(checkpoint / "scheduler.pt", weights_only=True)' in source
    loads = re.findall(r"torch\.load\([^)]*\)", source)
    assert loads and all("weights_only=True" in load for load in loads), loads
    with pytest.raises(Exception) as refused:  # the exact call trainer.py makes on resume
        torch.load(tmp_path / "optimizer.pt", weights_only=True)
    assert not proof.exists() and "weights_only" in str(refused.value)
