"""Property-based fuzzing (hypothesis) of the dataset loaders, controllers and metrics.

Each property has a bounded number of examples so the file runs in well under a minute. A
component may refuse its input, but only with a CtrlkitError (one line; for a loader, naming
the file), never another exception; values it returns are well-formed (metrics: finite floats
or None, never NaN or inf).
"""

import csv
import io
import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import ctrlkit
from ctrlkit import CtrlkitError, Example, ModelInput
from ctrlkit.topics import TopicSpace

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
FEW = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

# ---------------------------------------------------------------------------------------------
# strategies

TRICKY = ["", " ", "\t\n ", "...!?;:", "[TAG]", "[TAG] x [TAG]", "<sep>", "a <sep> b", "</s>", "{document}",
          "{", "}", "{{}}", "{0}", "{document.__class__}", "\x00", "\u2028", "\ud800", "é\u0301", "日本語の文。",
          "مرحبا بالعالم.", "Mr. A. B. went. Dr.", "a\r\nb", "word " * 50]
adversarial = st.one_of(
    st.sampled_from(TRICKY),
    st.text(max_size=200),
    st.text(alphabet=st.characters(), max_size=60),
    st.builds(lambda piece, n: piece * n, st.sampled_from(["word ", "x", "a. ", "!", "[TAG] ", "\n"]),
              st.integers(1, 4000)).map(lambda s: s[:20_000]),
    st.lists(st.sampled_from(TRICKY + ["The market fell.", "Shares rose", "goal"]), max_size=12).map(" ".join),
)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(10**300, 10**320),
                        st.floats(), st.text(max_size=20))
json_value = st.recursive(json_scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                               st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                          max_leaves=6)


@st.composite
def mutated(draw, data: bytes) -> bytes:
    """``data`` with a few random edits: truncation, byte flips, insertions (any bytes)."""
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete"]))
        at = draw(st.integers(0, len(data)))
        if kind == "truncate":
            data = data[:at]
        elif kind == "flip" and at < len(data):
            data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1:]
        elif kind == "insert":
            piece = draw(st.one_of(st.binary(min_size=1, max_size=8),
                                   st.sampled_from([b"\xff", b"\xc3", b'"', b",", b"\n", b"\r", b"\x00", b"{", b"]",
                                                    b'\\u', b"\xe2\x80\xa8"])))
            data = data[:at] + piece + data[at:]
        elif kind == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 5)):]
    return data


def retyped(record: dict, draw) -> dict:
    """``record`` with fields dropped or given another JSON type."""
    if not isinstance(record, dict) or not record:
        return record
    record = dict(record)
    for key in draw(st.lists(st.sampled_from(sorted(record)), max_size=3, unique=True)):
        if draw(st.booleans()):
            del record[key]
        else:
            record[key] = draw(json_value)
    return record


def check_load(load, path_text: str):
    """The loader property: Examples, or a one-line CtrlkitError naming the file."""
    try:
        examples = load()
    except CtrlkitError as exc:
        event("refused")
        message = str(exc)
        assert "\n" not in message and "\r" not in message, repr(message)
        assert path_text in message, (path_text, message)
        return
    event("loaded")
    assert isinstance(examples, list)
    for item in examples:
        assert isinstance(item, Example)
        assert isinstance(item.id, str)
        assert isinstance(item.document, str) and item.document.strip()


def _tmp():
    return tempfile.TemporaryDirectory(prefix="ctrlkit-fuzz-")


# ---------------------------------------------------------------------------------------------
# 1. dataset loaders

VALID_JSONL = [{"id": "a", "document": "The match ended.", "references": ["A match."], "controls": {"topic": "sports"}},
               {"id": "b", "document": "Shares fell.", "references": "Markets.", "controls": {"length": 20}}]


@st.composite
def jsonl_file(draw):
    records = [retyped(r, draw) if draw(st.booleans()) else r for r in VALID_JSONL]
    if draw(st.booleans()):
        records.append({"id": draw(json_value), "document": draw(adversarial)})
    text = "".join(json.dumps(r) + "\n" for r in records).encode("utf-8")
    return draw(mutated(text))


@FUZZ
@given(jsonl_file())
@example(b'{"id": "a\\nb", "document": "x"}\n{"id": "a\\nb", "document": "y"}\n')
@example(b'{"id": 1, "document": "x", "controls": {"length": ' + b"9" * 5000 + b"}}\n")
@example(b'{"id": 1, "document": ' + b"[" * 100_000 + b"}\n")
def test_jsonl_loader_fuzz(data):
    with _tmp() as folder:
        path = Path(folder, "data.jsonl")
        path.write_bytes(data)
        check_load(lambda: ctrlkit.get_dataset("jsonl", path=str(path)).load(None), str(path))


