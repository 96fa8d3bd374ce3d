"""A stack of two-layer MLPs: `x -> relu(x @ w1) @ w2 (+ x)` per layer.

The textbook case for every parallelism style: data parallel (batch split), Megatron tensor
parallel (w1 split by columns, w2 by rows: one all_reduce per layer), both, and FSDP (weights
split over the data axis at a weaker priority, so the batch keeps the axis and the weights are
all-gathered where they are used).
"""

from __future__ import annotations

import shardc.models.layers as L
from shardc.ir.builder import Builder
from shardc.models.spec import Annotations, ModelSpec, Preset, ann

_DP = {"x": ann("dp", None), "w1": ann(None, None), "w2": ann(None, None)}
_TP = {"w1": ann(None, "tp"), "w2": ann("tp", None)}

PRESETS = {
    "dp": Preset("data parallel: batch on dp, weights replicated", {"dp": 8}, _DP),
    "tp": Preset(
        "Megatron tensor parallel: w1 by columns, w2 by rows on tp",
        {"tp": 8},
        {"x": ann(None, None), **_TP},
    ),
    "dp_tp": Preset(
        "batch on dp, Megatron column/row weights on tp",
        {"dp": 2, "tp": 4},
        {"x": ann("dp", None), **_TP},
    ),
    "fsdp": Preset(
        "FSDP: batch on dp at p0, weights' first dim on dp at p1 (gathered where used)",
        {"dp": 8},
        {
            "x": ann("dp", None, p=(0,)),
            "w1": ann("dp", None, p=(1,)),
            "w2": ann("dp", None, p=(1,)),
        },
    ),
}


def build(
    b: Builder,
    a: Annotations,
    *,
    batch: int = 16,
    d_model: int = 64,
    d_ff: int = 256,
    layers: int = 1,
) -> None:
    """Arguments `%x: [batch, d_model]`, then per layer `%w1_i: [d_model, d_ff]` and
    `%w2_i: [d_ff, d_model]`; returns `[batch, d_model]`. Layers after the first add a
    residual connection."""
    with b.function("main") as f:
        x = f.arg((batch, d_model), "f32", a("x", 2), name="x")
        weights = []
        for i in range(layers):
            w1 = f.arg((d_model, d_ff), "f32", a("w1", 2), name=f"w1_{i}")
            w2 = f.arg((d_ff, d_model), "f32", a("w2", 2), name=f"w2_{i}")
            weights.append((w1, w2))
        for i, (w1, w2) in enumerate(weights):
            h = L.named(L.relu(b, L.dense(b, x, w1)), f"h_{i}")
            y = L.named(L.dense(b, h, w2), f"y_{i}")
            x = y if i == 0 else L.named(b.add(x, y), f"res_{i}")
        f.returns(x)


MODEL = ModelSpec("mlp", "two-layer ReLU MLP blocks (x @ w1 -> relu -> @ w2)", build, PRESETS)
