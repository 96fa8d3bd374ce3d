"""A GPT-style language model: token and position embeddings, pre-norm transformer blocks
(transformer.py), a final layer norm, logits against the tied embedding table, and the mean
cross-entropy of the next tokens (embedding.py):

    x = table[tokens] + pos                            # gather: [batch, seq, d_model]
    x = block_i(x) for each layer                      # causal attention, ReLU MLP
    logits = layer_norm(x) @ table^T                   # tied: [batch, seq, vocab]
    loss = mean(logsumexp(logits) - logits[labels])    # a scalar

Its training step (`--train sgd|adam`) is what people shard: the gradient of the lookup is a
scatter-add into the table, and with the vocab on tp that scatter lands on the devices that own
the rows. Presets: data parallel; Megatron tensor parallel with a vocab-parallel table; both;
FSDP (every weight's first dim on dp at priority 1 under the batch's priority 0).
"""

from __future__ import annotations

import shardc.models.layers as L
from shardc.ir.builder import Builder
from shardc.models.embedding import cross_entropy, lookup
from shardc.models.spec import Annotations, ModelSpec, Preset, ann
from shardc.models.transformer import block, block_shapes

_NORMS = {"ln1_g": ann(None), "ln1_b": ann(None), "ln2_g": ann(None), "ln2_b": ann(None),
          "lnf_g": ann(None), "lnf_b": ann(None)}
_TP = {
    "table": ann("tp", None),
    "pos": ann(None, None),
    "wq": ann(None, "tp", None),
    "wk": ann(None, "tp", None),
    "wv": ann(None, "tp", None),
    "wo": ann("tp", None, None),
    "w1": ann(None, "tp"),
    "w2": ann("tp", None),
    **_NORMS,
}
_DATA_DP = {"tokens": ann("dp", None), "labels": ann("dp", None)}

PRESETS = {
    "dp": Preset(
        "data parallel: tokens and labels on dp, weights replicated",
        {"dp": 8},
        {
            **_DATA_DP,
            "table": ann(None, None),
            "pos": ann(None, None),
            **{w: ann(None, None, None) for w in ("wq", "wk", "wv", "wo")},
            "w1": ann(None, None),
            "w2": ann(None, None),
            **_NORMS,
        },
    ),
    "tp": Preset(
        "Megatron tensor parallel: heads, d_ff and the table's vocab on tp",
        {"tp": 8},
        {"tokens": ann(None, None), "labels": ann(None, None), **_TP},
    ),
    "dp_tp": Preset(
        "tokens on dp; heads, d_ff and the table's vocab on tp",
        {"dp": 2, "tp": 4},
        {**_DATA_DP, **_TP},
    ),
    "fsdp": Preset(
        "FSDP: tokens on dp at p0, each weight's first dim on dp at p1",
        {"dp": 8},
        {
            "tokens": ann("dp", None, p=(0,)),
            "labels": ann("dp", None, p=(0,)),
            "table": ann("dp", None, p=(1,)),
            "pos": ann("dp", None, p=(1,)),
            **{w: ann("dp", None, None, p=(1,)) for w in ("wq", "wk", "wv", "wo")},
            "w1": ann("dp", None, p=(1,)),
            "w2": ann("dp", None, p=(1,)),
            **_NORMS,
        },
    ),
}


def build(
    b: Builder,
    a: Annotations,
    *,
    batch: int = 8,
    seq: int = 16,
    vocab: int = 256,
    d_model: int = 64,
    heads: int = 8,
    d_head: int = 8,
    d_ff: int = 256,
    layers: int = 1,
) -> None:
    """Arguments `%tokens, %labels: [batch, seq] i32`, `%table: [vocab, d_model]`,
    `%pos: [seq, d_model]`, per layer the block's weights, `%lnf_g, %lnf_b`; returns the mean
    cross-entropy."""
    shapes = block_shapes(d_model, heads, d_head, d_ff)
    with b.function("main") as f:
        tokens = f.arg((batch, seq), "i32", a("tokens", 2), name="tokens")
        labels = f.arg((batch, seq), "i32", a("labels", 2), name="labels")
        table = f.arg((vocab, d_model), "f32", a("table", 2), name="table")
        pos = f.arg((seq, d_model), "f32", a("pos", 2), name="pos")
        params = [
            {r: f.arg(s, "f32", a(r, len(s)), name=f"{r}_{i}") for r, s in shapes.items()}
            for i in range(layers)
        ]
        lnf_g = f.arg((d_model,), "f32", a("lnf_g", 1), name="lnf_g")
        lnf_b = f.arg((d_model,), "f32", a("lnf_b", 1), name="lnf_b")
        shape = (batch, seq, d_model)
        x = L.named(b.add(lookup(b, table, tokens), b.broadcast(pos, shape, (1, 2))), "embed")
        for i, w in enumerate(params):
            x = block(b, x, w, d_head, True, i)
        h = L.layer_norm(b, x, lnf_g, lnf_b)
        logits = L.named(b.dot_general(h, table, ((2,), (1,))), "logits")
        f.returns(L.named(cross_entropy(b, logits, labels), "loss"))


MODEL = ModelSpec(
    "gpt",
    "GPT-style language model: embedding, causal transformer blocks, tied logits, "
    "cross-entropy loss",
    build,
    PRESETS,
    data=("tokens", "labels"),
)
