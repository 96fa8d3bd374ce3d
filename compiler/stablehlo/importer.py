"""StableHLO + Shardy (sdy) MLIR text -> `shardc.ir.core.Module`.

    module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
      sdy.mesh @mesh = <["dp"=2, "tp"=4]>
      func.func public @main(%arg0: tensor<16x32xf32> {sdy.sharding = #sdy.sharding<@mesh, ...>})
          -> tensor<16x32xf32> {
        %0 = stablehlo.tanh %arg0 : tensor<16x32xf32>
        return %0 : tensor<16x32xf32>
      }
    }

`import_stablehlo(text, filename)` first tries the line reader (`line_reader.py`: JAX's one op a
line, each distinct line read once and repeated), which builds exactly what the grammar path
builds or declines; the grammar path reads the text into light records (`reader.py`, with the
LALR grammar in grammar.lark; no parse tree), builds the module (`builder.py`; each op family
in `ops/` converts its records, `attributes.py` decodes attribute text and `locations.py`
resolves `loc(...)`), then verifies it. Every error is the grammar path's: a located
`ShardcError`; an op the native IR cannot represent is
`file:line:col: error: unsupported op 'stablehlo.while' ...`.
What imports and what is normalised: docs/interop.md.
"""

from __future__ import annotations

import sys
from collections.abc import Container

from shardc.ir.collector import long_lived
from shardc.ir.core import Module, Operation
from shardc.ir.diagnostics import ShardcError
from shardc.ir.limits import DEFAULT_LIMITS, Limits, check_module, check_source
from shardc.ir.line_values import Unsupported
from shardc.ir.ops.manual import fill_all
from shardc.ir.verifier import verify_module
from shardc.stablehlo.builder import ModuleBuilder
from shardc.stablehlo.import_table import SyntaxIssue
from shardc.stablehlo.line_reader import LineReader
from shardc.stablehlo.propagation_edges import ON_OP as _EDGES  # noqa: F401 - registers verifiers


def import_stablehlo(
    text: str, filename: str = "<input>", *, limits: Limits = DEFAULT_LIMITS
) -> Module:
    """Parse StableHLO + sdy MLIR text (what JAX prints) into a verified native `Module`
    (within `limits`: shardc.ir.limits)."""
    with long_lived():  # the module is one large graph of long-lived objects
        module = _read_lines(text, filename, limits)
        if module is not None:
            return module
        check_source(text, filename, limits)
        from shardc.stablehlo.reader import read  # (loads lark: the line reader does not)

        aliases, module_rec = read(text, filename)
        builder = ModuleBuilder(text, filename, aliases, limits)
        try:
            module = builder.build(module_rec)
        except ShardcError as e:
            raise e.with_location(None, text) from None
    try:
        _check(module, builder)
    except ShardcError as e:
        raise e.with_location(None, text) from None
    return module


def _check(module: Module, builder: ModuleBuilder, verified: Container[Operation] = ()) -> None:
    """What a built module must pass: limits, manual computations' values, verification."""
    check_module(module, builder.limits)
    fill_all(module)  # a manual_computation's values carry its attributes' shardings
    verify_module(module, verified)
    for error in builder.deferred_shardings:  # MLIR verifies a signature after its body
        raise error


def _read_lines(text: str, filename: str, limits: Limits) -> Module | None:
    """The module the line reader (line_reader.py) builds, verified; None when it does not
    read `text` or finds anything wrong (the grammar then reads it and reports the error)."""
    builder = ModuleBuilder(text, filename, {}, limits)
    reader = LineReader(text, filename, builder)
    try:
        module = reader.read()
        if reader.depth > limits.depth or len(text) > (limits.file_mb << 20) // 4:
            check_source(text, filename, limits)
        _check(module, builder, reader.repeats)
    except (Unsupported, ShardcError, SyntaxIssue, ValueError, RecursionError):
        return None
    except Exception as e:
        lark = sys.modules.get("lark")  # (loaded only if the grammar read an item)
        if lark is not None and isinstance(e, lark.exceptions.LarkError):
            return None
        raise
    return module
