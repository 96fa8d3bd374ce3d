"""`sdy-propagation-pipeline`: jaxlib's Shardy pipeline — import, propagation and export — so
that `shardc opt X.mlir -p sdy-propagation-pipeline` prints what Shardy prints.

    shardc opt model.mlir -p sdy-propagation-pipeline

It is `propagation-pipeline` followed by the export steps of Shardy's pipeline
(`tests/data/stablehlo/generate.py: expanded_pipeline()`), each a small function below:

- `sdy-sharding-constraint-to-reshard`: every `sharding_constraint` becomes a `reshard`;
- `sdy-remove-sub-axes-in-input-output-shardings`: sub-axes leave function argument/result
  shardings;
- `sdy-close-shardings`: every existing sharding is closed (values without one keep none);
- constants print as `sdy.constant` (Shardy's import turns every `stablehlo.constant` into one).

The native `propagation-pipeline{close=true}` (what `shardc compile` runs) is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

from ir.builder import Builder
from ir.core import Function, Module
from ir.mapping import DimSharding, NamedMapping
from ir.ops.manual import fill_all, sync_all
from ir.types import DistributedTensorType
from passes.close_shardings import close
from passes.manager import Pass, PassContext, register_pass
from passes.propagate import PropagationPipeline

SDY_CONSTANT_MARKER = "sdy.constant"


def constraints_to_reshards(module: Module) -> None:
    """Shardy's `sdy-sharding-constraint-to-reshard`: unconditionally."""
    builder = Builder(module)
    for func in module.functions.values():
        for op in list(func.body):
            if op.name != "sharding_constraint":
                continue
            with builder.insertion_point(before=op):
                new = builder.reshard(op.operand(0), op.result.mapping)
            new.name_hint = op.result.name_hint
            for k, v in op.attributes.items():
                new.defining_op.attributes.setdefault(k, v)  # type: ignore[union-attr]
            op.result.replace_all_uses_with(new)
            op.erase()


def _without_sub_axes(m: NamedMapping) -> NamedMapping:
    if not any(getattr(a, "is_sub_axis", False) for d in m.dims for a in d.axes):
        return m
    dims = []
    for d in m.dims:
        axes = []
        for a in d.axes:
            if a.is_sub_axis:
                break  # the dim keeps its major axes up to the first sub-axis
            axes.append(a)
        dims.append(DimSharding(tuple(axes), d.is_closed, d.priority))
    return m.with_dims(dims)


def remove_io_sub_axes(module: Module) -> None:
    """Shardy's `sdy-remove-sub-axes-in-input-output-shardings`."""
    for func in module.functions.values():
        for a in func.args:
            if a.mapping is not None:
                a.set_mapping(_without_sub_axes(a.mapping))
        _map_results(func, _without_sub_axes)


def _map_results(func: Function, fn) -> None:
    for i, t in enumerate(func.result_types):
        if isinstance(t, DistributedTensorType) and t.mapping is not None:
            func.result_types[i] = DistributedTensorType(t.shape, t.dtype, fn(t.mapping))


def close_existing(module: Module) -> None:
    """Shardy's `sdy-close-shardings`: close every sharding there is; add none."""
    fill_all(module)
    for func in module.functions.values():
        for a in func.args:
            if a.mapping is not None:
                a.set_mapping(close(a.mapping))
        for op in func.body:
            for r in op.results:
                if r.mapping is not None:
                    r.set_mapping(close(r.mapping))
        _map_results(func, close)
    sync_all(module)


def mark_sdy_constants(module: Module) -> None:
    for func in module.functions.values():
        for op in func.body:
            if op.name == "constant":
                op.attributes[SDY_CONSTANT_MARKER] = True


@register_pass("sdy-propagation-pipeline")
@dataclass(frozen=True)
class SdyPropagationPipeline(Pass):
    """jaxlib's `sdy-propagation-pipeline`: `propagation-pipeline` then Shardy's export steps."""

    strategy: str = "aggressive"

    def run(self, module: Module, ctx: PassContext) -> None:
        PropagationPipeline(strategy=self.strategy).run(module, ctx)
        constraints_to_reshards(module)
        remove_io_sub_axes(module)
        close_existing(module)
        mark_sdy_constants(module)
