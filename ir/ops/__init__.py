"""Op definitions. Importing this package registers every op in `OPS`."""

from shardc.ir.ops import (  # noqa: F401 - registration
    compute,
    control,
    custom_call,
    data_flow,
    dynamic,
    elementwise,
    func,
    manual,
    sharding,
    special,
    spmd,
    structural,
    window,
)
from shardc.ir.ops.registry import (
    COLLECTIVE,
    ELEMENTWISE,
    NO_RESULTS,
    OPS,
    SHARDING,
    TERMINATOR,
    AttrSpec,
    OpDef,
    attr,
    coerce_attributes,
    get_op_def,
    infer_result_types,
    verify_operation,
)
from shardc.ir.ops.sharding import GLOBAL_COLLECTIVES

__all__ = [
    "COLLECTIVE",
    "ELEMENTWISE",
    "GLOBAL_COLLECTIVES",
    "NO_RESULTS",
    "OPS",
    "SHARDING",
    "TERMINATOR",
    "AttrSpec",
    "OpDef",
    "attr",
    "coerce_attributes",
    "get_op_def",
    "infer_result_types",
    "verify_operation",
]
