"""The entry point ctrlkit loads. Components are named by "module:attr" strings, so nothing is
imported until one is used or listed."""

import ctrlkit


@ctrlkit.hookimpl
def register_controllers(register):
    register("length-code", "ctrlkit_example_plugin.length_code:LengthCode")


@ctrlkit.hookimpl
def register_metrics(register):
    register("novelty", "ctrlkit_example_plugin.novelty:Novelty")
