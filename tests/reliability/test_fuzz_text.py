"""Text that cannot be written as UTF-8 (lone surrogates), control characters, huge documents, and
sentence splitting that stays linear on them.

A lone surrogate is valid JSON (``"\\ud800"``); before ``ctrlkit.intake``, one in a document, id,
prediction, path or server answer made the run fail after the work, when the cache or the
results were written. Now every text entering a run is cleaned (U+FFFD, counted, one warning)."""

import json
import logging
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctrlkit
from ctrlkit import DatasetError
from ctrlkit import text as text_module
from ctrlkit.cache import cache_dir
from ctrlkit.intake import MAX_DOCUMENT_CHARS
from ctrlkit.text import _MARK, BLOCK_CHARS, LINE_CHARS, MARKS_PER_BLOCK, WINDOW_CHARS, blocks, sentences

from helpers.chat_server import JsonHandler, serving
from helpers import run_ctrlkit, shared_file

LONE = "\ud800"
LOW = "\udfff"
FFFD = "\ufffd"


def _write_jsonl(path: Path, rows) -> Path:
    # json.dumps escapes a lone surrogate (ensure_ascii), as a real file would hold it
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _strict_json(path: Path):
    """Every line (or the whole file) parses as JSON from strict UTF-8, without NaN or infinity."""
    def refuse(constant):
        raise AssertionError(f"{path.name} holds {constant}")

    text = path.read_bytes().decode("utf-8")  # raises on anything not UTF-8
    if path.suffix == ".jsonl":
        return [json.loads(line, parse_constant=refuse) for line in text.splitlines()]
    return json.loads(text, parse_constant=refuse)


def _cache_values() -> list[str]:
    database = cache_dir() / "cache.sqlite3"
    with sqlite3.connect(database) as connection:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return [value for table in tables for (value,) in connection.execute(f"SELECT value FROM {table}")]


def _rows():
    return [
        {"id": f"a{LONE}", "document": f"The first document {LONE} talks about sport. It has two sentences.",
         "references": [f"A reference {LOW} about sport."], "controls": {"topic": f"sp{LONE}rt", "note": LOW}},
        {"id": "b", "document": f"Second {LOW}{LONE} document. Politics and elections today.",
         "references": "Politics today.", "controls": {"topic": "politics"}},
    ]


def test_a_run_over_lone_surrogates_completes_and_writes_valid_utf8(tmp_path, caplog):
    data = _write_jsonl(tmp_path / "data.jsonl", _rows())
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        ctrlkit.run(dataset="jsonl", data=str(data), controller="none", backbone="extractive",
                    metrics=["rouge"], out=str(tmp_path / "out"))
    samples = _strict_json(tmp_path / "out" / "samples.jsonl")
    _strict_json(tmp_path / "out" / "results.json")
    assert [sample["id"] for sample in samples] == [f"a{FFFD}", "b"]
    assert samples[0]["controls"] == {"topic": f"sp{FFFD}rt", "note": FFFD}
    assert FFFD in samples[0]["prediction"] and LONE not in json.dumps(samples, ensure_ascii=False)
    for value in _cache_values():
        value.encode("utf-8")
    warnings = [r.getMessage() for r in caplog.records if "lone surrogate" in r.getMessage()]
    assert warnings == ["ctrlkit: dataset 'jsonl': replaced 7 lone surrogate(s) with U+FFFD "
                        "(in controls: 2, document: 3, id: 1, references: 1)"]


def test_topic_names_with_lone_surrogates_still_match_their_topic_documents(tmp_path):
    """Examples and topic documents are cleaned alike, so a topic spelled with a surrogate in
    both is still known; the tag controller's inputs reach the cache."""
    data = _write_jsonl(tmp_path / "data.jsonl", _rows())
    topics = _write_jsonl(tmp_path / "topics.jsonl", [
        {"topic": f"sp{LONE}rt", "text": f"sport football match goal {LONE} team player"},
        {"topic": "politics", "text": "politics election vote parliament minister"},
    ])
    result = ctrlkit.run(dataset="jsonl", data=str(data), controller="tag", topics=str(topics),
                         backbone="extractive", metrics=["rouge"], baseline=None, out=str(tmp_path / "out"))
    assert result.samples[0]["controls"]["topic"] == f"sp{FFFD}rt"
    _strict_json(tmp_path / "out" / "samples.jsonl")


