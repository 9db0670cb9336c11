"""A damaged training checkpoint is one line that says how to start over, never a traceback."""
import json

import pytest

import ctrlkit
from ctrlkit.training.trainer import train

STATE = {"settings": {}, "step": 2, "epoch": 0, "batch": 2, "losses": [1.0, 0.9], "learning_rates": [1e-4, 1e-4],
         "eval_losses": [], "best_eval": None, "bad_evals": 0, "done": False}


@pytest.mark.parametrize("content, says", [
    (json.dumps(STATE)[:40], "cannot read"),                      # cut short mid-write by a crash
    ("[1, 2]", "expected a JSON object"),
    (json.dumps({**STATE, "step": "2"}), "field 'step'"),
    (json.dumps({key: value for key, value in STATE.items() if key != "settings"}), "field 'settings'"),
    (json.dumps({**STATE, "learning_rates": None}), "field 'learning_rates'"),
    (b"\xff\xfe{".decode("latin-1"), "cannot read"),
])
def test_a_damaged_checkpoint_state_is_one_line(tmp_path, content, says):
    checkpoint = tmp_path / "out" / "checkpoint"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(content, encoding="latin-1")
    with pytest.raises(ctrlkit.CtrlkitError, match=says) as raised:
        train(backbone="hf:unused-model", out=str(tmp_path / "out"), split="test", max_steps=1)
    assert "\n" not in str(raised.value) and "trainer_state.json" in str(raised.value)
