"""Annotation presets: the shardings a practitioner writes for a zoo model's roles.

    preset = Preset("data parallel", {"dp": 8}, {"x": ann("dp", None)})

A preset is a table from *roles* (`"x"`, `"wq"`, `"w1"`, ...) to a sharding written JAX-style
(`ann("dp", None, p=(0,))`) plus the mesh it is meant for. `Annotations` hands a model's builder
the mapping of each role under one preset and records which roles it asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shardc.ir.builder import MeshHandle
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
        self.order: list[str] = []  # the role of each argument asked for, in order

    def __call__(self, role: str, rank: int) -> NamedMapping | None:
        """The mapping for an argument playing `role` (None when the preset leaves it open)."""
        self.used.add(role)
        self.order.append(role)
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


def axis_names(a: Annotation) -> list[str]:
    """The mesh axis names an annotation shards on, in order."""
    names: list[str] = []
    for entry in a.spec:
        if isinstance(entry, str):
            names.append(entry)
        elif isinstance(entry, tuple):
            names.extend(entry)
    return names
