import ctrlkit


@ctrlkit.hookimpl
def register_controllers(register):
    register("none", "ctrlkit_controllers.basic:NoControl")
    register("prepend", "ctrlkit_controllers.basic:Prepend")
    register("tag", "ctrlkit_controllers.tag:Tag")
