"""What a zoo model is: a builder function plus the annotation presets a practitioner would write.

    spec = MODELS["transformer"]
    module = spec.build("dp_tp", layers=2)             # verified ir.Module, one function @main
    module = spec.build("tp", mesh={"tp": 4})          # another mesh for the same annotations

A preset is a table from *roles* (`"x"`, `"wq"`, `"w1"`, ...) to a sharding written JAX-style
(`ann("dp", None, p=(0,))`) plus the mesh it is meant for. A model's builder asks its
`Annotations` for the mapping of each argument by role; roles the preset leaves out are
unannotated (propagation decides them). Every role a preset names must be used by the model, so
a misspelt role fails when the model is built, not silently.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shardc.ir.builder import Builder
from shardc.ir.core import Module
from shardc.ir.diagnostics import ShardcError
from shardc.models.annotations import Annotation, Annotations, Preset, ann, axis_names

__all__ = ["Annotation", "Annotations", "ModelSpec", "Preset", "ann"]


# A model body: builds @main with `b`, asking `a(role, rank)` for argument shardings.
ModelBody = Callable[..., None]


@dataclass(frozen=True)
class ModelSpec:
    """A zoo entry: name, one-line description, body (keyword size/depth parameters), presets."""

    name: str
    description: str
    body: ModelBody
    presets: Mapping[str, Preset]
    default_preset: str = field(default="")
    data: tuple[str, ...] = ("x",)  # roles of the data arguments; the others are parameters

    def parameters(self) -> dict[str, Any]:
        """Size and depth parameters with their defaults (`{"batch": 16, "layers": 1, ...}`)."""
        sig = inspect.signature(self.body)
        return {
            n: p.default
            for n, p in sig.parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        }

    def build(
        self,
        preset: str | None = None,
        *,
        mesh: Mapping[str, int] | None = None,
        train: str | None = None,
        **params: Any,
    ) -> Module:
        """The verified module for `preset` (default: the first) on `mesh` (default: the
        preset's), with `params` overriding the size/depth defaults; with `train` ("sgd" or
        "adam") one training step of the model instead of its forward pass (training.py)."""
        name = preset or self.default_preset or next(iter(self.presets))
        chosen = self.presets.get(name)
        if chosen is None:
            raise ShardcError(
                f"model '{self.name}' has no preset '{name}' (presets: {', '.join(self.presets)})"
            )
        return self._build(
            name, chosen, mesh if mesh is not None else chosen.mesh, params, train
        )

    def unannotated(
        self, mesh: Mapping[str, int], *, train: str | None = None, **params: Any
    ) -> Module:
        """The model on `mesh` with no sharding written at all (what `auto-shard` starts from;
        `shardc compile --model NAME --mesh ...` without `--preset`)."""
        preset = Preset("no annotations", mesh, {})
        return self._build("unannotated", preset, mesh, params, train)

    def _build(
        self,
        name: str,
        chosen: Preset,
        mesh: Mapping[str, int],
        params: dict[str, Any],
        train: str | None = None,
    ) -> Module:
        known = self.parameters()
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise ShardcError(
                f"model '{self.name}' has no parameter {', '.join(map(repr, unknown))} "
                f"(parameters: {', '.join(known)})"
            )
        axes = dict(mesh)
        needed = {n for a in chosen.roles.values() for n in axis_names(a)}
        missing = sorted(needed - set(axes))
        if missing:
            raise ShardcError(
                f"model '{self.name}' preset '{name}' shards on mesh axes "
                f"{', '.join(map(repr, missing))}, which mesh {axes} does not have"
            )
        b = Builder()
        handle = b.mesh("mesh", axes)
        annotations = Annotations(self.name, name, chosen, handle)
        self.body(b, annotations, **params)
        annotations.check_all_used()
        if train is not None:
            from shardc.models.training import append_training_step

            append_training_step(b, annotations, self.data, train)
        return b.module
