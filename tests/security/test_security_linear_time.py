"""Every pass ctrlkit makes over text from outside (a server's answer and error text, data files,
configuration strings, plugin output) takes time linear in the text's length, on inputs built to
be worst cases for each pattern: long runs of backslashes, repeated prefixes of every escape and
URL form, ``a.a.a.``, runs of the key's own pieces. See docs/reliability.md (Round 3: linear
text passes).

Benchmark-style, never a bare time limit: each pass runs on the text at 1/512, 1/64, 1/8 and all
of 1 MiB, in a child process; each size may take at most RATIO times the one before it (a linear
pass takes about 8 times, a quadratic one 64), and a size that runs well past that is stopped
and fails the test instead of hanging it (a quadratic pass over 1 MiB would take days).
"""

import multiprocessing
import time

import pytest

from ctrlkit.backbones.extractive import untagged
from ctrlkit.markdown import escape_markdown, visible
from ctrlkit.redaction import redact
from ctrlkit.secrets import mask_secrets, scrub_text
from ctrlkit.text import blocks
from ctrlkit_datasets.ccsbench import _length_fits
from ctrlkit_metrics.focus import parse_label
from ctrlkit_metrics.judging import UnparseableAnswer, json_object, single_rating

MIB = 1 << 20
RATIO = 32
"""Most a pass may take at 8n against n: four times what a linear pass needs (a text of 1 MiB no
longer fits a processor's cache as one of 128 KiB does), half what a quadratic one needs."""
FLOOR = 3.0
"""Seconds any one size may take whatever the size before it took: timing noise on tiny texts."""
KEY = "sk-proj-3f9c0a7b5e1d24680b1c2d3e4f5a6b7cZq9a8b7c6d5e"


