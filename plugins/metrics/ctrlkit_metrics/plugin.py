import ctrlkit


@ctrlkit.hookimpl
def register_metrics(register):
    register("stas", "ctrlkit_metrics.stas:Stas")
    register("rouge", "ctrlkit_metrics.rouge:Rouge")
