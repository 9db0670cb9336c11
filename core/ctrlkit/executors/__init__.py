"""Built-in executors, registered through the same hook a plugin uses: ``local`` (this process)
and ``ray`` (a Ray cluster). A new executor goes beside them, or in a plugin of its own
(docs/writing-a-plugin.md).

- :mod:`.local`: generation in this process, a sweep's cells one after another;
- :mod:`.ray`: the Ray executor, which uses :mod:`.ray_generation` (a run's generation on Ray
  actors), :mod:`.ray_cells` (a sweep's cells as Ray tasks) and :mod:`.ray_support` (connecting,
  resources, the workers' environment and installed versions)."""

from ..hookspecs import hookimpl


@hookimpl
def register_executors(register):
    register("local", "ctrlkit.executors.local:LocalExecutor")
    register("ray", "ctrlkit.executors.ray:RayExecutor")
