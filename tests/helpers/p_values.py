"""A p-value as ctrlkit prints it (:func:`expected_p`), written out here rather than taken from
ctrlkit, for the tests of the tables commands print (test_meta_eval, test_recipes)."""

import numpy as np
import pytest


def expected_p(value):
    """The p cell as runs print p, written out here: at the permutation floor 1 / (1 + N), ``<=``
    and the floor rounded up to two significant digits; otherwise three significant digits."""
    p, permutations = value["p"], value.get("permutations")
    if permutations is not None and p == pytest.approx(1 / (1 + permutations), rel=1e-12):
        digits = -int(np.floor(np.log10(p))) + 1
        return f"<={np.ceil(p * 10 ** digits) / 10 ** digits:.{max(digits, 0)}f}".rstrip("0")
    return f"{p:.3g}"
