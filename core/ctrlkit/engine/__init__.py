"""The run engine: what ``run``, ``evaluate``, ``interference`` and ``train`` share.

- :mod:`.settings`: :class:`RunSettings`, a run's settings declared once (API, CLI, results.json);
- :mod:`.assembly`: the shared set-up, making a run's components from their names and options
  (:func:`assemble`) and fitting the topic spaces they read;
- :mod:`.checks`: every check that refuses a run before any work (capabilities, controls,
  references, topics, counts, seeds);
- :mod:`.generation`: fitting or restoring a controller, and generating in batches through the cache;
- :mod:`.scoring`: scoring with each metric the examples it reads, and the bootstrap intervals;
- :mod:`.recording`: what a run writes (``RunResult``, results.json, samples.jsonl lines, timings,
  warnings it owes);
- :mod:`.run`: :func:`ctrlkit.run` itself, which calls the others in order.
"""
