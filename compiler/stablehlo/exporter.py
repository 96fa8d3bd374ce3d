"""`shardc.ir.core.Module` -> StableHLO + Shardy (sdy) MLIR text, in MLIR's own pretty form.

    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] {sdy.sharding =
        #sdy.sharding_per_value<[<@mesh, [{"dp"}, {"tp"}]>]>} : (tensor<...>, ...) -> tensor<...>

The text is what MLIR (JAX's `as_text()`, Shardy's `sdy_opt`) prints for the same content, so
`export_stablehlo(import_stablehlo(t)) == t` for JAX's output: values are named as MLIR names
them (`%arg0`, `%0`, `%cst`, `%c_1`), attribute dictionaries are sorted, floats are printed by
MLIR's rules (`1.000000e+00`, `0.797884583`, `0xFF800000`), shardings sit where Shardy puts them
(`#sdy.sharding<...>` on function arguments/results, `#sdy.sharding_per_value<[...]>` on ops,
inline on sdy ops). `loc(...)` is printed only with `debug_info=True`.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from shardc.ir.attributes import DenseElements, Keyword, OpaqueAttr, Symbol
from shardc.ir.core import Function, Module, Operation, Value
from shardc.ir.diagnostics import Location, ShardcError
from shardc.ir.mapping import NamedMapping, axes_text
from shardc.ir.ops import OPS
from shardc.ir.types import TensorType, is_float
from shardc.stablehlo.attributes import (
    MESH_ATTRS_PREFIX,
    REDUCER_ATTRS,
    SDY_CONSTANT_MARKER,
    round_to_dtype,
)
from shardc.stablehlo.export_extra import RESULT_NAMES, extra_op_text
from shardc.stablehlo.export_regions import (
    OWN_ATTRS,
    REGION_OPS,
    RegionPrinter,
    region_only_functions,
)
from shardc.stablehlo.mlir_text import functional_type as _functional
from shardc.stablehlo.mlir_text import int_list as _ints
from shardc.stablehlo.mlir_text import tensor_text as _ty


class ExportError(ShardcError):
    """The module holds something StableHLO + sdy text cannot express."""


# ----- floats as MLIR prints them ---------------------------------------------------------------

_SEMANTICS_PRECISION = {"f16": 11, "bf16": 8, "f32": 24, "f64": 53}
_BIT_WIDTH = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def _apfloat_to_string(x: float, semantic_precision: int, format_precision: int,
                       max_padding: int, truncate_zero: bool) -> str:
    """LLVM's `APFloat::toString` for a finite value (same digits, padding and exponent)."""
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        if max_padding:
            return sign + "0"
        if truncate_zero:
            return sign + "0.0E+0"
        return sign + "0.0" + "0" * max(format_precision - 1, 0) + "e+00"
    num, den = abs(x).as_integer_ratio()
    exp = -(den.bit_length() - 1)
    sig = num
    if not format_precision:
        format_precision = 2 + semantic_precision * 59 // 196
    trailing = (sig & -sig).bit_length() - 1
    exp += trailing
    sig >>= trailing
    if exp > 0:
        sig <<= exp
        exp = 0
    elif exp < 0:
        sig *= 5 ** (-exp)
    # Drop digits the precision cannot show (truncating, as LLVM does before rounding).
    bits = sig.bit_length()
    bits_required = (format_precision * 196 + 58) // 59
    if bits > bits_required:
        tens = (bits - bits_required) * 59 // 196
        if tens:
            exp += tens
            sig //= 10**tens
    digits = str(sig)
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    buf = list(reversed(stripped))  # least significant digit first
    n = len(buf)
    if n > format_precision:
        first = n - format_precision
        if buf[first - 1] < "5":
            while first < n and buf[first] == "0":
                first += 1
            exp += first
            buf = buf[first:]
        else:
            for i in range(first, n):
                if buf[i] == "9":
                    first += 1
                else:
                    buf[i] = chr(ord(buf[i]) + 1)
                    break
            exp += first
            buf = ["1"] if first == n else buf[first:]
    n = len(buf)
    if not max_padding:
        scientific = True
    elif exp >= 0:
        scientific = exp > max_padding or n + exp > format_precision
    else:
        msd = exp + n - 1
        scientific = False if msd >= 0 else -msd > max_padding
    if scientific:
        exp += n - 1
        out = sign + buf[-1] + "."
        if n == 1 and truncate_zero:
            out += "0"
        else:
            out += "".join(reversed(buf[:-1]))
        if not truncate_zero and format_precision > n - 1:
            out += "0" * (format_precision - n + 1)
        out += "E" if truncate_zero else "e"
        out += "+" if exp >= 0 else "-"
        exp_digits = str(abs(exp))
        if not truncate_zero and len(exp_digits) < 2:
            exp_digits = "0" + exp_digits
        return out + exp_digits
    if exp >= 0:
        return sign + "".join(reversed(buf)) + "0" * exp
    whole = exp + n
    text = "".join(reversed(buf))
    if whole > 0:
        return sign + text[:whole] + "." + text[whole:]
    return sign + "0." + "0" * (-whole) + text


