"""Numbers: NaN and infinities are refused where a finite number is meant, never written as NaN,
and seeds outside numpy's 32-bit range are one line, not a traceback."""

import json
import logging
import math
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ctrlkit
from ctrlkit import CtrlkitError, OptionError
from ctrlkit.cache import Cache, cache_dir
from ctrlkit.files import atomic_write_json, atomic_write_jsonl
from ctrlkit.options import Option

from helpers import run_ctrlkit

NON_FINITE = ["nan", "NaN", "inf", "-inf", "Infinity", "-Infinity", "+inf", " nan "]


def _no_constants(text: str):
    def refuse(constant):
        raise AssertionError(f"written: {constant}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("value", NON_FINITE + [float("nan"), float("inf"), float("-inf")])
def test_float_options_refuse_nan_and_infinities(value):
    with pytest.raises(OptionError, match=r"option 'extractive.lead_weight' expects a finite number"):
        ctrlkit.get_backbone("extractive", lead_weight=value)
    with pytest.raises(OptionError, match=r"option 'openai.temperature' expects a finite number"):
        ctrlkit.get_backbone("openai:m", temperature=value)


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_a_float_option_accepts_exactly_the_finite_values(value):
    option = Option("weight", float, 0.0, "a weight")
    if math.isfinite(value):
        assert option.coerce(repr(value), "x") == value and option.coerce(value, "x") == value
    else:
        with pytest.raises(OptionError, match="expects a finite number"):
            option.coerce(repr(value), "x")


def test_an_option_may_allow_non_finite_values_explicitly():
    assert Option("cap", float, math.inf, "no cap by default", allow_non_finite=True).coerce("inf", "x") == math.inf


def test_nan_on_the_command_line_is_one_line_before_any_work(tmp_path):
    result = run_ctrlkit("run", "--set", "extractive.lead_weight=nan", "--metric", "rouge", "--limit", "2",
                         "--out", str(tmp_path / "out"))
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].endswith("option 'extractive.lead_weight' expects a finite number, "
                                                           "got 'nan'")
    assert not (tmp_path / "out" / "results.json").exists()


@pytest.mark.parametrize("seed", ["-1", str(2**32), str(10**30)])
def test_a_seed_out_of_range_is_one_line(seed, tmp_path):
    result = run_ctrlkit("run", "--seed", seed, "--metric", "rouge", "--limit", "2", "--no-cache", cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert f"seed must be a whole number from 0 to 4294967295, got {seed}" in result.stderr.strip().splitlines()[-1]


def test_the_largest_seed_runs():
    result = ctrlkit.run(dataset="sample", metrics=["rouge"], limit=2, seed=2**32 - 1, cache=False)
    assert result.results["config"]["seed"] == 2**32 - 1


def test_nan_and_infinity_in_evaluate_input_are_written_as_null(tmp_path, caplog):
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "document": "One doc. Two sentences.", "references": ["Ref."], '
                    '"controls": {"weight": NaN}}\n'
                    '{"id": "b", "document": "Other doc. More text.", "references": ["Ref."]}\n')
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text('{"id": "a", "prediction": "One doc.", "human": NaN, "scores": [1, Infinity]}\n'
                           '{"id": "b", "prediction": "Other doc.", "human": -Infinity}\n')
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        ctrlkit.evaluate(predictions=str(predictions), dataset="jsonl", data=str(data), metrics=["rouge"],
                         out=str(tmp_path / "out"))
    samples = [_no_constants(line) for line in (tmp_path / "out" / "samples.jsonl").read_text().splitlines()]
    _no_constants((tmp_path / "out" / "results.json").read_text())
    assert samples[0]["given"] == {"human": None, "scores": [1, None]} and samples[1]["given"] == {"human": None}
    assert samples[0]["controls"] == {"weight": None}
    messages = [r.getMessage() for r in caplog.records]
    assert f"ctrlkit: {predictions}: replaced 3 NaN or infinite number(s) with null (in given: 3)" in messages
    assert "ctrlkit: dataset 'jsonl': replaced 1 NaN or infinite number(s) with null (in controls: 1)" in messages


