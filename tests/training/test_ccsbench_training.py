"""The training commands the ccsbench recipe's header gives for the paper's fine-tuned rows run
as written, on a release folder in CCSBench's layout written here and a tiny T5 built in the
fixture: the hard-prompt row (a fully fine-tuned model) and the soft-prefix rows (one prefix per
length bin)."""

import json
import re

import pytest

pytest.importorskip("torch", reason="training needs torch")
pytest.importorskip("transformers", reason="training needs transformers")
pytest.importorskip("peft", reason="prefixes need peft")

from ctrlkit.sweeps.recipes import recipe_folder  # noqa: E402

from helpers import invoke_ctrlkit, tiny_models  # noqa: E402
from helpers.ccs_release import write_release  # noqa: E402

pytestmark = pytest.mark.slow


def _header_command(start: str) -> list[str]:
    """The command of the recipe's header that begins with ``start``, its lines joined."""
    header = (recipe_folder() / "ccsbench.toml").read_text().split("\ndescription")[0]
    text = " ".join(line.lstrip("# ").rstrip("\\ ") for line in header.splitlines())
    found = re.search(re.escape(start) + r".*?-o \S+", text)
    assert found, start
    return found.group(0).split()


def _run(args, replacements):
    args = [replacements.get(arg, arg) for arg in args][1:]  # without the leading "ctrlkit"
    done = invoke_ctrlkit(*args)
    assert done.returncode == 0, done.stderr
    return done


def test_the_headers_fine_tuning_commands_run(tmp_path):
    release = write_release(tmp_path / "ccs", rows=4)
    t5 = tiny_models.build_t5(tmp_path / "t5")
    steps = ["--max-steps", "1", "--set", "hf.max_input_tokens=64"]
    hard = _header_command("ctrlkit train -b hf:FLAN_T5")
    _run(hard + steps, {"hf:FLAN_T5": f"hf:{t5}", "CCSBENCH_FOLDER": str(release),
                        "models/ccs-hard": str(tmp_path / "hard")})
    record = json.loads((tmp_path / "hard" / "training.json").read_text())
    assert record["config"]["peft"] is None and record["n_pairs"] == 4  # every weight, on the compositional train split
    assert record["config"]["options"]["prompt"]["template"] == "hard"

    lora = _header_command("ctrlkit train -b hf:google/flan-t5-xxl")
    _run(lora + steps, {"hf:google/flan-t5-xxl": f"hf:{t5}", "CCSBENCH_FOLDER": str(release),
                        "models/ccs-length": str(tmp_path / "lora"), "20": "1"})
    assert json.loads((tmp_path / "lora" / "training.json").read_text())["config"]["peft"]["method"] == "lora"

    # the soft-prefix rows: one prefix per requested length bin of the length subset
    _run(["ctrlkit", "train", "-b", f"hf:{t5}", "-c", "soft-prefix", "-d", "ccsbench", "--data", str(release),
          "--set", "ccsbench.subset=length", "--peft", "prefix", "-o", str(tmp_path / "sp"), *steps], {})
    prefixes = json.loads((tmp_path / "sp" / "ctrlkit_prefixes.json").read_text())["prefixes"]
    assert prefixes and all(key.startswith("length=") for key in prefixes)
    _run(["ctrlkit", "run", "-b", f"hf:{tmp_path / 'sp'}", "-c", "soft-prefix", "-d", "ccsbench", "--data",
          str(release), "--set", "ccsbench.subset=length", "--limit", "2", "-m", "length", "--no-baseline",
          "--set", "hf.max_new_tokens=4", "--set", "hf.num_beams=1", "-o", str(tmp_path / "run")], {})