def test_a_data_path_that_is_not_utf8_is_recorded_not_fatal(tmp_path):
    """A file name with bytes that are not UTF-8 reaches Python as lone surrogates (surrogateescape),
    and results.json records the path: that was a failure after the work."""
    name = os.fsdecode(b"data-\xff.jsonl")
    assert "\udcff" in name
    data = _write_jsonl(tmp_path / name, _rows())
    ctrlkit.run(dataset="jsonl", data=str(data), backbone="extractive", metrics=["rouge"], baseline=None,
                out=str(tmp_path / "out"))
    results = _strict_json(tmp_path / "out" / "results.json")
    assert results["config"]["data"].endswith(f"data-{FFFD}.jsonl")


def test_an_evaluation_of_predictions_with_lone_surrogates_writes_valid_utf8(tmp_path, caplog):
    data = _write_jsonl(tmp_path / "data.jsonl", _rows())
    predictions = _write_jsonl(tmp_path / "predictions.jsonl", [
        {"id": f"a{LONE}", "prediction": f"Sport {LONE} summary.", "system": f"sys{LOW}", f"k{LONE}": 1},
        {"id": "b", "prediction": "Politics summary.", "system": "sys"},
    ])
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        ctrlkit.evaluate(predictions=str(predictions), dataset="jsonl", data=str(data), metrics=["rouge"],
                         out=str(tmp_path / "out"))
    samples = _strict_json(tmp_path / "out" / "samples.jsonl")
    assert samples[0]["prediction"] == f"Sport {FFFD} summary."
    assert samples[0]["given"] == {"system": f"sys{FFFD}", f"k{FFFD}": 1}
    assert any(str(predictions) in r.getMessage() and "prediction: 1" in r.getMessage() for r in caplog.records)


def test_a_csv_with_nul_and_control_characters_runs_and_writes_valid_json(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text('id,document,reference\nx\x00,"A doc\x00 with \x01 control \x1b[31m chars. Second one.",'
                    '"Ref \x00."\n', encoding="utf-8")
    ctrlkit.run(dataset="csv", data=str(path), backbone="extractive", metrics=["rouge"], baseline=None,
                out=str(tmp_path / "out"))
    samples = _strict_json(tmp_path / "out" / "samples.jsonl")
    assert samples[0]["id"] == "x\x00" and "\x1b" in samples[0]["prediction"]


def test_a_csv_holding_surrogate_bytes_is_one_line_not_a_traceback(tmp_path):
    path = tmp_path / "data.csv"
    path.write_bytes("id,document,reference\n1,doc \ud800 text.,ref\n".encode("utf-8", "surrogatepass"))
    result = run_ctrlkit("run", "--dataset", "csv", "--data", str(path), "--metric", "rouge", "--no-cache",
                         cwd=tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "cannot read as CSV" in result.stderr.strip().splitlines()[-1]


class _SurrogateChat(JsonHandler):
    """A chat-completions server whose every answer holds lone surrogates (escaped in its JSON)."""

    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        content = f"Summary {LONE} with {LOW} surrogates."
        self.reply(200, {"id": "c", "object": "chat.completion",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                      "finish_reason": "stop"}]})


@pytest.fixture
def surrogate_server():
    with serving(_SurrogateChat) as server:
        yield server.url


def test_a_server_answering_lone_surrogates_gives_a_complete_run(tmp_path, surrogate_server, caplog):
    data = _write_jsonl(tmp_path / "data.jsonl", _rows())
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        ctrlkit.run(dataset="jsonl", data=str(data), backbone="openai:m", metrics=["rouge"], baseline=None,
                    options={"openai": {"base_url": surrogate_server, "max_retries": 0}}, out=str(tmp_path / "out"))
    samples = _strict_json(tmp_path / "out" / "samples.jsonl")
    assert [s["prediction"] for s in samples] == [f"Summary {FFFD} with {FFFD} surrogates."] * 2
    assert "ctrlkit: backbone 'openai': replaced 4 lone surrogate(s) with U+FFFD (in generations: 4)" in [
        r.getMessage() for r in caplog.records]
    assert f"Summary {FFFD} with {FFFD} surrogates." in [json.loads(v) for v in _cache_values()]


def test_a_judge_answering_lone_surrogates_is_cached_cleaned_with_one_warning(surrogate_server, caplog):
    from ctrlkit_metrics.judging import ask

    judge = ctrlkit.get_backbone("openai:judge-model", base_url=surrogate_server, max_retries=0, concurrency=1)
    prompts = [({"role": "user", "content": f"rate this {LONE} {n}"},) for n in range(10)]  # chunks of 4
    with caplog.at_level(logging.WARNING, logger="ctrlkit"):
        assert ask(judge, prompts) == [f"Summary {FFFD} with {FFFD} surrogates."] * 10
    assert [r.getMessage() for r in caplog.records if "surrogate" in r.getMessage()] == [
        "ctrlkit: judge 'openai': replaced 20 lone surrogate(s) with U+FFFD (in answers: 20)"]
    assert ask(judge, prompts[:1]) == [f"Summary {FFFD} with {FFFD} surrogates."]  # from the cache


