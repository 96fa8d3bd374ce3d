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

from shardc.ir.builder import Builder, MeshHandle
from shardc.ir.core import Module
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mapping import NamedMapping, SpecEntry


@dataclass(frozen=True, slots=True)
class Annotation:
    """One dim entry per tensor dim (an axis name, a tuple of names, None, UNCONSTRAINED) and
    optional per-dim priorities (`p=(1, None)` -> `[{"dp"}p1, {}]`)."""

    spec: tuple[SpecEntry, ...]
    priorities: tuple[int | None, ...] = ()


def ann(*spec: SpecEntry, p: tuple[int | None, ...] = ()) -> Annotation:
    """`ann("dp", None)` -> `[{"dp"}, {}]`; `ann("dp", None, p=(1,))` -> `[{"dp"}p1, {}]`."""
    return Annotation(tuple(spec), tuple(p))


@dataclass(frozen=True)
class Preset:
    """A named annotation set: a description, the mesh it is written for, role -> sharding."""

    description: str
    mesh: Mapping[str, int]
    roles: Mapping[str, Annotation]


class Annotations:
    """The mapping of each role under one preset, on one mesh (handed to a model's builder)."""

    def __init__(self, model: str, preset_name: str, preset: Preset, mesh: MeshHandle):
        self.model = model
        self.preset_name = preset_name
        self.preset = preset
        self.mesh = mesh
        self.used: set[str] = set()

    def __call__(self, role: str, rank: int) -> NamedMapping | None:
        """The mapping for an argument playing `role` (None when the preset leaves it open)."""
        self.used.add(role)
        a = self.preset.roles.get(role)
        if a is None:
            return None
        if len(a.spec) != rank:
            raise ShardcError(
                f"model '{self.model}' preset '{self.preset_name}': role '{role}' is annotated "
                f"with {len(a.spec)} dims but the tensor has rank {rank}"
            )
        return self.mesh.spec(*a.spec, priorities=a.priorities)

    def not_needed(self, *roles: str) -> None:
        """Roles this configuration of the model has no argument for (a tied table)."""
        self.used.update(roles)

    def check_all_used(self) -> None:
        unused = sorted(set(self.preset.roles) - self.used)
        if unused:
            raise ShardcError(
                f"model '{self.model}' preset '{self.preset_name}' annotates roles the model "
                f"does not have: {', '.join(unused)}"
            )


def _axis_names(a: Annotation) -> list[str]:
    names: list[str] = []
    for entry in a.spec:
        if isinstance(entry, str):
            names.append(entry)
        elif isinstance(entry, tuple):
            names.extend(entry)
    return names


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

    def parameters(self) -> dict[str, Any]:
        """Size and depth parameters with their defaults (`{"batch": 16, "layers": 1, ...}`)."""
        sig = inspect.signature(self.body)
        return {
            n: p.default
            for n, p in sig.parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY
        }

    def build(
        self, preset: str | None = None, *, mesh: Mapping[str, int] | None = None, **params: Any
    ) -> Module:
        """The verified module for `preset` (default: the first) on `mesh` (default: the
        preset's), with `params` overriding the size/depth defaults."""
        name = preset or self.default_preset or next(iter(self.presets))
        chosen = self.presets.get(name)
        if chosen is None:
            raise ShardcError(
                f"model '{self.name}' has no preset '{name}' (presets: {', '.join(self.presets)})"
            )
        return self._build(name, chosen, mesh if mesh is not None else chosen.mesh, params)

    def unannotated(self, mesh: Mapping[str, int], **params: Any) -> Module:
        """The model on `mesh` with no sharding written at all (what `auto-shard` starts from;
        `shardc compile --model NAME --mesh ...` without `--preset`)."""
        return self._build("unannotated", Preset("no annotations", mesh, {}), mesh, params)

    def _build(
        self, name: str, chosen: Preset, mesh: Mapping[str, int], params: dict[str, Any]
    ) -> Module:
        known = self.parameters()
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise ShardcError(
                f"model '{self.name}' has no parameter {', '.join(map(repr, unknown))} "
                f"(parameters: {', '.join(known)})"
            )
        axes = dict(mesh)
        needed = {n for a in chosen.roles.values() for n in _axis_names(a)}
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
        return b.module
