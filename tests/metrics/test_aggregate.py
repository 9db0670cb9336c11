"""Metric.aggregate: a metric's corpus values recomputed from per-example parts for weighted
subsets of the examples (the call intervals and paired tests are made of)."""

import numpy as np

import ctrlkit
from ctrlkit.components import weighted_mean


def test_the_weighted_mean_leaves_out_missing_values_and_is_nan_where_nothing_is_weighed():
    values = np.array([1.0, np.nan, 3.0, 6.0])
    weights = np.array([[1, 1, 1, 1], [0, 1, 0, 0], [2, 0, 1, 0], [0, 0, 0, 3]], dtype=float)
    got = weighted_mean(values, weights)
    assert np.allclose(got[[0, 2, 3]], [(1 + 3 + 6) / 3, (2 * 1 + 3) / 3, 6.0]) and np.isnan(got[1])


def test_the_default_aggregate_gives_what_compute_gave_on_the_whole_and_on_a_subset():
    examples = ctrlkit.get_dataset("sample").load("test")[:6]
    predictions = [example.document.split(".")[0] for example in examples]
    rouge = ctrlkit.get_metric("rouge")
    whole = rouge.compute(predictions, examples)
    parts = {name: np.array([np.nan if v is None else v for v in values], dtype=float)
             for name, values in whole.aggregation_parts().items()}
    subset = [0, 2, 3]
    weights = np.zeros((2, len(examples)))
    weights[0] = 1.0
    weights[1, subset] = 1.0
    aggregated = rouge.aggregate(parts, weights)
    part = rouge.compute([predictions[i] for i in subset], [examples[i] for i in subset])
    for name in ("rouge1", "rouge2", "rougeL"):
        assert np.isclose(aggregated[name][0], whole.corpus[name], rtol=1e-9)
        assert np.isclose(aggregated[name][1], part.corpus[name], rtol=1e-9)
