"""Built-in backbones, registered through the same hook a plugin uses."""

from ..hookspecs import hookimpl


@hookimpl
def register_backbones(register):
    register("extractive", "ctrlkit.backbones.extractive:ExtractiveBackbone")
    register("hf", "ctrlkit.backbones.hf:HFSeq2Seq")
    register("hf-causal", "ctrlkit.backbones.hf_causal:HFCausal")
    register("openai", "ctrlkit.backbones.openai:OpenAIBackbone")
    register("llamacpp", "ctrlkit.backbones.llamacpp:LlamaCppBackbone")
