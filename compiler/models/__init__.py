"""The model zoo: real model graphs with the annotations a practitioner would write.

    from shardc.models.catalogue import MODELS
    module = MODELS["transformer"].build("dp_tp", layers=2)

Each entry is a `ModelSpec` (spec.py): a name, a one-line description, a builder with keyword
size/depth parameters, and named annotation presets (each with the mesh it is written for).
The models are programs, not trained networks: every input, weights included, is an argument.

- `spec.py`: what a model is (`ModelSpec`, `Preset`, `ann`); `layers.py`: the layers they share;
- one file per model (`mlp.py`, `transformer.py`, `embedding.py`, `moe.py`, `mixer.py`), each
  defining its `MODEL`;
- `catalogue.py`: `MODELS`, every model by name.
"""
