"""Generated sweep configuration files: ``load_config`` either returns settings of the one form
a sweep takes, or raises one line (a ConfigurationError naming the file); never another exception."""

import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ctrlkit
from ctrlkit.sweeps.config import load_config
from ctrlkit.sweeps.settings import SETTINGS, check_settings

yaml = pytest.importorskip("yaml")

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYS = st.sampled_from([*SETTINGS, "controler", "limits", "Seed", ""]) | st.text(max_size=8)
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-2**40, max_value=2**40) | st.floats()
           | st.text(max_size=12) | st.sampled_from(["none, tag", "none,,tag", " ", "a\nb", "x.jsonl", "\x1b[2J"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=12)
TOML_VALUES = ["-5", "0", "3", "true", "nan", "inf", "2.5", "1979-05-27", '"none,tag"', '""', '"a\\nb"', "[]",
               '["none", "tag"]', "[1, 2]", '[["x"]]', "{ a = 1 }", '{ jsonl = "d.jsonl" }', "{ tag = { top_n = 5 } }",
               "{ tag = { top_n = nan } }", '"4294967296"', "4294967296", '"sample"']


def _one_line(text: str) -> bool:
    """No line break and no control character (a terminal escape) in a name an error may print."""
    return len(text.splitlines()) <= 1 and not any(ord(c) < 32 or 0x7f <= ord(c) <= 0x9f for c in text)


def _check(path: Path) -> None:
    try:
        loaded = load_config(path)
    except ctrlkit.ConfigurationError as error:
        message = str(error)
        assert "\n" not in message and message.startswith(str(path)), message
        return
    assert set(loaded) <= set(SETTINGS)
    for key in ("controllers", "metrics", "backbones", "datasets"):
        if key in loaded:
            assert loaded[key] and all(isinstance(n, str) and n.strip() == n and n and _one_line(n)
                                       for n in loaded[key])
    for key in ("split", "topics", "judge"):
        if key in loaded:
            assert isinstance(loaded[key], str) and loaded[key].strip() and _one_line(loaded[key])
    for key, low in (("limit", 1), ("seed", 0), ("batch_size", 1)):
        if key in loaded:
            assert type(loaded[key]) is int and loaded[key] >= low
    for component, options in loaded.get("options", {}).items():
        assert isinstance(options, dict)
        for value in options.values():
            assert isinstance(value, (str, int, float)) and (not isinstance(value, float) or math.isfinite(value))
    for dataset, data in loaded.get("data", {}).items():
        assert isinstance(data, str) and data
    assert check_settings(loaded, "again") == loaded  # the one form is a fixed point


@settings(FUZZ, max_examples=120)
@given(st.dictionaries(KEYS, VALUES, max_size=5))
def test_generated_yaml_settings_load_in_their_one_form_or_fail_in_one_line(config):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sweep.yaml"
        path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
        _check(path)


@FUZZ
@given(st.lists(st.tuples(st.sampled_from([*SETTINGS, "controler"]), st.sampled_from(TOML_VALUES)),
                max_size=5, unique_by=lambda pair: pair[0]))
def test_generated_toml_settings_load_in_their_one_form_or_fail_in_one_line(lines):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sweep.toml"
        path.write_text("".join(f"{key} = {value}\n" for key, value in lines), encoding="utf-8")
        _check(path)


@FUZZ
@given(st.binary(max_size=200) | st.text(alphabet="[]{}:,&*!- \n\tab#|>'\"%@`?", max_size=60),
       st.sampled_from([".yaml", ".toml"]))
def test_arbitrary_bytes_as_a_config_file_fail_in_one_line_or_load(content, suffix):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"sweep{suffix}"
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        _check(path)
