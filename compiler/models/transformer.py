"""A stack of pre-norm transformer blocks.

Per block, on `x: [batch, seq, d_model]`:

    h = layer_norm(x)
    q, k, v = h @ wq, h @ wk, h @ wv                # [batch, seq, heads, d_head]
    s = dot_general(q, k) / sqrt(d_head)            # batched over (batch, heads): [b, h, s, s]
    p = softmax(causal_mask(s))                     # reduce max, exp, reduce add, divide
    o = dot_general(p, v) @ wo                      # [b, h, s, d_head] -> [b, s, d_model]
    x = x + o
    x = x + relu(layer_norm(x) @ w1) @ w2

Presets: data parallel, Megatron tensor parallel (heads and d_ff on tp: one all_reduce after the
attention output projection and one after the MLP), both, and FSDP (every weight's first dim on
dp at priority 1 under the batch's priority 0).
"""

from __future__ import annotations

import shardc.models.layers as L
from shardc.ir.builder import Builder
from shardc.ir.core import Value
from shardc.models.spec import Annotations, ModelSpec, Preset, ann

_NORMS = {"ln1_g": ann(None), "ln1_b": ann(None), "ln2_g": ann(None), "ln2_b": ann(None)}
_REPLICATED = {
    "wq": ann(None, None, None),
    "wk": ann(None, None, None),
    "wv": ann(None, None, None),
    "wo": ann(None, None, None),
    "w1": ann(None, None),
    "w2": ann(None, None),
    **_NORMS,
}
_TP = {
    "wq": ann(None, "tp", None),
    "wk": ann(None, "tp", None),
    "wv": ann(None, "tp", None),
    "wo": ann("tp", None, None),
    "w1": ann(None, "tp"),
    "w2": ann("tp", None),
    **_NORMS,
}
_FSDP = {
    "x": ann("dp", None, None, p=(0,)),
    **{w: ann("dp", None, None, p=(1,)) for w in ("wq", "wk", "wv", "wo")},
    "w1": ann("dp", None, p=(1,)),
    "w2": ann("dp", None, p=(1,)),
    **_NORMS,
}

PRESETS = {
    "dp": Preset(
        "data parallel: batch on dp, weights replicated",
        {"dp": 8},
        {"x": ann("dp", None, None), **_REPLICATED},
    ),
    "tp": Preset(
        "Megatron tensor parallel: heads and d_ff on tp",
        {"tp": 8},
        {"x": ann(None, None, None), **_TP},
    ),
    "dp_tp": Preset(
        "batch on dp; heads and d_ff on tp",
        {"dp": 2, "tp": 4},
        {"x": ann("dp", None, None), **_TP},
    ),
    "fsdp": Preset(
        "FSDP: batch on dp at p0, each weight's first dim on dp at p1", {"dp": 8}, _FSDP
    ),
}


def causal_mask(b: Builder, s: Value) -> Value:
    """Scores `[b, h, q, k]` with entries where k > q replaced by a large negative number."""
    shape = s.type.shape
    seq = shape[-1]
    rows = b.iota((seq, seq), 0)
    cols = b.iota((seq, seq), 1)
    keep = b.broadcast(b.compare(rows, cols, "GE"), shape, (2, 3))
    return b.select(keep, s, L.full(b, -1e9, shape))


def attention(b: Builder, h: Value, w: dict[str, Value], d_head: int, causal: bool, i: int):
    """Multi-head attention of `h: [b, s, d]` with `wq/wk/wv: [d, heads, d_head]`,
    `wo: [heads, d_head, d]`."""
    q = L.named(L.dense(b, h, w["wq"]), f"q_{i}")  # [b, s, heads, d_head]
    k = L.named(L.dense(b, h, w["wk"]), f"k_{i}")
    v = L.named(L.dense(b, h, w["wv"]), f"v_{i}")
    s = b.dot_general(q, k, ((3,), (3,)), ((0, 2), (0, 2)))  # [b, heads, q, k]
    s = L.named(L.scale(b, s, L.inv_sqrt(d_head)), f"scores_{i}")
    if causal:
        s = causal_mask(b, s)
    p = L.named(L.softmax(b, s, 3), f"probs_{i}")
    o = b.dot_general(p, v, ((3,), (1,)), ((0, 1), (0, 2)))  # [b, heads, q, d_head]
    o = L.named(o, f"attn_{i}")
    return L.named(b.dot_general(o, w["wo"], ((1, 3), (0, 1))), f"attn_out_{i}")  # [b, q, d]


def block(b: Builder, x: Value, w: dict[str, Value], d_head: int, causal: bool, i: int) -> Value:
    """One pre-norm block (attention, then the ReLU MLP, each with a residual) on `x: [b, s, d]`
    with the weights of `BLOCK_SHAPES`."""
    h = L.layer_norm(b, x, w["ln1_g"], w["ln1_b"])
    x = L.named(b.add(x, attention(b, h, w, d_head, causal, i)), f"res1_{i}")
    h = L.layer_norm(b, x, w["ln2_g"], w["ln2_b"])
    ff = L.named(L.relu(b, L.dense(b, h, w["w1"])), f"ff_{i}")
    return L.named(b.add(x, L.dense(b, ff, w["w2"])), f"res2_{i}")


def block_shapes(d_model: int, heads: int, d_head: int, d_ff: int) -> dict[str, tuple[int, ...]]:
    """The weights of one block, by role, in argument order."""
    return {
        "ln1_g": (d_model,),
        "ln1_b": (d_model,),
        "wq": (d_model, heads, d_head),
        "wk": (d_model, heads, d_head),
        "wv": (d_model, heads, d_head),
        "wo": (heads, d_head, d_model),
        "ln2_g": (d_model,),
        "ln2_b": (d_model,),
        "w1": (d_model, d_ff),
        "w2": (d_ff, d_model),
    }


def build(
    b: Builder,
    a: Annotations,
    *,
    batch: int = 8,
    seq: int = 16,
    d_model: int = 64,
    heads: int = 8,
    d_head: int = 8,
    d_ff: int = 256,
    layers: int = 1,
    causal: bool = True,
) -> None:
    """Arguments `%x: [batch, seq, d_model]`, then per layer its weights (`%wq_0`, ...);
    returns the block stack's output `[batch, seq, d_model]`."""
    shapes = block_shapes(d_model, heads, d_head, d_ff)
    with b.function("main") as f:
        x = f.arg((batch, seq, d_model), "f32", a("x", 3), name="x")
        params = [
            {r: f.arg(s, "f32", a(r, len(s)), name=f"{r}_{i}") for r, s in shapes.items()}
            for i in range(layers)
        ]
        for i, w in enumerate(params):
            x = block(b, x, w, d_head, causal, i)
        f.returns(x)


MODEL = ModelSpec(
    "transformer",
    "pre-norm transformer blocks: multi-head attention (batched dot_general), softmax, "
    "layer norm, residuals, ReLU MLP",
    build,
    PRESETS,
)
