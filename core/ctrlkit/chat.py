"""Chat messages as one plain prompt, so that a controller that writes ``ModelInput.messages``
also reaches models without a chat template (seq2seq models, base causal language models).

The format is one block per message, ``Role: content`` with the role capitalised, blocks
separated by a blank line, ending with the cue ``Assistant:`` for the model to continue from
(unless the last message is already the assistant's, whose content the model then continues)::

    System: You summarize documents.

    User: Summarize the following document. ...

    Assistant:
"""

from __future__ import annotations

from typing import Mapping, Sequence


def flatten_messages(messages: Sequence[Mapping[str, str]]) -> str:
    """``[{"role": "user", "content": "Hi"}]`` -> ``"User: Hi\\n\\nAssistant:"``."""
    blocks = [f"{message['role'].strip().capitalize()}: {message['content']}" for message in messages]
    if not messages or messages[-1]["role"].strip().lower() != "assistant":
        blocks.append("Assistant:")
    return "\n\n".join(blocks)
