import json
from collections import Counter
from itertools import combinations

import pytest

import ctrlkit
from ctrlkit import Example
from ctrlkit.text import sentences
from ctrlkit_datasets.topic_mix import build_topic_mix, mix_topics, topic_mix

from helpers import invoke_ctrlkit, run_ctrlkit, shared_file


def _sample():
    return ctrlkit.get_dataset("sample").load("test")


def _newts():
    return ctrlkit.get_dataset("newts", path=str(shared_file("newts/NEWTS_test_600.csv"))).load("train")


@pytest.fixture(params=["sample", "newts"])
def examples(request):
    return {"sample": _sample, "newts": _newts}[request.param]()


def _is_interleaving(document, first, second):
    """``document`` holds exactly the sentences of both articles (as a multiset), in the order
    A1 B1 A2 B2 ... then the rest of the longer. Segmenting ``document`` again is no test: pysbd
    can merge two quoted sentences that meet at a new boundary; so the source sentences are
    laid out and compared with it, and its characters (but spaces) with theirs."""
    a, b = list(sentences(first)), list(sentences(second))
    order = [a[i // 2] if i % 2 == 0 else b[i // 2] for i in range(2 * min(len(a), len(b)))]
    order += a[len(b):] + b[len(a):]
    same_text = Counter("".join(document.split())) == Counter("".join((first + second).split()))
    return same_text and document == " ".join(order)


def _assert_valid_mix(rows, examples):
    """Each row pair interleaves two distinct articles of ``examples``, each asked for a topic only
    it has (among the examples carrying one) with the reference of the example the row names;
    no article is used twice."""
    by_id = {example.id: example for example in examples}
    topics_of = {}
    for example in examples:
        if example.controls.get("topic"):
            topics_of.setdefault(example.document, set()).add(example.controls["topic"])
    assert rows and len(rows) % 2 == 0
    used = []
    for a_row, b_row in zip(rows[::2], rows[1::2]):
        assert a_row["document"] == b_row["document"] and a_row["meta"] == b_row["meta"]
        source_ids, (s, t) = a_row["meta"]["articles"], a_row["meta"]["topics"]
        first, second = (by_id[i] for i in source_ids)
        assert first.document != second.document
        assert _is_interleaving(a_row["document"], first.document, second.document)
        # each requested topic belongs to one article only, so it says which summary is wanted
        assert s in topics_of[first.document] - topics_of[second.document]
        assert t in topics_of[second.document] - topics_of[first.document]
        assert (a_row["controls"], a_row["references"]) == ({"topic": s}, [first.references[0]])
        assert (b_row["controls"], b_row["references"]) == ({"topic": t}, [second.references[0]])
        assert first.controls["topic"] == s and second.controls["topic"] == t
        used += [first.document, second.document]
    assert len(used) == len(set(used)), "an article was used twice"
    assert len({row["id"] for row in rows}) == len(rows)


def test_each_pair_mixes_two_articles_and_is_emitted_in_both_directions(examples):
    _assert_valid_mix(build_topic_mix(examples, seed=0), examples)


def test_pairs_continue_until_no_two_articles_can_be_mixed(examples):
    mix = mix_topics(examples, seed=0)
    left = [article.topics for article in mix.unpaired]
    assert all(not (x - y and y - x) for x, y in combinations(left, 2))
    # every article of these datasets has two topics: what is left shares one topic set
    assert len(set(left)) <= 1
    assert 2 * len(mix.pairs) + len(left) == len({example.document for example in examples})


def test_the_same_seed_gives_the_same_bytes_and_another_seed_another_pairing(examples, tmp_path):
    from ctrlkit_datasets.topic_mix import write_topic_mix

    write_topic_mix(tmp_path / "one.jsonl", examples, seed=1)
    write_topic_mix(tmp_path / "two.jsonl", examples, seed=1)
    assert (tmp_path / "one.jsonl").read_bytes() == (tmp_path / "two.jsonl").read_bytes()
    pairing = [row["meta"]["articles"] for row in build_topic_mix(examples, seed=1)]
    assert pairing != [row["meta"]["articles"] for row in build_topic_mix(examples, seed=2)]


def test_the_output_reads_back_as_a_jsonl_dataset(examples, tmp_path):
    from ctrlkit_datasets.topic_mix import write_topic_mix

    path = tmp_path / "mix.jsonl"
    write_topic_mix(path, examples)
    rows = build_topic_mix(examples)
    loaded = ctrlkit.get_dataset("jsonl", path=str(path)).load(None)
    assert [(e.id, e.document, e.references, e.controls) for e in loaded] == \
           [(r["id"], r["document"], r["references"], r["controls"]) for r in rows]


def test_single_topic_articles_pair_across_the_two_largest_topics_first():
    examples = [Example(id=f"{topic}{i}", document=f"A {topic} story number {i}. It ends here.",
                        references=[f"{topic} {i}"], controls={"topic": topic})
                for topic, count in (("a", 5), ("b", 3), ("c", 1)) for i in range(count)]
    mix = mix_topics(examples, seed=0)
    assert len(mix.pairs) == 4  # the most possible: 9 articles, at most 5 - 1 of them on 'a' unpaired
    assert mix.unpaired_by_topics() == {"a": 1}
    assert all(pair.first_topic != pair.second_topic for pair in mix.pairs)


def test_an_article_pairs_only_on_a_topic_its_partner_lacks():
    def article(name, topics):
        return [Example(id=f"{name}:{t}", document=f"{name} text.", references=[f"{name} on {t}"],
                        controls={"topic": t}) for t in topics]

    rows = build_topic_mix(article("x", ["sports", "politics"]) + article("y", ["sports", "health"]))
    assert sorted(row["controls"]["topic"] for row in rows) == ["health", "politics"]
    with pytest.raises(ctrlkit.DatasetError, match="can be mixed"):
        build_topic_mix(article("x", ["sports"]) + article("y", ["sports", "health"]))


def test_it_refuses_fewer_than_two_topics_no_topic_at_all_and_examples_without_reference():
    same = [Example(id=str(i), document=f"Story {i}.", references=["r"], controls={"topic": "t"}) for i in range(3)]
    with pytest.raises(ctrlkit.DatasetError, match="at least two topics; found 1: 't'"):
        build_topic_mix(same)
    untopical = [Example(id="x", document="d", references=["r"]), Example(id="y", document="e", references=["r"],
                                                                          controls={"topic": " "})]
    with pytest.raises(ctrlkit.DatasetError, match=r"^none of the 2 examples has a topic \(control 'topic'\)"):
        build_topic_mix(untopical)
    with pytest.raises(ctrlkit.DatasetError, match="example 'x': the topic .* must be text, not int"):
        build_topic_mix([Example(id="x", document="d", references=["r"], controls={"topic": 5})])
    with pytest.raises(ctrlkit.DatasetError, match="example 'x': .* needs a reference"):
        build_topic_mix([Example(id="x", document="d", controls={"topic": "t"})])


def test_the_data_topic_mix_command(tmp_path):
    out = tmp_path / "mix.jsonl"
    result = run_ctrlkit("data", "topic-mix", "--dataset", "sample", "--split", "test", "--out", str(out),
                         "--seed", "3")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"60 articles, 60 used in 30 pairs: 60 examples in {out}\n"
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == build_topic_mix(_sample(), seed=3)

    refused = run_ctrlkit("data", "topic-mix", "--dataset", "jsonl", "--data", str(tmp_path / "one.jsonl"),
                          "--out", str(tmp_path / "none.jsonl"))
    assert refused.returncode == 1 and refused.stderr.strip().endswith("no such file")
    (tmp_path / "one.jsonl").write_text(json.dumps({"document": "D.", "references": "R", "controls": {"topic": "t"}}))
    refused = run_ctrlkit("data", "topic-mix", "-d", "jsonl", "--data", str(tmp_path / "one.jsonl"),
                          "-o", str(tmp_path / "none.jsonl"))
    assert refused.returncode == 1
    assert refused.stderr == "Error: a topic mix needs articles on at least two topics; found 1: 't'\n"
    assert not (tmp_path / "none.jsonl").exists()


def test_the_command_reports_unpaired_articles(tmp_path):
    data = tmp_path / "stories.jsonl"
    data.write_text("".join(json.dumps({"id": f"{topic}{i}", "document": f"A {topic} story, number {i}.",
                                        "references": "R", "controls": {"topic": topic}}) + "\n"
                            for topic, count in (("a", 4), ("b", 1)) for i in range(count)))
    result = invoke_ctrlkit("data", "topic-mix", "-d", "jsonl", "--data", str(data), "-o", str(tmp_path / "mix.jsonl"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"5 articles, 2 used in 1 pairs: 2 examples in {tmp_path / 'mix.jsonl'}",
                                          "unpaired on a: 3"]


def test_the_command_takes_dataset_options(tmp_path):
    csv_path = shared_file("newts/NEWTS_test_600.csv")
    out = tmp_path / "mix.jsonl"
    result = invoke_ctrlkit("data", "topic-mix", "-d", "newts", "--data", str(csv_path), "--split", "train",
                            "--set", "newts.topic_label=id", "-o", str(out))
    assert result.returncode == 0, result.stderr
    expected = build_topic_mix(ctrlkit.get_dataset("newts", path=str(csv_path), topic_label="id").load("train"))
    assert [json.loads(line) for line in out.read_text().splitlines()] == expected
    assert all(row["controls"]["topic"].isdigit() for row in expected)
    refused = invoke_ctrlkit("data", "topic-mix", "--set", "rouge.use_stemmer=false", "-o", str(out))
    assert refused.returncode == 1 and "only options of dataset 'sample'" in refused.stderr


def test_the_mix_is_made_from_the_train_split_unless_told_otherwise(tmp_path):
    refused = invoke_ctrlkit("data", "topic-mix", "-o", str(tmp_path / "mix.jsonl"))
    assert refused.returncode == 1
    assert refused.stderr == ("Error: dataset 'sample' has no 'train' split (it has test); a topic mix is training "
                              "data: it is made from one, so choose the split with --split\n")
    assert not (tmp_path / "mix.jsonl").exists()
    csv_path = shared_file("newts/NEWTS_test_600.csv")
    by_default = topic_mix(tmp_path / "default.jsonl", "newts", str(csv_path))
    source = ctrlkit.get_dataset("newts", path=str(csv_path))
    train, test = source.load("train"), source.load("test")
    assert {row["meta"]["articles"][0] for row in by_default.rows()} <= {example.id for example in train}
    assert not {row["meta"]["articles"][0] for row in by_default.rows()} & {example.id for example in test}
    assert by_default.rows() == build_topic_mix(train)
    written = [json.loads(line) for line in (tmp_path / "default.jsonl").read_text().splitlines()]
    assert written == build_topic_mix(train)


def _macsum_reference_counts(path):
    """From the raw MACSum JSON, independently of the dataset: the references, those without a
    topic, and the distinct sources that have a reference with one."""
    sources = json.loads(path.read_text())
    attributes = [reference["control_attribute"] for source in sources for reference in source["references"]]
    without = sum(not (a.get("topic") or "").strip() for a in attributes)
    topical = {" ".join(s.strip() for s in source["source"] if s.strip()) for source in sources
               if any((r["control_attribute"].get("topic") or "").strip() for r in source["references"])}
    return len(attributes), without, len(topical)


def test_examples_without_a_topic_are_left_out_counted_and_warned_once(caplog):
    path = shared_file("macsum/macdoc_val.json")
    total, without, articles = _macsum_reference_counts(path)
    assert 0 < without < total
    examples = ctrlkit.get_dataset("macsum", path=str(path)).load(None)
    with caplog.at_level("WARNING", logger="ctrlkit"):
        mix = mix_topics(examples, seed=0)
    assert mix.without_topic == without
    assert [r.getMessage() for r in caplog.records] == [
        f"ctrlkit: topic mix: {without} of {total} examples have no topic (control 'topic') and are left out"]
    assert 2 * len(mix.pairs) + len(mix.unpaired) == articles
    left = [article.topics for article in mix.unpaired]
    assert all(not (x - y and y - x) for x, y in combinations(left, 2))
    _assert_valid_mix(mix.rows(), examples)  # every row names an example with the topic it asks for


def test_a_file_that_is_one_split_is_mixed_whole_unless_told_otherwise(tmp_path):
    """MACSum's val file (and a CCSBench file) holds one split: no --split means all of it, as
    --split val does; the train split does not apply to it. NEWTS splits a file by article, so
    a NEWTS file keeps its train part (test_the_mix_is_made_from_the_train_split...)."""
    path = shared_file("macsum/macdoc_val.json")
    source = ctrlkit.get_dataset("macsum", path=str(path))
    assert source.data_splits() == () and source.default_split == "val"
    assert ctrlkit.get_dataset("macsum", path=str(path.parent)).data_splits() == ("train", "val", "test")
    (tmp_path / "test.csv").write_text("")
    assert ctrlkit.get_dataset("ccsbench", path=str(tmp_path / "test.csv")).data_splits() == ()
    assert ctrlkit.get_dataset("ccsbench", path=str(tmp_path)).data_splits() == ("train", "validation", "test")
    newts = shared_file("newts/NEWTS_test_600.csv")
    assert ctrlkit.get_dataset("newts", path=str(newts)).data_splits() == ("train", "test")

    out = tmp_path / "mix.jsonl"
    result = invoke_ctrlkit("data", "topic-mix", "-d", "macsum", "--data", str(path), "--out", str(out))
    assert result.returncode == 0, result.stderr
    total, without, articles = _macsum_reference_counts(path)
    expected = build_topic_mix(source.load(None))
    assert [json.loads(line) for line in out.read_text().splitlines()] == expected
    _assert_valid_mix(expected, source.load("val"))
    used = len(expected)
    assert result.stdout.splitlines()[0] == (f"{articles} articles, {used} used in {used // 2} pairs: "
                                             f"{used} examples in {out}")
    assert result.stderr == (f"ctrlkit: topic mix: {without} of {total} examples have no topic (control 'topic') "
                             "and are left out\n")
    as_val = invoke_ctrlkit("data", "topic-mix", "-d", "macsum", "--data", str(path), "--split", "val",
                            "--out", str(tmp_path / "val.jsonl"))
    assert as_val.returncode == 0, as_val.stderr
    assert (tmp_path / "val.jsonl").read_bytes() == out.read_bytes()
    refused = invoke_ctrlkit("data", "topic-mix", "-d", "macsum", "--data", str(path), "--split", "train",
                             "--out", str(tmp_path / "train.jsonl"))
    assert refused.returncode == 1
    assert refused.stderr == ("Error: --data is the file macdoc_val.json, which holds no train split: give the "
                              "release's folder with train.json, or hold some sources out with --set "
                              "macsum.train_fraction=0.2\n")


def test_a_dataset_without_any_topic_is_refused_in_one_line(tmp_path):
    data = tmp_path / "plain.jsonl"
    data.write_text("".join(json.dumps({"document": f"Story {i}.", "references": "R", "controls": {"length": "short"}})
                            + "\n" for i in range(3)))
    refused = invoke_ctrlkit("data", "topic-mix", "-d", "jsonl", "--data", str(data), "-o", str(tmp_path / "mix.jsonl"))
    assert refused.returncode == 1
    assert refused.stderr == ("Error: none of the 3 examples has a topic (control 'topic'); "
                              "a topic mix needs topic-labelled examples\n")
    assert not (tmp_path / "mix.jsonl").exists()
