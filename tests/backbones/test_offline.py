"""Offline, a Hub name fails in seconds with one line (issue 15), while a model in the local Hub
cache still loads. "Offline" here is a loopback port that refuses connections, as HF_ENDPOINT
or as the proxy, so the tests need no network and do not depend on how this machine resolves."""

import json
import os
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from ctrlkit import DatasetError
from ctrlkit.hub import hub_unreachable

from helpers import ROOT

TESTS = ROOT / "tests"  # on the model script's PYTHONPATH, for helpers.tiny_models


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def online_settings(monkeypatch):
    """No offline switch and no proxy: what a user without HF_HUB_OFFLINE has."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT", "http_proxy", "https_proxy", "all_proxy",
                 "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_hub_probe_says_why_within_seconds(online_settings):
    port = closed_port()
    online_settings.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    started = time.monotonic()
    why = hub_unreachable()
    assert time.monotonic() - started < 3
    assert why.startswith(f"127.0.0.1:{port}: ") and "refused" in why.lower()
    proxy = closed_port()
    online_settings.setenv("http_proxy", f"http://127.0.0.1:{proxy}")
    assert hub_unreachable().startswith(f"proxy 127.0.0.1:{proxy}: ")  # the way out is the proxy
    online_settings.setenv("HF_HUB_OFFLINE", "1")
    assert hub_unreachable() == "HF_HUB_OFFLINE is set"


def test_a_hub_dataset_fails_in_seconds_in_one_line(online_settings):
    pytest.importorskip("datasets")
    from ctrlkit_datasets.hub import load_hub

    port = closed_port()
    online_settings.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    started = time.monotonic()
    with pytest.raises(DatasetError) as failed:
        load_hub("nobody/no-such-dataset", split="test")
    assert time.monotonic() - started < 5
    assert str(failed.value) == (f"'nobody/no-such-dataset' is not a local folder and the Hugging Face Hub cannot be "
                                 f"reached (127.0.0.1:{port}: Connection refused); pass a local copy with --data PATH, "
                                 "or set HF_HUB_OFFLINE=1 to use one in the local Hub cache")


MODEL_SCRIPT = """
    import json, sys, time
    from pathlib import Path
    from helpers import tiny_models
    import ctrlkit
    from ctrlkit import ModelInput

    cache = Path(sys.argv[1])
    snapshot = cache / "models--tiny--bart" / "snapshots" / "0123456789abcdef"
    tiny_models.build_bart(snapshot)
    (cache / "models--tiny--bart" / "refs").mkdir()
    (cache / "models--tiny--bart" / "refs" / "main").write_text("0123456789abcdef")
    started = time.monotonic()
    cached = ctrlkit.get_backbone("hf:tiny/bart", max_new_tokens=2, num_beams=1).generate([ModelInput("A text.")])
    cached_s = time.monotonic() - started
    started = time.monotonic()
    try:
        ctrlkit.get_backbone("hf:nobody/no-such-model").generate([ModelInput("A text.")])
        error = None
    except ctrlkit.CtrlkitError as exc:
        error = str(exc)
    print(json.dumps({"cached": cached, "cached_s": cached_s, "error": error,
                      "error_s": time.monotonic() - started}))
"""


def test_a_hub_model_fails_in_seconds_offline_and_a_cached_one_still_loads(tmp_path):
    """In a fresh process, since huggingface_hub reads HF_HUB_OFFLINE and the cache folder once."""
    pytest.importorskip("transformers")
    port = closed_port()
    env = {key: value for key, value in os.environ.items() if key not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
           and not key.lower().endswith("_proxy")}
    env.update(HF_ENDPOINT=f"http://127.0.0.1:{port}", HF_HUB_CACHE=str(tmp_path / "hub"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(MODEL_SCRIPT), str(tmp_path / "hub")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(result["cached"][0], str)  # loaded from the local Hub cache with the Hub out of reach
    assert result["cached_s"] < 5  # no retries of the Hub for the files the cache does not hold
    assert result["error"] == (f"backbone 'hf': 'nobody/no-such-model' is not a local folder, the Hugging Face Hub "
                               f"cannot be reached (127.0.0.1:{port}: Connection refused), and it is not in the local "
                               "Hub cache; give the path of a local copy")
    assert result["error_s"] < 5  # huggingface_hub alone retries for about a minute


def test_credentials_in_a_hub_dataset_source_never_reach_the_message(online_settings):
    pytest.importorskip("datasets")
    from ctrlkit_datasets.hub import load_hub

    online_settings.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(DatasetError) as failed:
        load_hub("https://user:sk-SECRET123@example.com/d.json", split="test")
    assert "sk-SECRET123" not in str(failed.value) and "https://***@example.com/d.json" in str(failed.value)