def test_a_backbone_returning_no_text_is_one_line(tmp_path, throwaway_plugins):
    class Silent(ctrlkit.Backbone):
        def generate(self, inputs):
            return [None for _ in inputs]

    class Plugin:
        @ctrlkit.hookimpl
        def register_backbones(self, register):
            register("silent", Silent)

    throwaway_plugins(Plugin(), "silent-plugin")
    data = _write_jsonl(tmp_path / "data.jsonl", _rows())
    with pytest.raises(ctrlkit.CtrlkitError, match="backbone 'silent' returned NoneType, not text, for example"):
        ctrlkit.run(dataset="jsonl", data=str(data), backbone="silent", metrics=["rouge"], baseline=None,
                    cache=False)


def test_a_plugin_dataset_with_lone_surrogates_is_cleaned_too(tmp_path, throwaway_plugins):
    class Odd(ctrlkit.Dataset):
        def load(self, split):
            return [ctrlkit.Example(id=f"o{LONE}", document=f"One {LONE} text. Another sentence here.",
                                    references=[f"Ref {LOW}."], meta={"score": float("nan")})]

    class Plugin:
        @ctrlkit.hookimpl
        def register_datasets(self, register):
            register("odd", Odd)

    throwaway_plugins(Plugin(), "odd-plugin")
    result = ctrlkit.run(dataset="odd", backbone="extractive", metrics=["rouge"], baseline=None,
                         out=str(tmp_path / "out"))
    assert result.samples[0]["id"] == f"o{FFFD}"
    _strict_json(tmp_path / "out" / "samples.jsonl")