def float_bits(x: float, dtype: str) -> int:
    if dtype == "f64":
        return struct.unpack("<Q", struct.pack("<d", x))[0]
    if dtype == "f16":
        return struct.unpack("<H", struct.pack("<e", x))[0]
    bits32 = struct.unpack("<I", struct.pack("<f", x))[0]
    if math.isnan(x):
        bits32 = 0x7FC00000 | (bits32 & 0x80000000)
    return bits32 >> 16 if dtype == "bf16" else bits32


def format_float(x: float, dtype: str) -> str:
    """MLIR's `printFloatValue`: `1.000000e+00`, `0.797884583`, `9.99999974E-6`, `0xFF800000`."""
    precision = _SEMANTICS_PRECISION[dtype]
    if math.isfinite(x):
        text = _apfloat_to_string(x, precision, 6, 0, False)
        back = round_to_dtype(float(text), dtype)
        if back == x and math.copysign(1.0, back) == math.copysign(1.0, x):
            return text
        text = _apfloat_to_string(x, precision, 0, 3, True)
        if "." in text:
            return text
    width = _BIT_WIDTH[dtype] // 4
    return "0x" + format(float_bits(x, dtype), f"0{width}X")


def _scalar(v: Any, dtype: str) -> str:
    if dtype == "i1":
        return "true" if v else "false"
    if is_float(dtype):
        return format_float(float(v), dtype)
    return str(int(v))


def format_dense(value: DenseElements, dtype: str) -> str:
    if value.hex is not None:
        return f'dense<"{value.hex}">'
    if value.bits is not None:
        return f"dense<{value.bits}>"
    if value.is_splat:
        return f"dense<{_scalar(value.values[0], dtype)}>"
    if not value.shape:
        return "dense<>"

    def nest(values: tuple, shape: tuple[int, ...]) -> str:
        if len(shape) == 1:
            return "[" + ", ".join(_scalar(v, dtype) for v in values) + "]"
        step = len(values) // shape[0] if shape[0] else 0
        return "[" + ", ".join(
            nest(values[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0])
        ) + "]"

    return f"dense<{nest(value.values, value.shape)}>"


# ----- attributes -------------------------------------------------------------------------------


def _string(s: str) -> str:
    out = []
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\0A")
        elif ch == "\t":
            out.append("\\09")
        elif ord(ch) < 0x20:
            out.append(f"\\{ord(ch):02X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def attr_text(value: Any) -> str:
    """An attribute value in MLIR syntax (opaque imported attributes verbatim)."""
    if isinstance(value, OpaqueAttr):
        return value.text
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return f"{format_float(value, 'f64')} : f64"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Symbol):
        return f"@{value.name}"
    if isinstance(value, Keyword):
        return _string(value.word)
    if isinstance(value, tuple):
        return "[" + ", ".join(attr_text(v) for v in value) + "]"
    if isinstance(value, NamedMapping):
        return f"#sdy.sharding{value.text()}"
    raise ExportError(f"cannot export attribute value {value!r} as MLIR")


