import ctrlkit

from .commands import register_commands  # noqa: F401  (the train-focus-classifier command)


@ctrlkit.hookimpl
def register_metrics(register):
    register("stas", "ctrlkit_metrics.stas:Stas")
    register("rouge", "ctrlkit_metrics.rouge:Rouge")
    register("sr", "ctrlkit_metrics.keywords:SuccessRate")
    register("length", "ctrlkit_metrics.length:Length")
    register("readability", "ctrlkit_metrics.readability:Readability")
    register("entity", "ctrlkit_metrics.entity:EntitySuccess")
    register("cer", "ctrlkit_metrics.macsum_control:ControlErrorRate")
    register("cc", "ctrlkit_metrics.macsum_control:ControlCorrelation")
    register("bertscore", "ctrlkit_metrics.bertscore:BertScore")
    register("focus", "ctrlkit_metrics.focus:Focus")
    register("fm", "ctrlkit_metrics.fm:FacetMetric")
    register("stats", "ctrlkit_metrics.stats:Stats")