def test_a_document_over_the_size_limit_is_refused_before_any_work(tmp_path):
    rows = [{"id": "small", "document": "Fine."},
            {"id": "huge", "document": "word " * (MAX_DOCUMENT_CHARS // 5) + "x"}]
    data = _write_jsonl(tmp_path / "data.jsonl", rows)
    with pytest.raises(DatasetError, match=rf"the document of example 'huge' has {MAX_DOCUMENT_CHARS + 1:,} "
                                           rf"characters, over the limit of {MAX_DOCUMENT_CHARS:,}"):
        ctrlkit.run(dataset="jsonl", data=str(data), backbone="extractive", metrics=["length"], baseline=None,
                    out=str(tmp_path / "out"))
    assert not (tmp_path / "out" / "results.json").exists()


# Sentence splitting: linear on huge texts, unchanged on texts of normal size.

def _whole(text: str) -> tuple[str, ...]:
    """The splitting before blocks: pysbd on the whole text, its start offsets as cuts."""
    text_module._cuts("warm up")
    cuts = sorted({0, *(s.start for s in text_module._segmenter.segment(text) if 0 < s.start < len(text))})
    return tuple(p for p in (text[a:b].strip() for a, b in zip(cuts, cuts[1:] + [len(text)])) if p)


def _shared_texts() -> list[str]:
    newts = ctrlkit.get_dataset("newts", path=str(shared_file("newts/NEWTS_test_600.csv"))).load("test")
    fd = ctrlkit.get_dataset("fd", path=str(shared_file("fd/arxiv.json"))).load(None)
    texts = [e.document for e in newts + fd] + [r for e in newts + fd for r in e.references]
    return list(dict.fromkeys(texts + [e.meta["prediction"] for e in fd]))


def test_every_newts_article_and_fd_text_is_split_whole_as_before():
    """Each is one block, so ``sentences`` is exactly the old pysbd-on-the-whole-text; checked
    outright on the longest (an 11,402-character one-line article, 100,000-character papers)."""
    texts = _shared_texts()
    assert all(blocks(text) == [(0, len(text))] for text in texts)
    longest = sorted(texts, key=len)[-3:] + [max(texts, key=lambda t: max(map(len, t.split("\n"))))]
    for text in longest:
        assert sentences(text) == _whole(text)


_TEXTS = st.lists(st.sampled_from(list("aB .!?\n") + ["Dr.", " Mr. Smith", "U.S.", "\u201c", " 3.5 ", "e.g. ",
                                                      "The cat sat.", " It rained! "]), max_size=30).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_TEXTS, max_size=8).map(" ".join))
def test_texts_within_a_block_split_as_before(text):
    assert blocks(text) == [(0, len(text))]
    assert sentences(text) == _whole(text)


@settings(max_examples=80, deadline=None)
@given(text=st.lists(_TEXTS, max_size=12).map(" ".join), size=st.integers(8, 120), line=st.integers(4, 60),
       window=st.integers(2, 60), marks=st.integers(1, 12))
def test_blocks_cover_the_text_within_their_bounds_and_sentences_lose_nothing(text, size, line, window, marks):
    line = min(line, size)
    window = min(window, line)
    spans = blocks(text, size, line, window, marks)
    assert [start for start, _ in spans[1:]] == [end for _, end in spans[:-1]]
    assert (spans[0][0], spans[-1][1]) == (0, len(text))
    for start, end in spans:
        piece = text[start:end]
        assert 0 < len(piece) <= size or text == ""
        assert all(len(part) <= line for part in piece.split("\n"))
        assert len(_MARK.findall(piece)) <= marks or len(piece) == 1
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(text_module, "blocks", lambda whole: blocks(whole, size, line, window, marks))
        split = sentences.__wrapped__(text)
    assert all(s and s == s.strip() for s in split)
    assert "".join("".join(split).split()) == "".join(text.split())


@pytest.mark.parametrize("unit", ["a\n", "a. ", "Hi.\n", "Mr. ", "?!\n"])
def test_tiny_sentences_reach_pysbd_in_blocks_of_a_bounded_number_of_sentence_ends(monkeypatch, unit):
    """pysbd is quadratic in the number of sentences too: 16,000 characters of ``a\n`` take 11 s in
    one block; each block now holds at most MARKS_PER_BLOCK possible ends."""
    seen = []
    monkeypatch.setattr(text_module, "_cuts", lambda block: seen.append(block) or set())
    text = unit * (60_000 // len(unit))
    sentences.__wrapped__(text)
    assert "".join(seen) == text and len(seen) > 1
    assert max(len(_MARK.findall(block)) for block in seen) <= MARKS_PER_BLOCK


def test_a_huge_text_reaches_pysbd_only_in_bounded_blocks(monkeypatch):
    """Linear time: pysbd (quadratic) never sees more than BLOCK_CHARS, nor a line over LINE_CHARS;
    a longer line reaches it in windows of at most WINDOW_CHARS."""
    seen = []
    monkeypatch.setattr(text_module, "_cuts", lambda block: seen.append(block) or set())
    paragraph = "This is a sentence about nothing at all. " * 600  # 24,600 characters, one line
    for text in (paragraph * 100, (paragraph + "\n") * 100, ("Short line here.\n" * 50_000)):
        seen.clear()
        assert len(sentences.__wrapped__(text)) >= 1
        assert "".join(seen) == text
        assert max(map(len, seen)) <= BLOCK_CHARS
        assert all(len(line) <= LINE_CHARS for block in seen for line in block.split("\n"))
        if "\n" not in text[:30_000]:
            assert max(map(len, seen)) <= WINDOW_CHARS


def test_long_lines_are_cut_after_a_sentence_end():
    text = "A sentence ends here. " * 5_000
    cuts = [end for _, end in blocks(text)[:-1]]
    assert cuts and all(text[end - 2 : end] == ". " and text[end] == "A" for end in cuts)


def test_an_interference_analysis_over_lone_surrogates_writes_valid_utf8(tmp_path):
    from ctrlkit.analyses.interference import interference

    data = _write_jsonl(tmp_path / "data.jsonl", [
        {"id": f"a{LONE}", "document": f"One {LONE} short sentence here. " * 6, "controls": {"length": 10}},
        {"id": "b", "document": f"Another {LOW} sentence is here. " * 6, "controls": {"length": 20}},
    ])
    interference(dataset="jsonl", data=str(data), controller="length", attributes=["length"], metrics=["length"],
                 out=str(tmp_path / "out"))
    _strict_json(tmp_path / "out" / "interference.json")


def test_any_text_file_ctrlkit_writes_takes_lone_surrogates(tmp_path):
    """Reports, tables and markdown go through the same writer: a lone surrogate is U+FFFD."""
    from ctrlkit.files import atomic_write_text

    undecodable = os.fsdecode(b"bad-\xff.jsonl")
    atomic_write_text(tmp_path / "table.csv", f"controller,data\nnone,{undecodable}\n")
    assert (tmp_path / "table.csv").read_bytes().decode("utf-8") == f"controller,data\nnone,bad-{FFFD}.jsonl\n"