def _key(key: str) -> str:
    import re

    return key if re.fullmatch(r"[A-Za-z_][\w.$\-]*", key) else _string(key)


def attr_dict(attrs: dict[str, Any]) -> str:
    """`{a = 1 : i64, b}` with keys sorted as MLIR's DictionaryAttr keeps them ('' if empty)."""
    if not attrs:
        return ""
    parts = []
    for key in sorted(attrs):
        value = attrs[key]
        if isinstance(value, OpaqueAttr) and value.text == "unit":
            parts.append(_key(key))
        else:
            parts.append(f"{_key(key)} = {attr_text(value)}")
    return "{" + ", ".join(parts) + "}"


# ----- names --------------------------------------------------------------------------------------


class _Names:
    """MLIR's SSA naming: `%argN`, `%N` per op, `%cst`/`%c` for constants, one scope per region.

    As MLIR's `SSANameState`: a function's (or region's) own values are numbered first; each
    nested region then starts from the counters as they stand after its whole parent level, so
    sibling regions reuse numbers; a region sees its ancestors' names (for uniquing) but not its
    siblings'. A region is an outlined function here: `region()` names one use of it, with its
    block arguments named `block_names` (else `%argN`) and its captured arguments named as the
    outer values they are bound to.
    """

    def __init__(self, func: Function, parent: _Names | None = None,
                 block_names: list[str] | None = None, captured: list[Value] = (),
                 num_block_args: int | None = None):
        self.parent = parent
        self.names: dict[int, str] = {}
        self.used: set[str] = set()
        if parent is None:
            self.conflict = self.next_value = self.next_arg = 0
        else:
            self.conflict, self.next_value, self.next_arg = (
                parent.conflict, parent.next_value, parent.next_arg)
        n_block = len(func.args) - len(captured) if num_block_args is None else num_block_args
        for i, a in enumerate(func.args[:n_block]):
            if block_names is not None:
                self.names[id(a)] = self.unique(block_names[i])
            else:
                self.names[id(a)] = f"arg{self.next_arg}"
                self.next_arg += 1
        for a, outer in zip(func.args[n_block:], captured):
            self.names[id(a)] = parent(outer)[1:]
        for op in func.body:
            self.number(op)

    def region(self, func: Function, block_names: list[str] | None = None,
               captured: list[Value] = ()) -> _Names:
        return _Names(func, self, block_names, captured)

    def _taken(self, name: str) -> bool:
        scope: _Names | None = self
        while scope is not None:
            if name in scope.used:
                return True
            scope = scope.parent
        return False

    def unique(self, base: str) -> str:
        if not self._taken(base):
            self.used.add(base)
            return base
        while True:
            probe = f"{base}_{self.conflict}"
            self.conflict += 1
            if not self._taken(probe):
                self.used.add(probe)
                return probe

    def number(self, op: Operation) -> None:
        if not op.results:
            return
        if op.name in RESULT_NAMES:
            for r, base in zip(op.results, RESULT_NAMES[op.name]):
                self.names[id(r)] = self.unique(base)
            return
        if op.name == "constant" and not op.attributes.get(SDY_CONSTANT_MARKER):
            dtype = op.results[0].type.dtype
            self.names[id(op.results[0])] = self.unique("cst" if is_float(dtype) else "c")
            return
        base = str(self.next_value)
        self.next_value += 1
        if len(op.results) == 1:
            self.names[id(op.results[0])] = base
        else:
            for i, r in enumerate(op.results):
                self.names[id(r)] = f"{base}#{i}"

    def group(self, op: Operation) -> str:
        """`%0 = `, `%1:2 = ` or '' for an op with no results."""
        if not op.results:
            return ""
        if len(op.results) == 1:
            return f"%{self.names[id(op.results[0])]} = "
        if op.name in RESULT_NAMES:
            return ", ".join(f"%{self.names[id(r)]}" for r in op.results) + " = "
        return f"%{self.names[id(op.results[0])].split('#')[0]}:{len(op.results)} = "

    def __call__(self, v: Value) -> str:
        scope: _Names | None = self
        while scope is not None:
            name = scope.names.get(id(v))
            if name is not None:
                return "%" + name
            scope = scope.parent
        raise ExportError(f"value {v!r} is used before it is defined")