def test_a_nan_prediction_is_one_line(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": "a", "document": "One doc.", "references": ["Ref."]}\n')
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text('{"id": "a", "prediction": NaN}\n')
    with pytest.raises(ctrlkit.DatasetError, match=r"predictions.jsonl:1: field 'prediction' must be a string"):
        ctrlkit.evaluate(predictions=str(predictions), dataset="jsonl", data=str(data), metrics=["rouge"])


_JSON_LIKE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0xFFFF)),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=12,
)


def _finite(value):
    """What a strict writer should make of ``value``: non-finite floats None, surrogates U+FFFD."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    if isinstance(value, list):
        return [_finite(item) for item in value]
    if isinstance(value, dict):
        return {_finite(key): _finite(item) for key, item in value.items()}
    return value


@settings(max_examples=150, deadline=None)
@given(_JSON_LIKE)
def test_json_writers_never_write_nan_or_text_that_is_not_utf8(tmp_path_factory, value):
    folder = tmp_path_factory.mktemp("json")
    atomic_write_json(folder / "results.json", {"value": value})
    atomic_write_jsonl(folder / "samples.jsonl", [{"value": value}])
    expected = {"value": _finite(value)}
    assert _no_constants((folder / "results.json").read_bytes().decode("utf-8")) == expected
    assert _no_constants((folder / "samples.jsonl").read_bytes().decode("utf-8")) == expected


def test_the_cache_stores_nan_as_null_and_takes_surrogate_keys():
    cache = Cache("numbers_test")
    cache.put({"prompt": "x\ud800"}, {"score": float("nan"), "text": "y\udfff"})
    assert cache.get({"prompt": "x\ud800"}) == {"score": None, "text": "y\ufffd"}
    assert cache.get({"prompt": "x\udfff"}) is None  # another key, not a collision
    with sqlite3.connect(cache_dir() / "cache.sqlite3") as connection:
        stored = [value for (value,) in connection.execute("SELECT value FROM numbers_test")]
    assert stored == ['{"score": null, "text": "y\ufffd"}']


def test_a_sweep_with_a_nan_option_is_refused_and_writes_no_nan(tmp_path):
    config = tmp_path / "sweep.toml"
    config.write_text('controllers = ["none"]\nmetrics = ["rouge"]\nlimit = 2\n'
                      '[options.extractive]\nlead_weight = nan\n')
    result = run_ctrlkit("sweep", "--config", str(config), "--out", str(tmp_path / "sweep"))
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    said = result.stderr.strip().splitlines()[-1]  # the config check names the file and the setting
    assert "sweep.toml: setting 'options.extractive.lead_weight' must be a finite number" in said, said
    for written in (tmp_path / "sweep").rglob("*.json"):
        _no_constants(written.read_text())


COUNTS = [({"limit": -5}, "limit"), ({"limit": 0}, "limit"), ({"limit": True}, "limit"), ({"limit": 2.5}, "limit"),
          ({"batch_size": 0}, "batch_size")]


@pytest.mark.parametrize("call, counts, said", [
    (call, counts, said) for call in ("run", "evaluate", "sweep", "interference") for counts, said in COUNTS
    if not (call == "evaluate" and "batch_size" in counts)])  # evaluate generates nothing: no batch size
def test_the_library_refuses_counts_the_command_line_refuses(tmp_path, call, counts, said):
    """``examples[:-5]`` would drop five rows without a word: the library checks what the CLI checks."""
    import ctrlkit
    from ctrlkit.analyses.interference import interference
    from ctrlkit.sweeps.sweep import sweep

    out = tmp_path / "out"
    calls = {
        "run": lambda: ctrlkit.run(controller="none", metrics=["rouge"], out=str(out), **counts),
        "evaluate": lambda: ctrlkit.evaluate(predictions=str(tmp_path / "p.jsonl"), metrics=["rouge"], out=str(out),
                                             **counts),
        "sweep": lambda: sweep(out=str(out), controllers=["none"], metrics=["rouge"], **counts),
        "interference": lambda: interference(controller="prepend", attributes=["topic"], metrics=["rouge"],
                                             out=str(out), **counts),
    }
    with pytest.raises(ctrlkit.CtrlkitError, match=said):
        calls[call]()
    assert not (out / "results.json").exists()


# ------------------------------------------------------------------ what to_json refuses (after round 3)

class _Opaque:
    def __repr__(self):
        return "Opaque(api_key=sk-should-never-be-written)"


_UNWRITABLE = {  # value -> the words of the one line naming it
    "set": ({1, 2}, "metrics.x is a set, not JSON data"),
    "frozenset": (frozenset({"a"}), "metrics.x is a frozenset"),
    "bytes": (b"abc", "metrics.x is a bytes"),
    "bytearray": (bytearray(b"abc"), "metrics.x is a bytearray"),
    "Path": (__import__("pathlib").Path("/tmp/x"), "metrics.x is a PosixPath"),
    "Decimal": (__import__("decimal").Decimal("1.1"), "metrics.x is a Decimal"),
    "complex": (1 + 2j, "metrics.x is a complex"),
    "object": (_Opaque(), "metrics.x is an _Opaque"),
    "datetime": (__import__("datetime").date(2026, 1, 1), "metrics.x is a date"),
    "a set in a list": ([1, [2, {3}]], r"metrics.x[1][1] is a set"),
    "a tuple key": ({(1, 2): 3}, "metrics.x has a key of type tuple, not text"),
    "huge int": (10 ** 5000, "metrics.x is an integer of about 5001 digits"),
    "a generator": ((i for i in range(3)), "metrics.x is a generator"),
}


@pytest.mark.parametrize("kind", sorted(_UNWRITABLE))
def test_a_value_json_cannot_hold_is_one_line_naming_file_and_field_and_the_old_file_stays(tmp_path, kind):
    # files.to_json promised it never fails; it raised TypeError or ValueError tracebacks
    value, words = _UNWRITABLE[kind]
    target = tmp_path / "results.json"
    target.write_text('{"old": true}\n')
    with pytest.raises(ctrlkit.CtrlkitError) as refused:
        atomic_write_json(target, {"metrics": {"x": value}, "n": 1})
    message = str(refused.value)
    assert message.startswith(f"cannot write {target}: field ") and words in message, message
    assert "\n" not in message and "sk-should-never" not in message
    assert target.read_text() == '{"old": true}\n' and sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]
    with pytest.raises(ctrlkit.CtrlkitError, match=rf"^cannot write {tmp_path / 'samples.jsonl'} line 3: field "):
        atomic_write_jsonl(tmp_path / "samples.jsonl", [{"a": 1}, {"a": 2}, {"metrics": {"x": value}}])
    assert not (tmp_path / "samples.jsonl").exists()
    with pytest.raises(ctrlkit.CtrlkitError, match=r"^cannot store a value in the cache: field "):
        Cache("unwritable_test").put({"prompt": kind}, {"metrics": {"x": value}})


def test_to_json_converts_what_it_says_and_nothing_else():
    from collections import namedtuple

    from ctrlkit.files import to_json

    import numpy as np

    pair = namedtuple("pair", "a b")
    written = json.loads(to_json({"t": (1, 2), "n": pair(1, "x"), "np": np.float32(0.5), "i": np.int64(3),
                                  "nan": float("nan"), "s": "a\ud800", 1: "one", 2.5: "half", None: "n"}))
    assert written == {"t": [1, 2], "n": [1, "x"], "np": 0.5, "i": 3, "nan": None, "s": "a\ufffd", "1": "one",
                       "2.5": "half", "null": "n"}
    loop = []
    loop.append(loop)
    with pytest.raises(ctrlkit.CtrlkitError, match="nested over 100 levels"):
        to_json({"loop": loop})


@pytest.mark.parametrize("mapping, written", [({1: "a", "1": "b"}, '"1"'), ({None: 1, "null": 2}, '"null"'),
                                              ({True: 1, "true": 2}, '"true"')])
def test_two_keys_json_writes_alike_are_one_line_not_a_lost_value(mapping, written):
    from ctrlkit.files import to_json

    # before: {"1": "a", "1": "b"} was written, and a reader kept one of the two values
    with pytest.raises(CtrlkitError) as caught:
        to_json({"means": mapping})
    assert f"has two keys written as {written}" in str(caught.value) and "\n" not in str(caught.value)
    assert to_json({"means": {1: "a", 2: "b"}}) == '{"means": {"1": "a", "2": "b"}}'
