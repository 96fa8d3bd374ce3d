"""The model zoo's catalogue: every model by name, in the order `shardc models` lists them.

    from shardc.models.catalogue import MODELS
    module = MODELS["transformer"].build("dp_tp", layers=2)

A new model is a module defining `MODEL` (a `ModelSpec`, see spec.py) and one line here.
"""

from __future__ import annotations

from shardc.models.embedding import MODEL as EMBEDDING
from shardc.models.gpt import MODEL as GPT
from shardc.models.mixer import MODEL as MIXER
from shardc.models.mlp import MODEL as MLP
from shardc.models.moe import MODEL as MOE
from shardc.models.spec import ModelSpec
from shardc.models.transformer import MODEL as TRANSFORMER

MODELS: dict[str, ModelSpec] = {m.name: m for m in (MLP, TRANSFORMER, EMBEDDING, MOE, MIXER, GPT)}

__all__ = ["MODELS"]