# ----- ops ----------------------------------------------------------------------------------------

_CHLO = {"erf", "square"}
_NO_STABLEHLO = {"reciprocal"}
_SINGLE_TYPE = {"reverse", "iota", "constant"}
_FUNCTIONAL = {"reshape", "broadcast_in_dim", "transpose", "concatenate", "dot_general",
               "reduce", "slice", "pad", "compare", "gather", "scatter", "call"}
_COLLECTIVE_AXES = {"all_gather": "gathering_axes", "all_slice": "slicing_axes",
                    "reduce_scatter": "scatter_axes"}






def _same_or_functional(op: Operation) -> str:
    types = {_ty(v.type) for v in op.operands} | {_ty(r.type) for r in op.results}
    return types.pop() if len(types) == 1 else _functional(op)




def _axis_sets(per_dim) -> str:
    return "[" + ", ".join("{" + axes_text(d) + "}" for d in per_dim) + "]"


def _mapping_of(v: Value, op: Operation) -> NamedMapping:
    mapping = v.mapping
    if mapping is None:
        raise ExportError(f"'{op.name}' result needs a sharding to print as sdy", op.loc)
    return mapping


class _Printer(RegionPrinter):
    def __init__(self, module: Module, debug_info: bool):
        self.module = module
        self.debug_info = debug_info
        self.lines: list[str] = []

    def discardable(self, op: Operation) -> dict[str, Any]:
        op_def = OPS.get(op.name)
        known = op_def.attrs if op_def is not None else {}
        own = OWN_ATTRS if op.name in REGION_OPS or op.name == "spmd.all_reduce" else ()
        out = {k: v for k, v in op.attributes.items()
               if k not in known and k not in (SDY_CONSTANT_MARKER, REDUCER_ATTRS)
               and k not in own}
        return out

    def op_attrs(
        self, op: Operation, with_sharding: bool = True, extra: dict[str, Any] | None = None
    ) -> str:
        attrs = self.discardable(op)
        attrs.update(extra or {})
        if with_sharding and op.results and any(r.mapping is not None for r in op.results):
            mesh = next(r.mapping.mesh.name for r in op.results if r.mapping is not None)
            texts = []
            for r in op.results:
                m = r.mapping
                texts.append(m.text() if m is not None else
                             f"<@{mesh}, [" + ", ".join("{?}" for _ in r.type.shape) + "]>")
            attrs["sdy.sharding"] = OpaqueAttr(
                "#sdy.sharding_per_value<[" + ", ".join(texts) + "]>"
            )
        text = attr_dict(attrs)
        return " " + text if text else ""

    def loc(self, loc: Location | None, written: bool) -> str:
        if not self.debug_info or not written or loc is None:
            return ""
        return f' loc({_string(loc.file)}:{loc.line}:{loc.col})'

    # ----- one op ----------------------------------------------------------------------------

    def op_text(self, op: Operation, n: _Names, indent: str) -> list[str]:
        name = op.name
        region = self.region_text(op, n, indent)
        if region is not None:
            return region
        head = n.group(op)
        args = ", ".join(n(v) for v in op.operands)
        a = self.op_attrs
        if name in ("all_gather", "all_slice", "reduce_scatter", "all_to_all", "all_reduce",
                    "collective_permute"):
            return [indent + head + self.collective(op, n) + self.loc(op.loc, op.loc_written)]
        if name == "return":
            types = ", ".join(_ty(v.type) for v in op.operands)
            text = "return" + (f" {args}" if args else "") + a(op, False)
            text += f" : {types}" if types else ""
        elif name == "call":
            callee = op.attributes["callee"].name
            # func's ops drop their dialect prefix only directly inside a func.func.
            prefix = "func." if n.parent is not None else ""
            text = f"{prefix}call @{callee}({args}){a(op)} : {_functional(op)}"
        elif name == "constant":
            dialect = "sdy" if op.attributes.get(SDY_CONSTANT_MARKER) else "stablehlo"
            r = op.results[0]
            dense = format_dense(op.attributes["value"], r.type.dtype)
            text = f"{dialect}.constant{a(op)} {dense} : {_ty(r.type)}"
        elif name == "iota":
            text = (f"stablehlo.iota dim = {op.attributes['iota_dimension']}{a(op)} : "
                    f"{_ty(op.results[0].type)}")
        elif name in ("broadcast_in_dim", "transpose", "reverse"):
            key = {"broadcast_in_dim": "broadcast_dimensions", "transpose": "permutation",
                   "reverse": "dimensions"}[name]
            sig = _ty(op.results[0].type) if name == "reverse" else _functional(op)
            text = f"stablehlo.{name} {args}, dims = {_ints(op.attributes[key])}{a(op)} : {sig}"
        elif name == "concatenate":
            text = (f"stablehlo.concatenate {args}, dim = {op.attributes['dimension']}{a(op)} : "
                    f"{_functional(op)}")
        elif name == "dot_general":
            text = f"stablehlo.dot_general {args}, " + self.dot_dims(op) + f"{a(op)} : "
            text += _functional(op)
        elif name == "reduce":
            kind = op.attributes["kind"].word
            dims = _ints(op.attributes["dimensions"])
            src, init = (n(v) for v in op.operands)
            text = (f"stablehlo.reduce({src} init: {init}) applies stablehlo.{kind} across "
                    f"dimensions = {dims}{a(op)} : {_functional(op)}")
        elif name == "compare":
            direction = op.attributes["comparison_direction"].word
            ctype = op.attributes.get("compare_type")
            tail = f", {ctype.word}" if ctype is not None else ""
            text = f"stablehlo.compare {direction}, {args}{tail}{a(op)} : {_functional(op)}"
        elif name == "slice":
            text = f"stablehlo.slice {args} {self.slice_ranges(op)}{a(op)} : {_functional(op)}"
        elif name == "pad":
            at = op.attributes
            interior = at.get("interior_padding") or (0,) * op.operands[0].type.rank
            text = (f"stablehlo.pad {args}, low = {_ints(at['edge_padding_low'])}, high = "
                    f"{_ints(at['edge_padding_high'])}, interior = {_ints(interior)}{a(op)} : "
                    f"{_functional(op)}")
        elif name == "gather":
            text = f'"stablehlo.gather"({args}) <{{{self.gather_props(op)}}}>{a(op)} : '
            text += _functional(op)
        elif name == "scatter":
            return self.scatter(op, n, indent, args)
        elif name in ("sharding_constraint", "reshard"):
            mapping = _mapping_of(op.results[0], op)
            text = (f"sdy.{name} {args} {mapping.text()}{a(op, False)} : "
                    f"{_ty(op.results[0].type)}")
        elif name == "sharding_group":
            text = (f"sdy.sharding_group {args} group_id={op.attributes['group_id']}"
                    f"{a(op, False)} : {_ty(op.operands[0].type)}")
        elif name == "propagation_barrier":
            direction = op.attributes["allowed_direction"].word
            text = (f"sdy.propagation_barrier {args} allowed_direction={direction}{a(op)} : "
                    f"{_ty(op.results[0].type)}")
        elif name in _CHLO:
            text = (f"chlo.{name} {args}{a(op)} : {_ty(op.operands[0].type)} -> "
                    f"{_ty(op.results[0].type)}")
        elif name == "select":
            t = {_ty(op.operands[1].type), _ty(op.operands[2].type), _ty(op.results[0].type)}
            sig = (f"{_ty(op.operands[0].type)}, {t.pop()}" if len(t) == 1 else _functional(op))
            text = f"stablehlo.select {args}{a(op)} : {sig}"
        elif (lines := extra_op_text(self, op, n, indent, args)) is not None:
            return lines
        elif name in OPS and name not in _NO_STABLEHLO:
            sig = _functional(op) if name in _FUNCTIONAL else _same_or_functional(op)
            text = f"stablehlo.{name} {args}{a(op)} : {sig}"
        else:
            raise ExportError(f"'{name}' has no StableHLO equivalent to export", op.loc)
        return [indent + head + text + self.loc(op.loc, op.loc_written)]

    def dot_dims(self, op: Operation) -> str:
        at = op.attributes
        parts = []
        lb, rb = at.get("lhs_batching_dims", ()), at.get("rhs_batching_dims", ())
        if lb or rb:
            parts.append(f"batching_dims = {_ints(lb)} x {_ints(rb)}")
        lc, rc = at.get("lhs_contracting_dims", ()), at.get("rhs_contracting_dims", ())
        parts.append(f"contracting_dims = {_ints(lc)} x {_ints(rc)}")
        precision = at.get("precision")
        if precision is not None:
            words = precision if isinstance(precision, tuple) else ()
            parts.append("precision = [" + ", ".join(str(w) for w in words) + "]")
        return ", ".join(parts)

    def slice_ranges(self, op: Operation) -> str:
        at = op.attributes
        starts, limits = at["start_indices"], at["limit_indices"]
        strides = at.get("strides") or (1,) * len(starts)
        ranges = [f"{s}:{e}" + (f":{k}" if k != 1 else "")
                  for s, e, k in zip(starts, limits, strides)]
        return "[" + ", ".join(ranges) + "]"

    def gather_props(self, op: Operation) -> str:
        at = op.attributes
        fields = []
        for key in ("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                    "start_indices_batching_dims", "start_index_map"):
            if at.get(key):
                fields.append(f"{key} = {_ints(at[key])}")
        fields.append(f"index_vector_dim = {at['index_vector_dim']}")
        sizes = ", ".join(str(s) for s in at["slice_sizes"])
        sorted_ = "true" if at.get("indices_are_sorted", False) else "false"
        return (f"dimension_numbers = #stablehlo.gather<{', '.join(fields)}>, "
                f"indices_are_sorted = {sorted_}, slice_sizes = array<i64: {sizes}>")

    def scatter(self, op: Operation, n: _Names, indent: str, args: str) -> list[str]:
        at = op.attributes
        fields = []
        for key in ("update_window_dims", "inserted_window_dims", "input_batching_dims",
                    "scatter_indices_batching_dims", "scatter_dims_to_operand_dims"):
            if at.get(key):
                fields.append(f"{key} = {_ints(at[key])}")
        fields.append(f"index_vector_dim = {at['index_vector_dim']}")
        sorted_ = "true" if at.get("indices_are_sorted", False) else "false"
        unique = "true" if at.get("unique_indices", False) else "false"
        props = (f"indices_are_sorted = {sorted_}, scatter_dimension_numbers = "
                 f"#stablehlo.scatter<{', '.join(fields)}>, unique_indices = {unique}")
        scalar = _ty(TensorType((), op.results[0].type.dtype))
        a0, a1 = f"%arg{n.next_arg}", f"%arg{n.next_arg + 1}"
        lines = [f"{indent}{n.group(op)}\"stablehlo.scatter\"({args}) <{{{props}}}> ({{",
                 f"{indent}^bb0({a0}: {scalar}, {a1}: {scalar}):"]
        kind = at["kind"].word
        if kind == "replace":
            lines.append(f"{indent}  stablehlo.return {a1} : {scalar}")
        else:
            inner = f"%{n.next_value}"
            lines.append(f"{indent}  {inner} = stablehlo.{kind} {a0}, {a1} : {scalar}")
            lines.append(f"{indent}  stablehlo.return {inner} : {scalar}")
        lines.append(f"{indent}}}){self.op_attrs(op)} : {_functional(op)}"
                     + self.loc(op.loc, op.loc_written))
        return lines

    def collective(self, op: Operation, n: _Names) -> str:
        name = op.name
        at = op.attributes
        value = n(op.operands[0])
        if name in _COLLECTIVE_AXES:
            head = f"sdy.{name} {_axis_sets(at[_COLLECTIVE_AXES[name]])} {value}"
        elif name == "all_to_all":
            axes = "{" + axes_text(at["axes"]) + "}"
            head = f"sdy.all_to_all [{axes}: {at['src_dim']}->{at['tgt_dim']}] {value}"
        elif name == "all_reduce":
            head = f"sdy.all_reduce {{{axes_text(at['reduction_axes'])}}} {value}"
        else:
            head = f"sdy.collective_permute {value}"
        mapping = _mapping_of(op.results[0], op)
        return (f"{head} out_sharding={mapping.text()}{self.op_attrs(op, False)} : "
                f"{_ty(op.results[0].type)}")

    # ----- functions and module ----------------------------------------------------------------

    def function(self, func: Function) -> None:
        n = _Names(func)
        args = []
        for i, (v, attrs) in enumerate(zip(func.args, func.arg_attrs)):
            all_attrs = dict(attrs)
            if v.mapping is not None:
                all_attrs["sdy.sharding"] = OpaqueAttr(f"#sdy.sharding{v.mapping.text()}")
            text = f"%arg{i}: {_ty(v.type)}"
            if all_attrs:
                text += " " + attr_dict(all_attrs)
            args.append(text)
        results = []
        any_attrs = False
        for t, attrs in zip(func.result_types, func.res_attrs):
            all_attrs = dict(attrs)
            mapping = getattr(t, "mapping", None)
            if mapping is not None:
                all_attrs["sdy.sharding"] = OpaqueAttr(f"#sdy.sharding{mapping.text()}")
            any_attrs = any_attrs or bool(all_attrs)
            results.append(_ty(t) + (" " + attr_dict(all_attrs) if all_attrs else ""))
        visibility = f"{func.visibility} " if func.visibility_written else ""
        header = f"  func.func {visibility}@{func.name}({', '.join(args)})"
        if len(results) == 1 and not any_attrs:
            header += f" -> {results[0]}"
        elif results:
            header += " -> (" + ", ".join(results) + ")"
        if func.attributes:
            header += " attributes " + attr_dict(func.attributes)
        self.lines.append(header + " {")
        for op in func.body:
            self.lines.extend(self.op_text(op, n, "    "))
        self.lines.append("  }" + self.loc(func.loc, func.loc_written))

    def print(self) -> str:
        module = self.module
        name = module.attributes.get("sym_name")
        attrs = {k: v for k, v in module.attributes.items()
                 if k != "sym_name" and not k.startswith(MESH_ATTRS_PREFIX)}
        header = "module" + (f" @{name}" if name else "")
        if attrs:
            header += " attributes " + attr_dict(attrs)
        self.lines.append(header + " {")
        for mesh in module.meshes.values():
            line = f"  sdy.mesh @{mesh.name} = {mesh.text()}"
            extra = module.attributes.get(MESH_ATTRS_PREFIX + mesh.name)
            if isinstance(extra, OpaqueAttr):
                line += " " + extra.text
            self.lines.append(line)
        inlined = region_only_functions(module)
        for func in module.functions.values():
            if func.name not in inlined:
                self.function(func)
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"


def export_stablehlo(module: Module, *, debug_info: bool = False) -> str:
    """The StableHLO + sdy MLIR text of `module`, as MLIR/Shardy print it (ends with a newline).

    `debug_info=True` writes each op's written location as `loc("file":line:col)`.
    Raises `ExportError` for an op with no StableHLO equivalent (e.g. `custom_call`).
    """
    return _Printer(module, debug_info).print()


__all__ = ["ExportError", "export_stablehlo", "format_dense", "format_float"]
