"""The model zoo: real model graphs with the annotations a practitioner would write.

    from shardc.models import MODELS
    module = MODELS["transformer"].build("dp_tp", layers=2)

Each entry is a `ModelSpec` (spec.py): a name, a one-line description, a builder with keyword
size/depth parameters, and named annotation presets (each with the mesh it is written for).
The models are programs, not trained networks: every input, weights included, is an argument.
"""

from __future__ import annotations

from shardc.models import embedding, mixer, mlp, moe, transformer
from shardc.models.spec import Annotation, ModelSpec, Preset, ann

MODELS: dict[str, ModelSpec] = {
    m.MODEL.name: m.MODEL for m in (mlp, transformer, embedding, moe, mixer)
}

__all__ = ["MODELS", "Annotation", "ModelSpec", "Preset", "ann"]
