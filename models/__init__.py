"""Model builders on the graph builder (frontend/builder.py): LLaMA prefill and decode
programs (`llama`, `LlamaConfig`, `CONFIGS`) and the seed's TransformerBlock
(`transformer_block`). docs/builder.md describes them."""

from geir.models.llama import CONFIGS, LlamaConfig, LlamaPrograms, llama
from geir.models.transformer import transformer_block

__all__ = ["CONFIGS", "LlamaConfig", "LlamaPrograms", "llama", "transformer_block"]
