"""Tensor types and shard-shape functions.

`tensor<8x16xf32>` is a `TensorType`; `tensor<8x16xf32, <@mesh, [{"dp"}, {}]>>` a
`DistributedTensorType` whose `mapping` says how it is laid out. A distributed type without a
mapping (`mapping is None`) is fully open: propagation decides it.

Uneven shards follow Shardy/XLA: a dim of size n split k ways gives every device a ceil(n/k)
slice, the last ones padded; `shard_shape` is that padded per-device shape and
`local_shard_shape_from_global` the number of real elements each device holds.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from shardc.ir.diagnostics import ShardingError
from shardc.ir.mapping import NamedMapping, interned

# Element types: the MLIR spelling -> numpy dtype name (bf16 comes from ml_dtypes when present).
DTYPES: dict[str, str] = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "ui8": "uint8",
    "ui16": "uint16",
    "ui32": "uint32",
    "ui64": "uint64",
    "complex<f32>": "complex64",
    "complex<f64>": "complex128",
    # `!stablehlo.token`: shardc models a token as a rank-0 value of element type `token`
    # (`tensor<token>` in native text) that holds no data; at run time it is an empty bool.
    "token": "bool",
}


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype for an element type name (`f32` -> float32, `bf16` via ml_dtypes)."""
    if dtype == "bf16":
        import ml_dtypes  # noqa: PLC0415 - optional, only needed for bf16

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(DTYPES[dtype])


def element_bytes(dtype: str) -> int:
    if dtype == "token":
        return 0
    if dtype == "i1":
        return 1
    if dtype == "bf16":
        return 2
    return np.dtype(DTYPES[dtype]).itemsize


def element_bits(dtype: str) -> int:
    """Bits of one element (`i1`: 1, as StableHLO counts it for bitcasts)."""
    if dtype == "i1":
        return 1
    return element_bytes(dtype) * 8


def is_float(dtype: str) -> bool:
    return dtype.startswith("f") or dtype == "bf16"


def is_complex(dtype: str) -> bool:
    return dtype.startswith("complex<")


# complex element type -> its parts' type (`real`, `imag`, `abs`, `fft`, literals' parts).
COMPLEX_PARTS = {"complex<f32>": "f32", "complex<f64>": "f64"}


def is_integer(dtype: str) -> bool:
    return dtype.startswith("i") or dtype.startswith("ui")


def int_range(dtype: str) -> tuple[int, int] | None:
    """The integers MLIR accepts in a dense literal of `dtype` (signless `iN` takes its bit
    patterns too): None for non-integer types."""
    if not is_integer(dtype):
        return None
    if dtype == "i1":
        return (0, 1)
    bits = element_bits(dtype)
    return (0, (1 << bits) - 1) if dtype.startswith("ui") else (-(1 << (bits - 1)), (1 << bits) - 1)


