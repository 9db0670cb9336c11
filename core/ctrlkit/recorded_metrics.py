"""The metrics a results.json recorded, read back and checked as numbers: a damaged file is one
error line naming the file and the field, never a wrong table."""

from __future__ import annotations

import math

from .errors import CtrlkitError
from .metric_values import label


def flatten(metrics, where="", field: str = "metrics") -> dict:
    """``{metric: {value: x}}`` as ``{label: x}``, named as in every table (``metric.value``, or
    ``metric`` for its namesake). Anything but an object of objects of numbers (or nulls) is an
    error naming ``where`` (the file) and the field."""
    flat = {}
    for metric, values in json_object(metrics, where, field).items():
        for name, value in json_object(values, where, f"{field}.{metric}").items():
            check_number(value, where, f"{field}.{metric}.{name}")
            flat[label(metric, name)] = finite_number(value)
    return flat


def json_object(value, where, field: str) -> dict:
    """``value`` when it is a JSON object (absent or null: an empty one); else one error line."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise CtrlkitError(f"{where}: field '{field}' must be an object, got {json_kind(value)}")
    return value


def check_number(value, where, field: str) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise CtrlkitError(f"{where}: field '{field}' must be a number or null, got {json_kind(value)}")


def json_kind(value) -> str:
    """The JSON name of a value's type, as an error message shows it."""
    if value is None:
        return "null"
    for kind, name in ((bool, "a boolean"), ((int, float), "a number"), (str, "a string"), (list, "a list"),
                       (dict, "an object")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def finite_number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None
