"""numpy dtypes the kernels compute in, and which float types are widened to float32 first."""

from __future__ import annotations

import numpy as np

try:
    import ml_dtypes
except ImportError:  # bf16 is optional; without ml_dtypes it cannot be named anyway
    ml_dtypes = None  # type: ignore[assignment]

F32 = np.dtype(np.float32)
F64 = np.dtype(np.float64)
I64 = np.dtype(np.int64)
WIDE_FLOATS = frozenset([F32, F64])
# Float types computed in float32 and rounded back (XLA's CPU float normalisation does the same).
LOW_FLOATS = frozenset(
    [np.dtype(np.float16)] + ([np.dtype(ml_dtypes.bfloat16)] if ml_dtypes is not None else [])
)


def is_float_dtype(dtype: np.dtype) -> bool:
    return dtype.kind == "f" or dtype in LOW_FLOATS