def _sizes(top: int = MIB) -> list[int]:
    return [top // 512, top // 64, top // 8, top]


CALLS = 3
"""Calls at each size: one to warm up, then the best of two is its time."""
SMALLEST = 0.01
"""Seconds below which a time counts as this much: too short to time well (a linear pass that
takes under RATIO times this over 1 MiB passes whatever it took at 1/8)."""


def _timed(function, make, conn):
    for size in _sizes():
        text = make(size)
        function(text)
        best = float("inf")
        for _ in range(CALLS - 1):
            start = time.perf_counter()
            function(text)
            best = min(best, time.perf_counter() - start)
        conn.send((size, best))
    conn.close()


def assert_linear(function, make):
    """``function(make(n))`` takes about 8 times as long at 8n as at n, up to 1 MiB."""
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe(duplex=False)
    worker = context.Process(target=_timed, args=(function, make, child), daemon=True)
    worker.start()
    child.close()
    times = []
    try:
        for size in _sizes():
            allowed = CALLS * max(FLOOR, RATIO * times[-1][1]) if times else 60.0
            if not parent.poll(allowed):
                shown = f"{times[-1][1]:.4f} s at {times[-1][0]} characters" if times else "nothing"
                pytest.fail(f"{size} characters took over {allowed:.1f} s, after {shown}: not linear")
            times.append(parent.recv())
    finally:
        worker.kill()
        worker.join()
    (_, small), (_, large) = times[-2], times[-1]
    assert large <= RATIO * max(small, SMALLEST), times


def _repeat(unit: str):
    return lambda size: (unit * (size // len(unit) + 1))[:size]


def _spaced_key(size):
    return _repeat(" ".join(KEY[:7]) + "  ")(size)


HOSTILE = {  # name -> a text of a given size built to be slow for some pattern
    "backslashes": _repeat("\\"),
    "backslashes then u": lambda size: "\\" * (size - 1) + "u",
    "backslashes then u00": _repeat("\\" * 500 + "u00"),
    "backslashes then x": _repeat("\\" * 300 + "x1"),
    "escaped backslashes": _repeat("\\\\"),
    "percent 25s": _repeat("%25"),
    "percent 25s then no hex": _repeat("%" + "25" * 200 + "z"),
    "percents": _repeat("%"),
    "html references unclosed": _repeat("&#" + "1" * 9),
    "html hex unclosed": _repeat("&#x"),
    "ampersands": _repeat("&"),
    "unicode escapes of the key": _repeat("".join(f"\\u{ord(c):04x}" for c in KEY[:7]) + "."),
    "the key's 7-character prefix": _repeat(KEY[:7]),
    "the key's 8-character prefix, broken": _repeat(KEY[:8] + "!"),
    "the key over and over": _repeat(KEY),
    "the key spaced out": _spaced_key,
    "the key in utf-16": _repeat(KEY[:7].encode("utf-16-le").decode("latin-1") + "."),
    "whitespace": _repeat(" \t\n"),
    "invisible characters": _repeat("\u200b\ufeff+"),
    "a.a.a.": _repeat("a."),
    "one long word": _repeat("a"),
    "a scheme without ://": _repeat("a+b-c."),
    "schemes": _repeat("a://"),
    "scheme then colon": _repeat("a://b:"),
    "userinfo without @": lambda size: "https://" + "a" * (size - 8),
    "query words": lambda size: "?" + _repeat("a_")(size - 1),
    "query secret words": lambda size: "?" + _repeat("key_")(size - 1),
    "query values and commas": lambda size: "?api_key=" + _repeat(",a.a.a")(size - 9),
    "query starts": _repeat("?key="),
    "bearer and spaces": lambda size: "Bearer" + " " * (size - 7) + "!",
    "bearers": _repeat("Bearer "),
    "controls": _repeat("\x1b[31m\x9b\u202e\r"),
    "pipes and backticks": _repeat("|`*_[]"),
    "references unclosed": _repeat("&a" * 50 + " "),
    "sentence marks": _repeat("."),
    "marks and quotes": _repeat(".\"' "),
    "line breaks": _repeat("\n"),
    "JSON objects that never close": _repeat('{"a":1 '),
    "JSON keys that never close": _repeat('{"'),
    # found by the attack after round 3: a fence, a number, or a [TAG] mark, then spaces, never closed
    "a fence then spaces": lambda size: "```" + " " * (size - 3),
    "fences then spaces": _repeat("```json" + " " * 200),
    "a number then spaces": lambda size: "5" + " " * (size - 2) + "x",
    "a tag then spaces": lambda size: "[TAG]" + " " * (size - 5),
    "tags then spaces": _repeat("[TAG]" + " " * 100),
    # still open after that attack: a CCSBench length of a number, spaces and no 'words'
    "a number then spaces then a w": lambda size: "5" + " " * (size - 3) + "wx",
    "digits then a dash": lambda size: "1" * (size - 3) + "-50",
    "html references of zeros": _repeat("&#" + "0" * 60),
    "html hex references of many digits": _repeat("&#x" + "f" * 60),
    "html references of zeros, no semicolon, then the key": _repeat("&#000" + KEY[:3]),
    "html references escaped again and again, never closed": lambda size: "&" + "amp;" * ((size - 1) // 4),
    "html escaped ampersands, each unclosed": _repeat("&amp;&amp;#x"),
    "tag characters": _repeat("\U000e0041\u2061" + KEY[:3]),
}

PASSES = {
    "redact": lambda text: redact(text, KEY),
    "scrub_text": scrub_text,
    "mask_secrets": lambda text: mask_secrets({"base_url": text, "notes": [text]}),
    "escape_markdown": escape_markdown,
    "visible": visible,
    "blocks": blocks,
    "judge_answer": lambda text: _judged(text),
    "judge_rating": lambda text: _rated(text),
    "judge_label": lambda text: _labelled(text),
    "extractive_tags": untagged,
    "ccsbench_length": _length_fits,
}


def _judged(text):
    """The JSON object a judge's answer holds, found as the judge metrics find it, or None."""
    try:
        return json_object(text)
    except UnparseableAnswer:
        return None


def _rated(text):
    """The one rating a judge's answer gives (as the fm metric reads it), or None."""
    try:
        return single_rating(text, "rating", 5)
    except UnparseableAnswer:
        return None


def _labelled(text):
    """The focus label a judge's answer gives (as the focus metric reads it), or None."""
    try:
        return parse_label(text)
    except UnparseableAnswer:
        return None


@pytest.mark.slow
@pytest.mark.parametrize("text", sorted(HOSTILE))
@pytest.mark.parametrize("name", sorted(PASSES))
def test_each_pass_over_outside_text_is_linear_on_worst_cases(name, text):
    assert_linear(PASSES[name], HOSTILE[text])


@pytest.mark.parametrize("name, text", [
    *((name, text) for name in ("redact", "scrub_text")
      for text in ("backslashes", "a.a.a.", "the key spaced out", "percent 25s then no hex",
                   "html references of zeros", "html hex references of many digits", "tag characters")),
    ("judge_answer", "JSON objects that never close"), ("judge_answer", "JSON keys that never close"),
    ("judge_answer", "a fence then spaces"), ("judge_rating", "a number then spaces"),
    ("extractive_tags", "a tag then spaces"),
    ("ccsbench_length", "a number then spaces"), ("ccsbench_length", "a number then spaces then a w"),
    ("ccsbench_length", "digits then a dash")])
def test_the_worst_known_inputs_are_linear(name, text):
    # the fast subset of the above: the inputs that were quadratic before round 3
    assert_linear(PASSES[name], HOSTILE[text])



# ------------------------------------------------------- structured input of the third fresh attack


def _fd_line(size, key="k{}"):
    """An FD line of ``size`` characters of keys: many text keys, one system among them."""
    line = {"article": "a b c", "human": "a b", "s": "x", "s_human": 3.0}
    for i in range(size // 10):
        line[key.format(i)] = "t"
    return line


def _long_underscored_keys(size):
    """Text keys of 100 underscores each, which every other key could start with."""
    line = {"article": "a b c", "human": "a b", "s": "x", "s_human": 3.0}
    for i in range(size // 220):
        line[f"{i}" + "_a" * 100] = "t"
    return line


def _vocabulary_csv(size):
    """A seed-word CSV as wide as it is long: a topic column and a short row for every 16
    characters, and one full row giving every topic a word."""
    count = max(2, size // 16)
    return ",".join(f"t{i}" for i in range(count)) + "\n" + ",".join(["w"] * count) + "\n" + "w\n" * count


def _distinct_topics(size):
    from ctrlkit import Example

    return [Example(id=str(i), document=f"Text {i}.", references=[f"Summary {i}."], controls={"topic": f"topic{i}"})
            for i in range(size // 100)]


@pytest.mark.parametrize("make", [_fd_line, _long_underscored_keys], ids=["many keys", "long underscored keys"])
def test_an_fd_line_of_many_keys_is_read_in_linear_time(make):
    from ctrlkit_datasets.fd import systems_of

    # before: each text key was checked against every key (16,000 keys, a 229 KB line: 28 s)
    assert_linear(lambda line: systems_of(line, "fd.json:1"), make)


def test_a_vocabulary_file_of_many_columns_and_rows_is_read_in_linear_time(tmp_path):
    from ctrlkit_datasets.topic_assignment import read_vocabularies

    def read(text):
        path = tmp_path / f"seeds{len(text)}.csv"
        path.write_text(text)
        return read_vocabularies(path)

    # before: every row was walked for every column (a 340 KB file: 24.6 s)
    assert_linear(read, _vocabulary_csv)


def test_a_topic_mix_of_many_distinct_topics_pairs_in_linear_time():
    from ctrlkit_datasets.topic_mix import mix_topics

    # before: every group was sorted again for each pair (8,000 topics: 11.4 s)
    assert_linear(lambda examples: mix_topics(examples, seed=0), _distinct_topics)
