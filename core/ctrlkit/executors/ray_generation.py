"""A run's generation on a Ray cluster (``run(executor="ray", workers=N)``).

The driver does all a local run does (controllers, cache look-ups, scoring, writing) except the
generating itself. The examples left to generate are split into ``N`` shards, as equal in size as
they can be, by a stable hash of their id (:func:`ctrlkit.executors.ray_support.stable_shards`), one per
worker: a Ray actor holding one backbone, made on its node from the run's backbone name and options
and prepared by the run's controllers in the order the driver's was (a token a controller adds is
in the worker's model too). A worker takes its shard in the local run's order (longest input first, input order among
equals), ``batch_size`` inputs at a time, and each batch comes back to the driver as soon as it
is done: the driver's progress bar moves, and it stores the batch in its own cache under the
keys the local run uses, so that a later run on the driver's machine, local or Ray, finds it.

The workers start as the driver's ``with`` block opens, before it reads the data, and each makes
its backbone at once (``Backbone.load``: for a transformers model, importing torch and reading the
weights) while the driver loads the data, fits the controllers and prepares its own backbone.
An error making it is the worker's first batch's error, as it would be had the batch made it; a
worker whose shard has nothing to generate holds its CPU or GPU until the block closes, and its
error, should making the backbone fail, is not reported, since no batch of the run needed it.

A worker also reads and fills the generation cache of its own node (its $CTRLKIT_CACHE_DIR,
under the same keys). A worker that dies is started again (``MAX_RESTARTS``) and the batches it
had not returned are run again (``MAX_TASK_RETRIES``), so the run completes as if it had not.

The predictions equal the local run's for a backbone whose output for an input does not depend
on the rest of its batch (extractive, an API model). A worker's batches are not the local run's
batches (each holds one shard's inputs), so a padded transformers model may pad an input to
another length than the local run did; the masked padding leaves the output the same in exact
arithmetic, but floating-point sums in another order can differ in their last bits and, rarely,
flip a beam's choice. ``batch_size=1`` makes the batches, and so the outputs, the same. A
backbone that samples at random is not reproduced batch for batch on either executor. A token
that a controller adds to a model without it (tag's ``[TAG]`` on an untrained model) gets the
same embedding row in every worker as in the driver: it is drawn from a seed of the token's
text, not from the process's random state (:mod:`ctrlkit.backbones.seeded_rows`).
"""

from __future__ import annotations

import os
from typing import Any, Iterator, Mapping, Sequence

from ..components import TRUNCATION_COUNTS
from ..errors import ConfigurationError, CtrlkitError
from .ray_support import (backbone_resources, check_capacity, check_installed, connect, installed,
                          match_torch_threads, stable_shards, worker_environment)

MAX_RESTARTS = 3
"""How many times a worker that died is started again before the run gives up."""
MAX_TASK_RETRIES = 3
"""How many times a batch whose worker died is run again."""


class GenerationWorker:
    """One Ray actor's backbone. :meth:`warm_up` makes it ahead of the first batch, once the node's
    ctrlkit install is found to be the driver's; an error making it is kept and raised by each
    batch, so that it reaches the driver as that batch's error. A restarted worker (its process
    died) makes it again at its next batch. The worker works in the driver's working directory
    where its node has that folder (one machine, a shared file system), so that a relative path
    (``hf:models/pt``) names what it names on the driver."""

    def __init__(self, spec: str, options: Mapping[str, Any], use_cache: bool, directory: str,
                 driver_installed: Mapping[str, Any]):
        match_torch_threads()
        if os.path.isdir(directory):
            os.chdir(directory)
        self.spec, self.options, self.use_cache = spec, dict(options), use_cache
        self.driver_installed = dict(driver_installed)
        self.backbone = None
        self.cache = None
        self.failure: Exception | None = None  # what making the backbone raised
        self.applied = 0  # how many of the run's preparations the backbone has had

    def warm_up(self) -> None:
        """Make and load the backbone now, while the driver is busy with its own loading."""
        try:
            self._made()
        except Exception as exc:  # raised by the first batch, on the driver, as that batch's error
            self.failure = exc

    def generate(self, keys: Sequence, inputs: Sequence, preparations: Sequence) -> dict:
        """Summaries of ``inputs``: ``found`` ``{position: text}`` in the node's cache (by ``keys``,
        the driver's cache keys; empty without a cache), ``generated`` the backbone's outputs for
        the other positions, in order, as the backbone returned them (the driver checks them as a
        local run does); ``counts``, what the batch added to the backbone's truncation counts
        (:data:`ctrlkit.components.TRUNCATION_COUNTS`), and ``truncated_to``."""
        from ..intake import replace_surrogates

        backbone = self._prepared(preparations)
        found = {}
        if self.cache is not None:
            found = {j: text for j, key in enumerate(keys) if (text := self.cache.get(key)) is not None}
        missing = [j for j in range(len(inputs)) if j not in found]
        before = [getattr(backbone, name) for name in TRUNCATION_COUNTS]
        generated = list(backbone.generate([inputs[j] for j in missing])) if missing else []
        if self.cache is not None and len(generated) == len(missing) and all(isinstance(t, str) for t in generated):
            for j, text in zip(missing, generated):
                self.cache.put(keys[j], replace_surrogates(text))  # as the driver will clean and store it
        counts = {name: getattr(backbone, name) - old for name, old in zip(TRUNCATION_COUNTS, before)}
        return {"found": found, "generated": generated, "counts": counts, "truncated_to": backbone.truncated_to}

    def _made(self):
        """The backbone, made and loaded if need be (with the node's cache), or the error that was."""
        if self.failure is not None:
            raise self.failure
        if self.backbone is None:
            from ..api import get_backbone
            from ..cache import Cache

            check_installed(self.driver_installed)
            backbone = get_backbone(self.spec, **self.options)
            backbone.load()
            self.cache = Cache("generations") if self.use_cache else None
            self.backbone = backbone
        return self.backbone

    def _prepared(self, preparations: Sequence):
        """The backbone, once every controller in ``preparations`` (object refs, in the driver's
        order) has prepared it."""
        backbone = self._made()
        if self.applied < len(preparations):
            import ray

            for controller in ray.get(list(preparations[self.applied:])):
                controller.prepare(backbone)
            self.applied = len(preparations)
        return backbone


