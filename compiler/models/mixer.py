"""MLP-Mixer blocks (a convolution-free vision model): token mixing, then channel mixing.

Per block, on `x: [batch, patches, channels]`:

    t = transpose(layer_norm(x), [0, 2, 1])            # [batch, channels, patches]
    x = x + transpose(relu(t @ wt1) @ wt2, [0, 2, 1])  # mix across patches
    x = x + relu(layer_norm(x) @ wc1) @ wc2            # mix across channels
"""

from __future__ import annotations

import shardc.models.layers as L
from shardc.ir.builder import Builder
from shardc.models.spec import Annotations, ModelSpec, Preset, ann

_NORMS = {"ln1_g": ann(None), "ln1_b": ann(None), "ln2_g": ann(None), "ln2_b": ann(None)}
_REPLICATED = {
    "wt1": ann(None, None),
    "wt2": ann(None, None),
    "wc1": ann(None, None),
    "wc2": ann(None, None),
    **_NORMS,
}
_TP = {
    "wt1": ann(None, "tp"),
    "wt2": ann("tp", None),
    "wc1": ann(None, "tp"),
    "wc2": ann("tp", None),
    **_NORMS,
}

PRESETS = {
    "dp": Preset(
        "data parallel: images on dp, weights replicated",
        {"dp": 8},
        {"x": ann("dp", None, None), **_REPLICATED},
    ),
    "tp": Preset(
        "tensor parallel: hidden dims of both MLPs on tp (Megatron column/row)",
        {"tp": 8},
        {"x": ann(None, None, None), **_TP},
    ),
    "dp_tp": Preset(
        "images on dp; hidden dims of both MLPs on tp",
        {"dp": 2, "tp": 4},
        {"x": ann("dp", None, None), **_TP},
    ),
}


def build(
    b: Builder,
    a: Annotations,
    *,
    batch: int = 8,
    patches: int = 16,
    channels: int = 32,
    token_hidden: int = 32,
    channel_hidden: int = 128,
    layers: int = 1,
) -> None:
    """Arguments `%x: [batch, patches, channels]`, then per layer its weights; returns
    `[batch, patches, channels]`."""
    shapes = {
        "ln1_g": (channels,),
        "ln1_b": (channels,),
        "wt1": (patches, token_hidden),
        "wt2": (token_hidden, patches),
        "ln2_g": (channels,),
        "ln2_b": (channels,),
        "wc1": (channels, channel_hidden),
        "wc2": (channel_hidden, channels),
    }
    with b.function("main") as f:
        x = f.arg((batch, patches, channels), "f32", a("x", 3), name="x")
        params = [
            {r: f.arg(s, "f32", a(r, len(s)), name=f"{r}_{i}") for r, s in shapes.items()}
            for i in range(layers)
        ]
        for i, w in enumerate(params):
            t = b.transpose(L.layer_norm(b, x, w["ln1_g"], w["ln1_b"]), (0, 2, 1))
            t = L.named(L.dense(b, L.relu(b, L.dense(b, t, w["wt1"])), w["wt2"]), f"tok_{i}")
            x = L.named(b.add(x, b.transpose(t, (0, 2, 1))), f"res1_{i}")
            h = L.layer_norm(b, x, w["ln2_g"], w["ln2_b"])
            c = L.named(L.dense(b, L.relu(b, L.dense(b, h, w["wc1"])), w["wc2"]), f"chan_{i}")
            x = L.named(b.add(x, c), f"res2_{i}")
        f.returns(x)


MODEL = ModelSpec(
    "mixer",
    "MLP-Mixer blocks: token-mixing and channel-mixing MLPs with transposes",
    build,
    PRESETS,
)
