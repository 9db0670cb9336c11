"""The library's first-hour surface: Metric.compute on plain dicts, TopicSpace.topics as the
column order of similarities, and dir(ctrlkit) listing what the module offers."""

import pytest

import ctrlkit
from ctrlkit import Example, Metric, MetricResult

PREDICTIONS = ["The council voted to build a bridge.", "Rain fell and rivers rose."]
DICTS = [
    {"id": "a", "document": "The council met. It voted to build a bridge.", "references": ["A bridge will be built."],
     "controls": {"topic": "politics"}},
    {"id": "b", "document": "Rain fell all week. Rivers rose.", "references": "Rivers rose after rain."},
]


def test_a_metric_scores_plain_dicts_as_it_scores_examples():
    examples = [Example(id="a", document=DICTS[0]["document"], references=DICTS[0]["references"],
                        controls={"topic": "politics"}),
                Example(id="b", document=DICTS[1]["document"], references=[DICTS[1]["references"]])]
    rouge = ctrlkit.get_metric("rouge")
    from_dicts, from_examples = rouge.compute(PREDICTIONS, DICTS), rouge.compute(PREDICTIONS, examples)
    assert from_dicts.per_example == from_examples.per_example and from_dicts.corpus == from_examples.corpus
    assert 0 < from_dicts.corpus["rouge1"] < 1


def test_a_plugin_metric_receives_examples_whatever_it_was_given():
    class Seen(Metric):
        def compute(self, predictions, examples):
            self.seen = examples
            return MetricResult(per_example={"n": [len(e.references) for e in examples]}, corpus={})

    metric = Seen()
    metric.compute(PREDICTIONS, DICTS)
    assert [type(e) for e in metric.seen] == [Example, Example]
    assert [e.references for e in metric.seen] == [["A bridge will be built."], ["Rivers rose after rain."]]
    assert metric.seen[0].controls == {"topic": "politics"} and metric.seen[1].controls == {}


@pytest.mark.parametrize("predictions, examples, error, message", [
    ("one string", DICTS[:1], TypeError, "metric 'rouge': predictions must be a list of strings, got str"),
    ([None], DICTS[:1], TypeError, "metric 'rouge': each prediction must be a string, got NoneType"),
    (PREDICTIONS[:1], DICTS[0], TypeError, "metric 'rouge': examples must be a list, got dict"),
    (PREDICTIONS[:1], [{"id": "a", "text": "x"}], TypeError, "an example has no field 'text'; expected a "
     "ctrlkit.Example or a dict {'id': str, 'document': str, 'references': [str, ...], 'controls': {...}, "
     "'meta': {...}} (references, controls and meta may be left out)"),
    (PREDICTIONS[:1], [{"id": "a"}], TypeError, "an example's 'document' must be a string, got nothing"),
    (PREDICTIONS[:1], [{"id": 1, "document": "x"}], TypeError, "an example's 'id' must be a string, got int"),
    (PREDICTIONS[:1], [{"id": "a", "document": "x", "references": [1]}], TypeError,
     "example 'a': 'references' must be a string or a list of strings"),
    (PREDICTIONS[:1], [("a", "x")], TypeError, "an example must be a ctrlkit.Example or a dict"),
    (PREDICTIONS, DICTS[:1], ValueError, "metric 'rouge': 2 prediction(s) for 1 example(s); give one per example"),
])
def test_a_wrong_shape_says_what_is_expected(predictions, examples, error, message):
    with pytest.raises(error) as caught:
        ctrlkit.get_metric("rouge").compute(predictions, examples)
    assert str(caught.value).startswith(message)


def test_topics_name_the_columns_of_similarities():
    documents = {"zebra": ["Zebras graze on the savanna grass."], "apple": ["Apple orchards bloom in spring."],
                 "mango": ["Mango trees need tropical heat."]}
    space = ctrlkit.TopicSpace.fit(documents)
    assert space.topics == ["apple", "mango", "zebra"]  # sorted, not the order given
    similarity = space.similarities([documents[topic][0] for topic in ("zebra", "apple", "mango")])
    assert [space.topics[column] for column in similarity.argmax(axis=1)] == ["zebra", "apple", "mango"]


def test_dir_lists_what_the_module_offers():
    listed = dir(ctrlkit)
    for name in ("run", "evaluate", "RunResult", "TopicSpace", "get_metric", "Example"):
        assert name in listed
    assert all(hasattr(ctrlkit, name) for name in ctrlkit.__all__)


def test_what_type_checkers_read_is_where_each_name_loads_from():
    """The package loads its names lazily from a table; the imports editors read and ``__all__``
    must say the same."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(ctrlkit.__file__).read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    imported = {alias.name: node.module for node in block.body for alias in node.names}
    assert imported == {name: home for home, names in ctrlkit._HOMES.items() for name in names}
    assert sorted(ctrlkit.__all__) == sorted(imported)
