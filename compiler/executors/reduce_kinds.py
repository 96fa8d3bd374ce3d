"""The reduction kinds the executors combine values with (`add`, `multiply`, `maximum`,
`minimum`, `and`, `or`): their numpy ufunc, their neutral element, and the kind of each
`ReduceOp` an unreduced value is pending.

    REDUCE_UFUNCS["maximum"].reduce(x, axis=0)
    identity("maximum", np.dtype(np.float32))       # -inf
    REDUCE_OP_KIND[mapping.unreduced_op]            # ReduceOp.SUM -> "add"
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shardc.executors.dtypes import is_float_dtype
from shardc.ir.placements import ReduceOp

REDUCE_UFUNCS: dict[str, np.ufunc] = {
    "add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
    "and": np.bitwise_and, "or": np.bitwise_or,
}
REDUCE_OP_KIND = {ReduceOp.SUM: "add", ReduceOp.MAX: "maximum", ReduceOp.MIN: "minimum",
                  ReduceOp.PROD: "multiply", ReduceOp.AND: "and", ReduceOp.OR: "or"}


def identity(kind: str, dtype: np.dtype) -> Any:
    """The neutral element of `kind` (add, multiply, maximum, minimum, and, or) for `dtype`."""
    if dtype == np.bool_:
        return kind in ("multiply", "and", "minimum")
    if is_float_dtype(dtype):
        return {"add": 0.0, "multiply": 1.0, "maximum": -np.inf, "minimum": np.inf}[kind]
    info = np.iinfo(dtype)
    return {"add": 0, "or": 0, "multiply": 1, "and": -1 if info.min < 0 else info.max,
            "maximum": info.min, "minimum": info.max}[kind]
