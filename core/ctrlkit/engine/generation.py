"""Generation: a controller fitted (or restored from a trained model) and applied to every
example, then batches generated here or on Ray workers, through the generation cache."""

from __future__ import annotations

import logging
from typing import Sequence

from ..cache import Cache
from ..controls import apply_control
from ..errors import CtrlkitError
from ..intake import Intake, plain
from ..progress import Progress, say
from ..topic_selection import drop_topics
from ..types import Example, ModelInput
from .truncation import truncation_reported

logger = logging.getLogger("ctrlkit")


def fit_or_restore(controller, backbone, source, topic_space, seed: int = 0,
                   holdout_topics: Sequence[str] | None = None) -> None:
    """Give the controller the dataset and the run's ``seed``, then restore the controller state
    saved with a trained model, or fit the controller (on the train examples whose topic is none
    of ``holdout_topics``)."""
    controller.use_dataset(source)
    controller.use_seed(seed)
    saved = backbone.saved_controller()
    if saved is not None and saved["controller"] == controller.name:
        controller.load_state(saved["state"])
        return
    if saved is not None and controller.name != "none":
        logger.warning("ctrlkit: the model was trained with controller '%s', not '%s'", saved["controller"],
                       controller.name)
    untrained = [c.name for c in getattr(controller, "controllers", [controller]) if c.trained_with_model]
    if untrained:
        logger.warning("ctrlkit: %s was not trained with this model: its parameters are random "
                       "(ctrlkit train first)", ", ".join(untrained))
    train = source.load("train") if controller.needs_train_examples else []
    controller.fit(drop_topics(train, holdout_topics or ()), topic_space)


def generate(controller, backbone, examples: Sequence[Example], batch_size: int, progress: bool,
             cache: Cache | None = None, stats: dict | None = None, pool=None) -> list[str]:
    """Apply the controller to every example (so a bad control fails before any generation), then
    generate in batches of similar length, longest first, and return predictions in input order.

    With a cache, an input the same backbone already answered is not generated again, and each
    batch is stored as soon as it is done: a run killed midway resumes where it stopped.
    ``stats`` counts ``hits`` and ``misses``. Generations are cleaned as they come (``intake``):
    a lone surrogate becomes U+FFFD, so nothing generated fails to be written. With ``pool``
    (:class:`ctrlkit.executors.ray_generation.RayGeneration`) the batches are generated on Ray workers; what
    a worker found in its node's cache counts as a hit, and is stored in this one too."""
    inputs = [_plain_input(apply_control(controller, example, ModelInput(source=example.document)), controller, example)
              for example in examples]
    keys = [[backbone.identity(), _input_key(model_input)] for model_input in inputs] if cache else []
    cached = [cache.get(key) for key in keys] if cache else [None] * len(inputs)
    predictions: list[str] = [text if text is not None else "" for text in cached]
    todo = sorted((i for i, text in enumerate(cached) if text is None), key=lambda i: -_input_length(inputs[i]))
    if stats is not None:
        stats["hits"] = stats.get("hits", 0) + len(inputs) - len(todo)
        stats["misses"] = stats.get("misses", 0) + len(todo)
    what = f"generate [{controller.name}]" + (pool.label if pool else "")
    if progress and not todo:
        say(f"{what}: all {len(inputs)} already done (cached)")
    elif progress and len(todo) < len(inputs):
        say(f"{what}: resuming: {len(inputs) - len(todo)} of {len(inputs)} already done (cached)")
    received = Intake(f"backbone '{backbone.name}'")
    batches = (pool.batches(inputs, keys, todo, [example.id for example in examples], batch_size) if pool
               else _local_batches(backbone, inputs, todo, batch_size))
    with truncation_reported(backbone, f"controller '{controller.name}'"), \
            Progress(what, len(todo), "examples", enabled=progress and bool(todo)) as bar:
        for batch, outputs, found in batches:
            if len(outputs) != len(batch):
                raise CtrlkitError(f"backbone '{backbone.name}' returned {len(outputs)} summaries "
                                   f"for {len(batch)} inputs")
            for i, output in zip(batch, outputs):
                if not isinstance(output, str):
                    raise CtrlkitError(f"backbone '{backbone.name}' returned {type(output).__name__}, not text, "
                                       f"for example '{examples[i].id}'")
                output = predictions[i] = received.text(str(output), "generations")
                if cache:
                    cache.put(keys[i], output)
            for i, text in found.items():
                predictions[i] = text
                cache.put(keys[i], text)
            if stats is not None and found:
                stats["hits"] += len(found)
                stats["misses"] -= len(found)
            bar.update(len(batch) + len(found))
    received.report()
    return predictions


def _plain_input(model_input, controller, example: Example) -> ModelInput:
    """What the controller made of ``example``, its texts plain ``str`` and its features plain JSON
    data (numpy scalars made numbers): they make the cache key. Anything else is one line naming
    the controller, the example and the field."""
    where = f"controller '{controller.name}', example '{example.id}'"
    if not isinstance(model_input, ModelInput):
        raise CtrlkitError(f"{where}: returned {type(model_input).__name__}, not a ModelInput")
    if not isinstance(model_input.source, str):
        raise CtrlkitError(f"{where}: 'source' is {type(model_input.source).__name__}, not text")
    if model_input.guidance is not None and not isinstance(model_input.guidance, str):
        raise CtrlkitError(f"{where}: 'guidance' is {type(model_input.guidance).__name__}, not text")
    messages = model_input.messages
    if messages is not None:
        messages = tuple(plain(dict(message) if isinstance(message, dict) else message, f"{where}: messages[{i}]")
                         for i, message in enumerate(messages))
    return model_input.replace(source=str(model_input.source), guidance=None if model_input.guidance is None
                               else str(model_input.guidance), messages=messages,
                               features=plain(model_input.features, f"{where}: features"))


def _local_batches(backbone, inputs, todo, batch_size):
    """``(indices, outputs, {})`` for each batch of ``todo``, generated here."""
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        yield batch, list(backbone.generate([inputs[i] for i in batch])), {}


def _input_key(model_input: ModelInput) -> dict:
    return {"source": model_input.source, "guidance": model_input.guidance,
            "messages": list(model_input.messages) if model_input.messages else None,
            "features": model_input.features}


def _input_length(model_input: ModelInput) -> int:
    messages = sum(len(message["content"]) for message in model_input.messages or ())
    return len(model_input.source) + len(model_input.guidance or "") + messages
