import ctrlkit


@ctrlkit.hookimpl
def register_controllers(register):
    register("none", "ctrlkit_controllers.basic:NoControl")
    register("prepend", "ctrlkit_controllers.basic:Prepend")
    register("prompt", "ctrlkit_controllers.prompt:Prompt")
    register("tag", "ctrlkit_controllers.tag:Tag")
    register("embed", "ctrlkit_controllers.embed:Embed")
    register("guidance", "ctrlkit_controllers.guidance:Guidance")
    register("length", "ctrlkit_controllers.length:LengthBudget")
    register("soft-prefix", "ctrlkit_controllers.soft_prefix:SoftPrefix")