@dataclass(frozen=True, slots=True)
class TensorType:
    """A ranked tensor: `tensor<8x16xf32>`; a scalar is `tensor<f32>`."""

    shape: tuple[int, ...]
    dtype: str
    # A plain tensor has no sharding; `DistributedTensorType` has a `mapping` field (a slot,
    # which shadows this). So `t.mapping` reads any tensor type's sharding without a test.
    mapping = None

    def __post_init__(self) -> None:
        if not isinstance(self.shape, tuple):
            object.__setattr__(self, "shape", tuple(self.shape))
        if self.dtype not in DTYPES:
            raise ShardingError(f"unknown element type {self.dtype!r}")
        for d in self.shape:
            if d < 0:
                raise ShardingError(f"negative dimension {d} in tensor shape")
        if self.dtype == "token" and self.shape:
            raise ShardingError("a token has no dims: write tensor<token>")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def num_elements(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.num_elements * element_bytes(self.dtype)

    @property
    def tensor(self) -> TensorType:
        """The plain tensor type (drops any mapping)."""
        return TensorType(self.shape, self.dtype)

    def with_shape(self, shape: tuple[int, ...]) -> TensorType:
        return dataclasses.replace(self, shape=tuple(shape))

    def shape_text(self) -> str:
        return "".join(f"{d}x" for d in self.shape) + self.dtype

    def text(self) -> str:
        return f"tensor<{self.shape_text()}>"

    def __str__(self) -> str:
        return self.text()


@dataclass(frozen=True, slots=True)
class DistributedTensorType(TensorType):
    """A tensor type that carries its sharding: `tensor<8x16xf32, <@mesh, [{"dp"}, {}]>>`."""

    mapping: NamedMapping | None = None

    def __post_init__(self) -> None:
        TensorType.__post_init__(self)
        m = self.mapping
        if m is not None:
            object.__setattr__(self, "mapping", interned(m))  # (ir/mapping.py: `interned`)
        if m is not None and m.rank != len(self.shape) and not (m.rank == 0 and m.mesh.is_maximal):
            # (a maximal sharding, `<@maximal_mesh, []>`, puts a tensor of any rank on one device)
            raise ShardingError(
                f"sharding {self.mapping} has {self.mapping.rank} dims but the tensor "
                f"tensor<{TensorType.shape_text(self)}> has rank {len(self.shape)}"
            )

    def with_mapping(self, mapping: NamedMapping | None) -> DistributedTensorType:
        return DistributedTensorType(self.shape, self.dtype, mapping)

    def with_shape(self, shape: tuple[int, ...]) -> DistributedTensorType:
        return DistributedTensorType(tuple(shape), self.dtype, self.mapping)

    def text(self) -> str:
        if self.mapping is None:
            return f"tensor<{self.shape_text()}>"
        return f"tensor<{self.shape_text()}, {self.mapping.text()}>"


def with_sharding(t: TensorType, mapping: NamedMapping | None) -> DistributedTensorType:
    """`t` with `mapping`: `DistributedTensorType(t.shape, t.dtype, mapping)` without checking
    again the shape and element type `t` was checked for (propagation sets many shardings)."""
    if mapping is not None and mapping.rank != len(t.shape):
        return DistributedTensorType(t.shape, t.dtype, mapping)  # raises the located error
    out = object.__new__(DistributedTensorType)
    object.__setattr__(out, "shape", t.shape)
    object.__setattr__(out, "dtype", t.dtype)
    object.__setattr__(out, "mapping", None if mapping is None else interned(mapping))
    return out


AnyTensorType = TensorType  # DistributedTensorType is a TensorType


def shard_shape(shape: tuple[int, ...], mapping: NamedMapping | None) -> tuple[int, ...]:
    """Per-device (padded) shape: each dim of size n split k ways holds ceil(n/k)."""
    if mapping is None:
        return tuple(shape)
    return tuple(-(-n // k) for n, k in zip(shape, mapping.shard_counts()))


def shard_bounds(
    shape: tuple[int, ...], mapping: NamedMapping | None, position: int
) -> tuple[tuple[int, int], ...]:
    """The global [start, stop) the device at row-major mesh `position` holds, per dim."""
    if mapping is None:
        return tuple((0, n) for n in shape)
    out = []
    for d, n in enumerate(shape):
        k = mapping.num_shards(d)
        chunk = -(-n // k) if k > 1 else n
        i = mapping.shard_index(d, position) if k > 1 else 0
        start = min(i * chunk, n)
        out.append((start, min(start + chunk, n)))
    return tuple(out)


def local_shard_shape_from_global(
    shape: tuple[int, ...], mapping: NamedMapping
) -> dict[int, tuple[int, ...]]:
    """Device id -> the real (unpadded) local shape that device holds.

    `[10]` over 4 devices on one axis: {0: (3,), 1: (3,), 2: (3,), 3: (1,)}.
    """
    mesh = mapping.mesh
    return {
        mesh.device_id(p): tuple(b - a for a, b in shard_bounds(shape, mapping, p))
        for p in range(mesh.num_devices)
    }


def global_shape_from_local(
    local_shapes: dict[int, tuple[int, ...]], mapping: NamedMapping
) -> tuple[int, ...]:
    """Inverse of `local_shard_shape_from_global`: sums the distinct shards of every dim."""
    mesh = mapping.mesh
    position_of = mesh.positions_by_id()
    rank = mapping.rank
    out = []
    for d in range(rank):
        sizes: dict[int, int] = {}
        for device, local in local_shapes.items():
            if len(local) != rank:
                raise ShardingError(f"local shape {local} of device {device} has rank != {rank}")
            index = mapping.shard_index(d, position_of[device])
            previous = sizes.setdefault(index, local[d])
            if previous != local[d]:
                raise ShardingError(
                    f"devices holding shard {index} of dim {d} disagree on its size "
                    f"({previous} vs {local[d]})"
                )
        out.append(sum(sizes.values()))
    return tuple(out)


def scalar_of(value: int, dtype: str) -> int | float | bool:
    """`value` (0 or 1) as an element of `dtype`: a bool, float or int."""
    if dtype == "i1":
        return bool(value)
    return float(value) if is_float(dtype) else value
