"""Token embedding, logits against the (tied or separate) table, softmax cross-entropy.

    e = gather(table, tokens)                          # [batch, seq, d_model]
    logits = dot_general(e, table)                     # contract d_model: [batch, seq, vocab]
    shifted = logits - max(logits)                     # reduce max over vocab
    lse = log(sum(exp(shifted)))                       # exp, reduce add over vocab
    picked = sum(select(iota == labels, shifted, 0))   # the label's logit via a one-hot mask
    loss = mean(lse - picked)                          # a scalar

The vocab-parallel preset splits the table's rows on tp (Megatron): the lookup's collapsed
vocab dim is a reduction factor (each device gathers the rows it holds, then an all_reduce),
the logits come out vocab-sharded and the cross-entropy reduces over vocab with small
all_reduces instead of gathering `[batch, seq, vocab]`.
"""

from __future__ import annotations

import shardc.models.layers as L
from shardc.ir.builder import Builder
from shardc.ir.core import Value
from shardc.models.spec import Annotations, ModelSpec, Preset, ann

PRESETS = {
    "dp": Preset(
        "data parallel: tokens and labels on dp, table replicated",
        {"dp": 8},
        {
            "tokens": ann("dp", None),
            "labels": ann("dp", None),
            "table": ann(None, None),
            "out_table": ann(None, None),
        },
    ),
    "tp": Preset(
        "vocab parallel: table rows (vocab) on tp, tokens and labels on dp",
        {"dp": 2, "tp": 4},
        {
            "tokens": ann("dp", None),
            "labels": ann("dp", None),
            "table": ann("tp", None),
            "out_table": ann("tp", None),
        },
    ),
}


def lookup(b: Builder, table: Value, tokens: Value) -> Value:
    """`table[tokens]`: rows of `table: [vocab, d]` for `tokens: [batch, seq]` (StableHLO gather
    with an implicit trailing index dim)."""
    d = table.type.shape[1]
    attrs = {
        "offset_dims": (2,),
        "collapsed_slice_dims": (0,),
        "start_index_map": (0,),
        "index_vector_dim": 2,
        "slice_sizes": (1, d),
    }
    return b.op("gather", [table, tokens], attrs)


def cross_entropy(b: Builder, logits: Value, labels: Value) -> Value:
    """Mean over tokens of `logsumexp(logits) - logits[label]`; logits `[b, s, vocab]`."""
    shape = logits.type.shape
    m = L.reduce_keep(b, logits, 2, "maximum")
    shifted = b.subtract(logits, m)
    lse = L.named(b.log(b.reduce(b.exponential(shifted), (2,), "add")), "log_sum_exp")
    vocab_ids = b.iota(shape, 2)
    one_hot = b.compare(vocab_ids, b.broadcast(labels, shape, (0, 1)), "EQ")
    picked = b.select(one_hot, shifted, L.full(b, 0.0, shape))
    picked = L.named(b.reduce(picked, (2,), "add"), "label_logit")
    per_token = L.named(b.subtract(lse, picked), "token_loss")
    total = b.reduce(per_token, (0, 1), "add")
    return b.multiply(total, b.constant(1.0 / (shape[0] * shape[1])))


def build(
    b: Builder,
    a: Annotations,
    *,
    batch: int = 8,
    seq: int = 16,
    vocab: int = 512,
    d_model: int = 64,
    tied: bool = True,
) -> None:
    """Arguments `%tokens, %labels: [batch, seq] i32`, `%table: [vocab, d_model]` (and
    `%out_table` when not tied); returns the mean cross-entropy (a scalar)."""
    with b.function("main") as f:
        tokens = f.arg((batch, seq), "i32", a("tokens", 2), name="tokens")
        labels = f.arg((batch, seq), "i32", a("labels", 2), name="labels")
        table = f.arg((vocab, d_model), "f32", a("table", 2), name="table")
        out_table = (
            table if tied else f.arg((vocab, d_model), "f32", a("out_table", 2), name="out_table")
        )
        if tied:
            a.not_needed("out_table")
        e = L.named(lookup(b, table, tokens), "embed")
        logits = L.named(b.dot_general(e, out_table, ((2,), (1,))), "logits")
        loss = L.named(cross_entropy(b, logits, labels), "loss")
        f.returns(loss)


MODEL = ModelSpec(
    "embedding",
    "embedding lookup (gather), logits against the table, softmax cross-entropy loss",
    build,
    PRESETS,
    data=("tokens", "labels"),
)