@st.composite
def csv_file(draw):
    rows = [["id", "document", "reference"], ["1", "The match ended.", "A match."], ["2", "Shares fell.", "Mkts."]]
    if draw(st.booleans()):
        rows.append([draw(st.text(max_size=5)), draw(adversarial), draw(adversarial)])
    if draw(st.booleans()):
        rows[draw(st.integers(1, len(rows) - 1))] = draw(st.lists(st.text(max_size=10), max_size=5))
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    text = out.getvalue().encode("utf-8", "surrogatepass")
    if draw(st.booleans()):  # a quoting error: an unbalanced quote or a quote inside a field
        at = draw(st.integers(0, len(text)))
        text = text[:at] + b'"' + text[at:]
    return draw(mutated(text))


@FUZZ
@given(csv_file())
@example(b'id,document,reference\n1,"abc\n')
@example(b'id,document,reference\n1,' + b"x" * 140_000 + b",y\n")
@example(b'id,document,reference\n1\n')
def test_csv_loader_fuzz(data):
    with _tmp() as folder:
        path = Path(folder, "data.csv")
        path.write_bytes(data)
        check_load(lambda: ctrlkit.get_dataset("csv", path=str(path)).load(None), str(path))


VALID_MACSUM = [{"source": ["The match ended.", "Fans cheered."], "metadata": {"dataset": "cnndm"},
                 "references": [{"summary": "A match.", "control_attribute": {"length": "short", "topic": "sport",
                                                                              "extractiveness": "normal",
                                                                              "specificity": "normal"}}]}]


@st.composite
def macsum_file(draw):
    source = retyped(VALID_MACSUM[0], draw) if draw(st.booleans()) else dict(VALID_MACSUM[0])
    if draw(st.booleans()) and isinstance(source.get("references"), list) and source["references"]:
        source["references"] = [retyped(source["references"][0], draw)]
    if draw(st.booleans()):
        source["source"] = draw(st.lists(st.one_of(adversarial, json_value), max_size=3))
    data = draw(st.sampled_from([[source], source, [source, draw(json_value)]]))
    return draw(mutated(json.dumps(data).encode("utf-8")))


@FUZZ
@given(macsum_file())
@example(b"[" * 100_000)
@example(b'[{"source": ["a"], "metadata": null, "references": [{"summary": "s", "control_attribute": {}}]}]')
@example(b'[{"source": ["a"], "metadata": [1], "references": [{"summary": "s", "control_attribute": {}}]}]')
def test_macsum_loader_fuzz(data):
    with _tmp() as folder:
        path = Path(folder, "macdoc_val.json")
        path.write_bytes(data)
        check_load(lambda: ctrlkit.get_dataset("macsum", path=str(path)).load(None), str(path))


@st.composite
def ctrlsum_files(draw):
    files = {"source": b"The match ended.\nShares fell.\n", "target": b"A match.\nMarkets.\n",
             "oracleword": b"match | ended\nshares\n"}
    for kind in draw(st.lists(st.sampled_from(sorted(files)), max_size=3, unique=True)):
        files[kind] = draw(mutated(files[kind] + draw(adversarial).encode("utf-8", "surrogatepass")))
    return files


@FUZZ
@given(ctrlsum_files())
@example({"source": b"a\x85b\nc\n", "target": b"x\ny\n", "oracleword": b"w\nv\n"})
@example({"source": "a\u2028b\nc\x0cd\n".encode(), "target": b"x\ny\n", "oracleword": b"w\nv\n"})
def test_ctrlsum_loader_fuzz(files):
    with _tmp() as folder:
        for kind, data in files.items():
            Path(folder, f"test.{kind}").write_bytes(data)
        check_load(lambda: ctrlkit.get_dataset("ctrlsum", path=folder).load("test"), folder)


def test_ctrlsum_lines_split_only_at_newlines(tmp_path):
    """A U+2028, NEL or form feed inside a line does not end it (str.splitlines would)."""
    (tmp_path / "test.source").write_text("One\u2028two\x85three.\r\nFour\x0cfive.\n", encoding="utf-8")
    (tmp_path / "test.target").write_text("A.\nB.\n", encoding="utf-8")
    (tmp_path / "test.oracleword").write_text("one\nfour\n", encoding="utf-8")
    examples = ctrlkit.get_dataset("ctrlsum", path=str(tmp_path)).load("test")
    assert [e.document for e in examples] == ["One\u2028two\x85three.", "Four\x0cfive."]
    assert [e.references for e in examples] == [["A."], ["B."]]