class RayGeneration:
    """The driver's side: connects to the cluster and checks it can hold the workers; entering its
    ``with`` block starts them, each warming up; it hands out batches, and leaving the block stops
    the workers."""

    def __init__(self, address: str | None, spec: str, options: Mapping[str, Any], backbone, workers: int,
                 use_cache: bool):
        self.ray = connect(address)
        cluster = self.ray.cluster_resources()
        self.resources = backbone_resources(backbone.options, cluster)
        check_capacity(self.resources, workers, cluster, f"--executor ray with backbone '{backbone.name}'")
        self.spec, self.options = spec, _on_assigned_gpu(options, self.resources)
        self.workers, self.use_cache = workers, use_cache
        self.installed = installed()  # each worker's must be the same
        self.backbone = backbone
        self.actors: dict[int, Any] = {}
        self.preparations: list = []
        self.label = f" on {workers} Ray worker{'s' if workers > 1 else ''}"

    def prepared(self, controller) -> None:
        """Record that ``controller`` prepared the driver's backbone: each worker's is prepared
        likewise before its next batch."""
        try:
            self.preparations.append(self.ray.put(controller))
        except Exception as exc:  # whatever pickling raises for what the controller holds
            raise ConfigurationError(f"--executor ray: controller '{controller.name}' cannot be sent to the Ray "
                                     f"workers: {' '.join(str(exc).split())[:300]}") from None

    def batches(self, inputs: Sequence, keys: Sequence, todo: Sequence[int], ids: Sequence[str],
                batch_size: int) -> Iterator[tuple[list[int], list, dict[int, str]]]:
        """``(indices generated, their outputs, {index: text found in a worker's cache})`` for each
        batch, as the workers finish them; ``todo`` is the local run's order."""
        shards: dict[int, list[int]] = {}
        for i, shard in zip(todo, stable_shards([ids[i] for i in todo], self.workers)):
            shards.setdefault(shard, []).append(i)
        pending = {}
        for shard, indices in sorted(shards.items()):
            actor = self.actors[shard]
            for start in range(0, len(indices), batch_size):
                batch = indices[start : start + batch_size]
                call = actor.generate.remote([keys[i] for i in batch] if keys else [], [inputs[i] for i in batch],
                                             list(self.preparations))
                pending[call] = (shard, batch)
        while pending:
            (done,), _ = self.ray.wait(list(pending), num_returns=1)
            shard, batch = pending.pop(done)
            result = self._result(done, shard)
            for name in TRUNCATION_COUNTS:
                setattr(self.backbone, name, getattr(self.backbone, name) + result["counts"][name])
            if result["truncated_to"] is not None:
                self.backbone.truncated_to = result["truncated_to"]
            found = {batch[j]: text for j, text in result["found"].items()}
            yield [i for i in batch if i not in found], result["generated"], found

    def _start(self):
        """A worker, asked to warm up at once (its batches queue behind that)."""
        actor = self.ray.remote(GenerationWorker).options(
            max_restarts=MAX_RESTARTS, max_task_retries=MAX_TASK_RETRIES, scheduling_strategy="SPREAD",
            runtime_env=worker_environment(), **self.resources,
        ).remote(self.spec, self.options, self.use_cache, os.getcwd(), self.installed)
        actor.warm_up.remote()
        return actor

    def _result(self, call, shard: int) -> dict:
        """The batch's result; a ctrlkit error raised on the worker as itself (one line), a
        worker that cannot go on (it died more than MAX_RESTARTS times, or its node cannot set up
        its environment) in one line."""
        exceptions = self.ray.exceptions
        try:
            return self.ray.get(call)
        except exceptions.RayTaskError as exc:
            if isinstance(exc.cause, CtrlkitError):
                raise exc.cause from None
            raise
        except (exceptions.RayActorError, exceptions.RuntimeEnvSetupError) as exc:
            kept = "; the batches finished so far are cached: run again to resume" if self.use_cache else ""
            raise CtrlkitError(f"--executor ray: worker {shard + 1} of {self.workers} failed and could not be "
                               f"restarted ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}){kept}") from None

    def __enter__(self) -> "RayGeneration":
        try:
            for shard in range(self.workers):
                self.actors[shard] = self._start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        for actor in self.actors.values():
            self.ray.kill(actor)
        self.actors.clear()


def _on_assigned_gpu(options: Mapping[str, Any], resources: Mapping[str, int]) -> dict:
    """``options`` for a worker: on a GPU worker, ``device=cuda:N`` becomes ``cuda``, the one GPU
    Ray gives the worker (it sees only that one)."""
    options = dict(options)
    if "num_gpus" in resources and str(options.get("device", "")).startswith("cuda:"):
        options["device"] = "cuda"
    return options
