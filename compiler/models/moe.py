"""A mixture-of-experts layer with top-1 routing (Switch/GShard style, dense one-hot einsums).

On `x: [groups, group_size, d_model]` (tokens in groups; groups are what data parallelism splits):

    probs = softmax(x @ w_router)                      # [g, s, experts]
    top = logits == max(logits)                        # top-1 via reduce max + compare
    pos = cumsum_s(top)                                # a dot_general with a lower-triangular
    dispatch[g, s, e, c] = top[g, s, e] & (pos - 1 == c)   # [g, s, e, capacity] one-hot
    combine = dispatch * gate                          # gate: the chosen expert's probability
    xe = einsum("gsec,gsd->egcd", dispatch, x)         # tokens -> expert slots (all_to_all)
    ye = relu(xe @ w1[e]) @ w2[e]                      # expert MLPs, batched over experts
    y = x + einsum("gsec,egcd->gsd", combine, ye)      # expert slots -> tokens (all_to_all)

Tokens past an expert's capacity are dropped (their update is zero), as in Switch.
With groups and experts both on `ep`, moving from group-sharded slots to expert-sharded slots
is the all_to_all of expert parallelism.
"""

from __future__ import annotations

import shardc.models.layers as L
from shardc.ir.builder import Builder
from shardc.ir.core import Value
from shardc.models.spec import Annotations, ModelSpec, Preset, ann

PRESETS = {
    "ep": Preset(
        "expert parallel: token groups and experts on ep (all_to_all dispatch and combine)",
        {"ep": 8},
        {
            "x": ann("ep", None, None),
            "w_router": ann(None, None),
            "w1": ann("ep", None, None),
            "w2": ann("ep", None, None),
        },
    ),
    "ep_tp": Preset(
        "groups and experts on ep, each expert's d_ff on tp",
        {"ep": 4, "tp": 2},
        {
            "x": ann("ep", None, None),
            "w_router": ann(None, None),
            "w1": ann("ep", None, "tp"),
            "w2": ann("ep", "tp", None),
        },
    ),
    "dp": Preset(
        "data parallel: token groups on dp, experts replicated",
        {"dp": 8},
        {
            "x": ann("dp", None, None),
            "w_router": ann(None, None),
            "w1": ann(None, None, None),
            "w2": ann(None, None, None),
        },
    ),
}


def top1_dispatch(b: Builder, logits: Value, capacity: int) -> tuple[Value, Value]:
    """(dispatch, combine) one-hot tensors `[g, s, experts, capacity]` for top-1 routing."""
    g, s, e = logits.type.shape
    top_logit = L.reduce_keep(b, logits, 2, "maximum")
    exp = b.exponential(b.subtract(logits, top_logit))
    probs = L.named(b.divide(exp, L.reduce_keep(b, exp, 2, "add")), "router_probs")  # softmax
    zeros, ones = L.full(b, 0.0, (g, s, e)), L.full(b, 1.0, (g, s, e))
    top = b.compare(logits, top_logit, "EQ")
    chosen = L.named(b.select(top, ones, zeros), "chosen")  # [g, s, e] one-hot (f32)
    gate = L.named(b.reduce(b.multiply(probs, chosen), (2,), "add"), "gate")  # [g, s]
    # pos[g, t, e] = number of tokens s <= t of group g routed to expert e
    rows, cols = b.iota((s, s), 0), b.iota((s, s), 1)
    lower = b.select(b.compare(cols, rows, "LE"), L.full(b, 1.0, (s, s)), L.full(b, 0.0, (s, s)))
    pos = b.transpose(b.dot_general(chosen, lower, ((1,), (1,))), (0, 2, 1))  # [g, s, e]
    slot = b.subtract(pos, ones)
    shape = (g, s, e, capacity)
    in_slot = b.compare(b.broadcast(slot, shape, (0, 1, 2)), b.iota(shape, 3, "f32"), "EQ")
    dispatch = b.select(in_slot, b.broadcast(chosen, shape, (0, 1, 2)), L.full(b, 0.0, shape))
    combine = b.multiply(dispatch, b.broadcast(gate, shape, (0, 1)))
    return L.named(dispatch, "dispatch"), L.named(combine, "combine")


def build(
    b: Builder,
    a: Annotations,
    *,
    groups: int = 8,
    group_size: int = 16,
    d_model: int = 32,
    experts: int = 8,
    d_ff: int = 64,
    capacity: int = 4,
) -> None:
    """Arguments `%x: [groups, group_size, d_model]`, `%w_router: [d_model, experts]`,
    `%w1: [experts, d_model, d_ff]`, `%w2: [experts, d_ff, d_model]`; returns `x + moe(x)`."""
    with b.function("main") as f:
        x = f.arg((groups, group_size, d_model), "f32", a("x", 3), name="x")
        wr = f.arg((d_model, experts), "f32", a("w_router", 2), name="w_router")
        w1 = f.arg((experts, d_model, d_ff), "f32", a("w1", 3), name="w1")
        w2 = f.arg((experts, d_ff, d_model), "f32", a("w2", 3), name="w2")
        logits = L.named(L.dense(b, x, wr), "router_logits")
        dispatch, combine = top1_dispatch(b, logits, capacity)
        xe = b.dot_general(dispatch, x, ((1,), (1,)), ((0,), (0,)))  # [g, e, c, d]
        xe = L.named(b.transpose(xe, (1, 0, 2, 3)), "expert_in")  # [e, g, c, d]
        h = b.dot_general(xe, w1, ((3,), (1,)), ((0,), (0,)))  # [e, g, c, f]
        h = L.named(L.relu(b, h), "expert_hidden")
        ye = L.named(b.dot_general(h, w2, ((3,), (1,)), ((0,), (0,))), "expert_out")
        y = b.dot_general(combine, ye, ((2, 3), (0, 2)), ((0,), (1,)))  # [g, s, d]
        f.returns(L.named(b.add(x, L.named(y, "moe_out")), "out"))


MODEL = ModelSpec(
    "moe",
    "mixture-of-experts layer: top-1 router, one-hot dispatch/combine einsums, expert MLPs",
    build,
    PRESETS,
)