FD_RECORD = {"article": "A paper.", "human": "An abstract.", "gpt35": "A system abstract.",
             **{f"gpt35_{suffix}": 1.0 for suffix in ("human", "human_list", "gpt4_fm", "gpt35_fm", "bert",
                                                      "newrouge1", "newrouge2", "newrougel")}}


@st.composite
def fd_file(draw):
    record = retyped(FD_RECORD, draw) if draw(st.booleans()) else FD_RECORD
    return draw(mutated((json.dumps(record) + "\n").encode("utf-8")))


@FEW
@given(fd_file())
def test_fd_loader_fuzz(data):
    with _tmp() as folder:
        path = Path(folder, "arxiv.json")
        path.write_bytes(data)
        check_load(lambda: ctrlkit.get_dataset("fd", path=str(path), systems="gpt35").load(None), str(path))


NEWTS_HEADER = ["docId", "article", "tid1", "tid2", "words1", "words2", "phrases1", "phrases2",
                "sentences1", "sentences2", "summary1", "summary2"]


@st.composite
def newts_file(draw):
    row = ["d1", "The match ended.", "1", "2", "match, goal", "market", "a match", "a market", "About sport.",
           "About money.", "A match.", "Markets."]
    rows = [list(NEWTS_HEADER), row, ["d2", *row[1:]]]
    if draw(st.booleans()):
        rows[2] = draw(st.lists(st.one_of(adversarial, st.text(max_size=5)), max_size=13))
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return draw(mutated(out.getvalue().encode("utf-8", "surrogatepass")))


@FUZZ
@given(newts_file(), st.sampled_from(["train", "test"]))
@example(b"docId,article,tid1,tid2,words1,words2,phrases1,phrases2,sentences1,sentences2,summary1,summary2\n"
         b"d1,a,1,2,w,w,p,p,s,s,x,y\n\xff\n", "test")
@example(b"docId,article,tid1,tid2,words1,words2,phrases1,phrases2,sentences1,sentences2,summary1,summary2\n"
         b"d1,a,1,2,w,w,p,p,s,s,x,y\nd2,a\n", "test")
def test_newts_loader_fuzz(data, split):
    with _tmp() as folder:
        path = Path(folder, "NEWTS.csv")
        path.write_bytes(data)

        def load():
            dataset = ctrlkit.get_dataset("newts", path=str(path), test_fraction=0.5)
            examples = dataset.load(split)
            dataset.topic_documents()
            return examples

        check_load(load, str(path))


# ---------------------------------------------------------------------------------------------
# 2. controllers and the extractive backbone

@pytest.fixture(scope="module")
def sample_space():
    return TopicSpace.fit(ctrlkit.get_dataset("sample").topic_documents(), "tfidf")


@pytest.fixture(scope="module")
def controllers(sample_space, tmp_path_factory):
    tag = ctrlkit.get_controller("tag")
    tag.fit([], sample_space)
    template = tmp_path_factory.mktemp("prompt") / "template.txt"
    template.write_text("Topic {topic}\n{controls}\n{document}\n", encoding="utf-8")
    few = ctrlkit.get_controller("prompt", template="few-shot", shots=1)
    few.fit([Example("t1", "A train document.", ["A reference."], {"topic": "x"}),
             Example("t2", "Another train document.", ["Another."], {"topic": "y"})], None)
    length = ctrlkit.get_controller("length", unit="bin")
    length.use_dataset(ctrlkit.get_dataset("macsum"))
    return {
        "none": ctrlkit.get_controller("none"),
        "prepend": ctrlkit.get_controller("prepend"),
        "tag": tag,
        "guidance": ctrlkit.get_controller("guidance"),
        "guidance-keywords": ctrlkit.get_controller("guidance", source="keywords"),
        "length": ctrlkit.get_controller("length"),
        "length-bin": length,
        "prompt": ctrlkit.get_controller("prompt"),
        "prompt-hard": ctrlkit.get_controller("prompt", template="hard"),
        "prompt-few": few,
        "prompt-file": ctrlkit.get_controller("prompt", template="file", template_file=str(template)),
    }


SAMPLE_TOPICS = ["business", "environment", "health", "politics", "sports", "technology"]
control_value = st.one_of(adversarial, json_scalar, st.lists(st.one_of(adversarial, json_scalar), max_size=3),
                          st.sampled_from(SAMPLE_TOPICS + ["short", "long", "50", "-1", "nan", "1e400"]))


