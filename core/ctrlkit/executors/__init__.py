"""Built-in executors, registered through the same hook a plugin uses: ``local`` (this process)
and ``ray`` (a Ray cluster). A new executor goes beside them, or in a plugin of its own
(docs/writing-a-plugin.md)."""

from ..hookspecs import hookimpl


@hookimpl
def register_executors(register):
    register("local", "ctrlkit.executors.local:LocalExecutor")
    register("ray", "ctrlkit.executors.ray:RayExecutor")
