"""Built-in backbones, registered through the same hook a plugin uses."""

from ..hookspecs import hookimpl


@hookimpl
def register_backbones(register):
    register("extractive", "ctrlkit.backbones.extractive:ExtractiveBackbone")