@st.composite
def controlled_example(draw):
    # every control the controllers read is present (a run checks `reads` before it applies any)
    controls = {name: draw(control_value) for name in ("topic", "entity", "keywords", "length", "readability")}
    if draw(st.booleans()):
        controls["topic"] = draw(st.sampled_from(SAMPLE_TOPICS))
    return Example(id=draw(st.text(max_size=8)), document=draw(adversarial), controls=controls)


CONTROLLERS = ["none", "prepend", "tag", "guidance", "guidance-keywords", "length", "length-bin", "prompt",
               "prompt-hard", "prompt-few", "prompt-file"]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(CONTROLLERS), controlled_example())
@example("length-bin", Example("x", "A document.", controls={"length": 1e307}))
@example("length", Example("x", "A document.", controls={"length": 10**400}))
@example("tag", Example("x", "A document.", controls={"topic": []}))
@example("prompt", Example("x", "A document.", controls={"length": 10**400}))
def test_controllers_fuzz(controllers, name, item):
    controller = controllers[name]
    try:
        result = controller.apply(item, ModelInput(source=item.document))
    except CtrlkitError:
        event("refused")
        return
    event("applied")
    assert isinstance(result, ModelInput)
    assert isinstance(result.source, str)
    if result.messages is not None:
        assert all(isinstance(m["content"], str) for m in result.messages)


@pytest.fixture(scope="module")
def extractive():
    return ctrlkit.get_backbone("extractive")


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.builds(ModelInput, source=adversarial,
                          guidance=st.one_of(st.none(), adversarial),
                          features=st.one_of(st.just({}), st.builds(lambda n: {"target_words": n},
                                                                    st.integers(1, 10**6))))
                , min_size=1, max_size=3),
       st.sampled_from(["boost", "restrict"]))
@example([ModelInput(source=""), ModelInput(source="!!! ..."), ModelInput(source="[TAG] [TAG] <sep>")], "boost")
def test_extractive_backbone_fuzz(inputs, guidance):
    backbone = ctrlkit.get_backbone("extractive", guidance=guidance)
    outputs = backbone.generate(inputs)
    assert isinstance(outputs, list) and len(outputs) == len(inputs)
    assert all(isinstance(output, str) for output in outputs)


# ---------------------------------------------------------------------------------------------
# 3. metrics

@pytest.fixture(scope="module")
def stas(sample_space):
    metric = ctrlkit.get_metric("stas")
    metric.use_topic_space(sample_space)
    return metric


METRICS = ["rouge", "stas", "sr", "length", "length-bin", "readability", "entity"]


def _finite_or_none(value):
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))


@st.composite
def scored(draw):
    n = draw(st.integers(1, 4))
    predictions = draw(st.lists(adversarial, min_size=n, max_size=n))
    examples = []
    for i in range(n):
        controls = {
            "topic": draw(st.one_of(st.sampled_from(SAMPLE_TOPICS), adversarial, json_value)),
            "keywords": draw(st.one_of(st.lists(adversarial, max_size=3), adversarial,
                                       st.lists(st.from_regex(r"\w+( \w+)?", fullmatch=True), min_size=1, max_size=3),
                                       st.sampled_from(["market, goal", ["shares rose"], "Ünïcode,日本"]))),
            "length": draw(st.one_of(st.integers(0, 500), st.floats(0, 1e6), control_value)),
            "readability": draw(st.sampled_from([None, "", "normal", "high", "bad"])),
            "entity": draw(adversarial),
        }
        references = draw(st.lists(adversarial, min_size=1, max_size=2))
        examples.append(Example(id=str(i), document="d", references=references, controls=controls))
    return predictions, examples


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(METRICS), scored())
@example("length", (["a b", "c d"], [Example("0", "d", ["r"], {"length": 10}), Example("1", "d", ["r"], {"length": 20})]))
@example("length", (["a b"], [Example("0", "d", ["r"], {"length": 10**400})]))
@example("stas", (["a b"], [Example("0", "d", ["r"], {"topic": ["sports"]})]))
@example("readability", (["", "!!!"], [Example("0", "d", ["r"], {"readability": "normal"}),
                                      Example("1", "d", ["r"], {"readability": "high"})]))
def test_metrics_fuzz(stas, name, case):
    predictions, examples = case
    metric = stas if name == "stas" else (ctrlkit.get_metric("length", unit="bin") if name == "length-bin"
                                          else ctrlkit.get_metric(name))
    try:
        metric.check(examples)
        result = metric.compute(predictions, examples)
    except CtrlkitError:
        event(f"{name} refused")
        return
    event(f"{name} computed")
    for values in result.per_example.values():
        assert len(values) == len(predictions)
        assert all(_finite_or_none(value) for value in values), values
    assert all(_finite_or_none(value) for value in result.corpus.values()), result.corpus
