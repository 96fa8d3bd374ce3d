"""The StableHLO / chlo / sdy ops, one module per op family; importing this package registers
every family's reader rules and converters (import_table.py) and printers (export_table.py).

Each family module holds one family's syntax both ways: the grammar rules' reader callbacks, the
converters of its records and generic forms to native ops, and its printers. Adding a family is
adding a module here (and its rules to grammar.lark when it has a pretty form).
"""

from shardc.stablehlo.ops import (
    bits,
    calls,
    collectives,
    contraction,
    control_flow,
    data_flow,
    elementwise,
    indexing,
    linalg,
    manual,
    reductions,
    replica_collectives,
    shape,
    sharding_ops,
    sorting,
)

FAMILIES = (bits, calls, collectives, contraction, control_flow, data_flow, elementwise, indexing,
            linalg, manual, reductions, replica_collectives, shape, sharding_ops, sorting)
