"""StableHLO / chlo / sdy op records -> native ops: which op names import, and how each converts.

    stablehlo.dot_general %a, %b, contracting_dims = [1] x [0]
        -> ("dot_general", {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}, ...)

`CONVERTERS` maps a record's syntactic form (`OpRec.form`) to a converter
`(FunctionBuilder, OpRec, operands) -> (native name, attrs, result type tokens, result mappings)`;
`_generic` handles the generic form `"stablehlo.x"(...) <{props}> ...` of every op. The reader
consults `SUPPORTED_OPS` so an op shardc cannot represent fails at its name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import Keyword, Symbol
from shardc.ir.core import Value
from shardc.ir.diagnostics import ShardcError
from shardc.ir.mesh import AxisRef
from shardc.stablehlo.attributes import (
    SDY_CONSTANT_MARKER,
    dialect_fields,
    enum_word,
    parse_dense,
    props_ints,
    tensor_type_text,
    unescape,
)
from shardc.stablehlo.ops_extra import (
    CONVERTERS_EXTRA,
    GENERIC_ONLY_PRETTY,
    SUPPORTED,
    generic_extra,
)
from shardc.stablehlo.records import AttrRec, OpRec
from shardc.stablehlo.regions import (
    REGION_OPS,
    convert_manual,
    convert_reduce_body,
    convert_while,
    generic_region_op,
)

if TYPE_CHECKING:
    from shardc.stablehlo.importer import FunctionBuilder

UNARY = {
    "abs", "cbrt", "ceil", "convert", "cosine", "exponential", "exponential_minus_one", "floor",
    "is_finite", "log", "log_plus_one", "logistic", "negate", "not", "reshape",
    "round_nearest_afz", "round_nearest_even", "rsqrt", "sign", "sine", "sqrt", "tan", "tanh",
}
BINARY = {
    "add", "and", "atan2", "divide", "maximum", "minimum", "multiply", "or", "power",
    "remainder", "subtract", "xor", "shift_left", "shift_right_arithmetic", "shift_right_logical",
}
CHLO = {"erf", "square", "tan"}
REDUCER_KINDS = {"add", "maximum", "minimum", "multiply", "and", "or"}

# Element-wise ops: the native op is the name after the dialect prefix, in either form.
_GENERIC_SIMPLE = (
    {f"stablehlo.{n}" for n in UNARY | BINARY | {"select", "clamp"}}
    | {f"chlo.{n}" for n in CHLO}
)
# Op names the importer maps to a native op (pretty and generic forms).
SUPPORTED_OPS: frozenset[str] = frozenset(
    _GENERIC_SIMPLE
    | {f"stablehlo.{n}" for n in (
        "constant", "iota", "broadcast_in_dim", "transpose", "reverse", "concatenate",
        "dot_general", "reduce", "compare", "slice", "pad", "gather", "scatter", "return",
    )}
    | REGION_OPS | {"sdy.manual_computation"}
    | {"func.call", "call", "func.return", "return", "sdy.return", "sdy.constant", "sdy.mesh",
       "sdy.sharding_constraint", "sdy.reshard", "sdy.sharding_group", "sdy.propagation_barrier",
       "sdy.all_gather", "sdy.all_slice", "sdy.all_to_all", "sdy.collective_permute",
       "sdy.all_reduce", "sdy.reduce_scatter", "func.func"}
    | SUPPORTED
)
# Supported ops that import only in their pretty form: their generic spelling is rejected.
GENERIC_NOT_SUPPORTED = {"sdy.all_gather", "sdy.all_slice", "sdy.all_to_all",
                         "sdy.collective_permute", "sdy.all_reduce", "sdy.reduce_scatter",
                         "sdy.sharding_group", "sdy.propagation_barrier", "sdy.mesh",
                         "func.func", "sdy.return", "sdy.manual_computation"
                         } | GENERIC_ONLY_PRETTY

_WHY_UNSUPPORTED = {
    "stablehlo.if": "stablehlo.if does not import (JAX emits stablehlo.case)",
    "sdy.named_computation": "named computations have regions",
}



def unsupported_message(name: str) -> str:
    why = _WHY_UNSUPPORTED.get(name, "shardc's IR has no equivalent")
    return (
        f"unsupported op '{name}': {why}; see docs/interop.md for the ops that import "
        "(rewrite or remove it before importing)"
    )


# ----- converters: record -> (native name, attrs, result type tokens, result mappings) ----------


def _simple(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    dialect, _, short = rec.name.partition(".")
    if rec.sig is not None and rec.sig[0] == "plain" and rec.sig[2]:
        toks = rec.sig[2]
        if short == "optimization_barrier":
            if len(toks) != len(operands):
                raise ValueError(f"lists {len(toks)} types for {len(operands)} operands")
            for i, (tok, v) in enumerate(zip(toks, operands)):
                fb.check_type(tok, v, i)
            return short, {}, list(toks), None
        if short == "select" and len(toks) == 2 and len(operands) == 3:
            fb.check_type(toks[0], operands[0], 0)
            fb.check_type(toks[1], operands[1], 1)
            fb.check_type(toks[1], operands[2], 2)
        elif len(toks) == 1:
            for i, v in enumerate(operands):
                fb.check_type(toks[0], v, i)
    return short, {}, fb.results_of(rec, operands), None


def _constant(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    ty = rec.sig[2][0]
    parsed = tensor_type_text(str(ty))
    if isinstance(parsed, str):
        raise fb.b.fail(parsed, ty)
    try:
        value = parse_dense(str(rec.extra["dense"]), parsed[1])
    except (ValueError, IndexError, OverflowError):
        raise fb.b.fail(f"malformed dense literal for {ty}", rec.extra["dense"]) from None
    attrs: dict[str, Any] = {"value": value}
    if rec.name == "sdy.constant":
        attrs[SDY_CONSTANT_MARKER] = True
    return "constant", attrs, [ty], None


def _iota(fb, rec, operands):
    return "iota", {"iota_dimension": rec.extra["dim"]}, fb.results_of(rec, operands), None


_DIMS_ATTR = {
    "stablehlo.broadcast_in_dim": ("broadcast_in_dim", "broadcast_dimensions"),
    "stablehlo.transpose": ("transpose", "permutation"),
    "stablehlo.reverse": ("reverse", "dimensions"),
}


def _dims(fb, rec, operands):
    name, key = _DIMS_ATTR[rec.name]
    return name, {key: rec.extra["dims"]}, fb.results_of(rec, operands), None


def _concatenate(fb, rec, operands):
    return "concatenate", {"dimension": rec.extra["dim"]}, fb.results_of(rec, operands), None


def _dot_general(fb, rec, operands):
    (lb, rb), (lc, rc) = rec.extra["batching"], rec.extra["contracting"]
    attrs: dict[str, Any] = {}
    if lb or rb:
        attrs["lhs_batching_dims"], attrs["rhs_batching_dims"] = lb, rb
    attrs["lhs_contracting_dims"], attrs["rhs_contracting_dims"] = lc, rc
    if "precision" in rec.extra:
        attrs["precision"] = tuple(Keyword(w) for w in rec.extra["precision"])
    return "dot_general", attrs, fb.results_of(rec, operands), None


def _reduce(fb, rec, operands):
    applies = rec.extra["applies"]
    if applies is None and not _single_op_region(fb, rec):
        return convert_reduce_body(fb, rec, operands, rec.extra["dims"])
    applies = rec.extra["applies"]
    if applies is not None:
        kind = str(applies).partition(".")[2]
        if kind not in REDUCER_KINDS or not str(applies).startswith("stablehlo."):
            raise ValueError(f"reducer '{applies}' is not one of {sorted(REDUCER_KINDS)}")
    else:
        kind = fb.region_kind(rec, rec.regions[0], allow_replace=False)
    attrs = {"dimensions": rec.extra["dims"], "kind": Keyword(kind)}
    return "reduce", attrs, fb.results_of(rec, operands), None


def _single_op_region(fb, rec) -> bool:
    """Whether `rec` has one input and its region is one binary op (a `kind` reduce)."""
    if len(rec.operands) != 2 or len(rec.regions) != 1:
        return False
    try:
        fb.region_kind(rec, rec.regions[0], allow_replace=False)
    except ValueError:
        return False
    return True



def _compare(fb, rec, operands):
    attrs: dict[str, Any] = {"comparison_direction": Keyword(str(rec.extra["direction"]))}
    if rec.extra["type"] is not None:
        attrs["compare_type"] = Keyword(str(rec.extra["type"]))
    return "compare", attrs, fb.results_of(rec, operands), None


def _slice(fb, rec, operands):
    ranges = rec.extra["ranges"]
    attrs = {
        "start_indices": tuple(r[0] for r in ranges),
        "limit_indices": tuple(r[1] for r in ranges),
        "strides": tuple(r[2] for r in ranges),
    }
    return "slice", attrs, fb.results_of(rec, operands), None


def _pad(fb, rec, operands):
    attrs = {
        "edge_padding_low": rec.extra["low"],
        "edge_padding_high": rec.extra["high"],
        "interior_padding": rec.extra["interior"],
    }
    return "pad", attrs, fb.results_of(rec, operands), None


def _call(fb, rec, operands):
    callee = str(rec.extra["callee"])[1:]
    if callee.startswith('"'):
        callee = unescape(callee)
    return "call", {"callee": Symbol(callee)}, fb.results_of(rec, operands), None


def _return(fb, rec, operands):
    if rec.sig is not None:
        toks = rec.sig[2]
        if len(toks) != len(operands):
            raise ValueError(f"returns {len(operands)} values but lists {len(toks)} types")
        for i, (tok, v) in enumerate(zip(toks, operands)):
            fb.check_type(tok, v, i)
    elif operands:
        raise ValueError("return needs the types of its operands: `return %0 : tensor<...>`")
    return "return", {}, [], None


def _sdy_sharding(fb, rec, operands):
    mapping = fb.b.mapping(str(rec.extra["sharding"]), rec.extra["sharding"])
    name = rec.name.partition(".")[2]
    return name, {}, fb.results_of(rec, operands), [mapping]


def _sdy_group(fb, rec, operands):
    return "sharding_group", {"group_id": rec.extra["group_id"]}, [], None


def _sdy_barrier(fb, rec, operands):
    direction = str(rec.extra["direction"])
    attrs = {"allowed_direction": Keyword(direction)}
    return "propagation_barrier", attrs, fb.results_of(rec, operands), None


def _axes(items: tuple) -> tuple[AxisRef, ...]:
    out = []
    for a in items:
        out.append(a if isinstance(a, AxisRef) else AxisRef(a[0], a[1], a[2]))
    return tuple(out)


def _sdy_collective(fb, rec, operands):
    short = rec.name.partition(".")[2]
    try:
        extra = rec.extra
        if short in ("all_gather", "all_slice", "reduce_scatter"):
            key = {"all_gather": "gathering_axes", "all_slice": "slicing_axes",
                   "reduce_scatter": "scatter_axes"}[short]
            attrs: dict[str, Any] = {key: tuple(_axes(d) for d in extra["per_dim"])}
        elif short == "all_to_all":
            params = extra["params"]
            if len(params) != 1:
                raise ValueError(
                    f"all_to_all with {len(params)} parameters does not import; shardc's "
                    "all_to_all moves one axis list between two dims (split it into several)"
                )
            axes, src, tgt = params[0]
            attrs = {"axes": _axes(axes), "src_dim": src, "tgt_dim": tgt}
        elif short == "all_reduce":
            attrs = {"reduction_axes": _axes(extra["axes"])}
        else:
            attrs = {}
    except ShardcError as e:
        raise fb.b.fail(e.message, rec.tok, type(e)) from None
    mapping = fb.b.mapping(str(extra["sharding"]), extra["sharding"])
    return short, attrs, fb.results_of(rec, operands), [mapping]


def _generic(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    """The generic form `"stablehlo.x"(...) <{props}> ({regions}) : (...) -> ...`."""
    name = rec.name
    props: dict[str, AttrRec | None] = rec.extra["props"].entries if rec.extra["props"] else {}
    results = fb.results_of(rec, operands)
    short = name.partition(".")[2] if "." in name else name

    def need(key: str) -> AttrRec:
        value = props.get(key)
        if value is None:
            raise ValueError(f"needs property '{key}'")
        return value

    if name in _GENERIC_SIMPLE:
        return short, {}, results, None
    if name in ("func.call", "call"):
        return "call", {"callee": Symbol(need("callee").value)}, results, None
    if name in ("func.return", "return", "stablehlo.return"):
        return "return", {}, [], None
    if name == "stablehlo.constant":
        dense = need("value")
        if dense.kind != "dense" or not results:
            raise ValueError("property 'value' must be a dense<...> literal")
        parsed = tensor_type_text(str(results[0]))
        if isinstance(parsed, str):
            raise ValueError(parsed)
        return "constant", {"value": parse_dense(str(dense.value[0]), parsed[1])}, results, None
    if name == "stablehlo.iota":
        return "iota", {"iota_dimension": need("iota_dimension").value}, results, None
    if name in _DIMS_ATTR:
        native, key = _DIMS_ATTR[name]
        return native, {key: props_ints(need(key))}, results, None
    if name == "stablehlo.concatenate":
        return "concatenate", {"dimension": need("dimension").value}, results, None
    if name == "stablehlo.dot_general":
        dims = dialect_fields(need("dot_dimension_numbers").value)
        attrs: dict[str, Any] = {}
        if dims.get("lhs_batching_dimensions") or dims.get("rhs_batching_dimensions"):
            attrs["lhs_batching_dims"] = dims.get("lhs_batching_dimensions", ())
            attrs["rhs_batching_dims"] = dims.get("rhs_batching_dimensions", ())
        attrs["lhs_contracting_dims"] = dims.get("lhs_contracting_dimensions", ())
        attrs["rhs_contracting_dims"] = dims.get("rhs_contracting_dimensions", ())
        if props.get("precision_config") is not None:
            words = [enum_word(a) for a in props["precision_config"].value]
            attrs["precision"] = tuple(Keyword(w) for w in words)
        return "dot_general", attrs, results, None
    if name == "stablehlo.compare":
        attrs = {"comparison_direction": Keyword(enum_word(need("comparison_direction")))}
        if props.get("compare_type") is not None:
            attrs["compare_type"] = Keyword(enum_word(props["compare_type"]))
        return "compare", attrs, results, None
    if name == "stablehlo.slice":
        attrs = {k: props_ints(need(k)) for k in ("start_indices", "limit_indices", "strides")}
        return "slice", attrs, results, None
    if name == "stablehlo.pad":
        keys = ("edge_padding_low", "edge_padding_high", "interior_padding")
        return "pad", {k: props_ints(need(k)) for k in keys}, results, None
    if name in REGION_OPS:
        return generic_region_op(fb, rec, operands, props)
    if name == "stablehlo.reduce":
        if not _single_op_region(fb, rec):
            return convert_reduce_body(fb, rec, operands, props_ints(need("dimensions")))
        kind = fb.region_kind(rec, rec.regions[0], allow_replace=False)
        attrs = {"dimensions": props_ints(need("dimensions")), "kind": Keyword(kind)}
        return "reduce", attrs, results, None
    if name == "stablehlo.gather":
        attrs = _dimension_numbers(need("dimension_numbers").value, _GATHER_DIMS)
        attrs["slice_sizes"] = props_ints(need("slice_sizes"))
        if props.get("indices_are_sorted") is not None:
            attrs["indices_are_sorted"] = props["indices_are_sorted"].value
        return "gather", attrs, results, None
    if name == "stablehlo.scatter":
        if len(operands) != 3 or len(rec.regions) != 1:
            raise ValueError("variadic scatter (several operands) does not import")
        attrs = _dimension_numbers(need("scatter_dimension_numbers").value, _SCATTER_DIMS)
        attrs["kind"] = Keyword(fb.region_kind(rec, rec.regions[0], allow_replace=True))
        for key in ("indices_are_sorted", "unique_indices"):
            if props.get(key) is not None:
                attrs[key] = props[key].value
        return "scatter", attrs, results, None
    if name in ("sdy.sharding_constraint", "sdy.reshard", "sdy.constant"):
        if name == "sdy.constant":
            return _generic(fb, _renamed(rec, "stablehlo.constant"), operands)[:3] + (None,)
        sharding = need("sharding")
        mapping = fb.b.mapping(sharding.value, rec.tok)
        return short, {}, results, [mapping]
    extra = generic_extra(fb, rec, operands, results)
    if extra is not None:
        return extra
    raise ValueError("the generic form of this op does not import; use its pretty form")


_GATHER_DIMS = ("offset_dims", "collapsed_slice_dims", "operand_batching_dims",
                "start_indices_batching_dims", "start_index_map", "index_vector_dim")
_SCATTER_DIMS = ("update_window_dims", "inserted_window_dims", "input_batching_dims",
                 "scatter_indices_batching_dims", "scatter_dims_to_operand_dims",
                 "index_vector_dim")


def _dimension_numbers(text: str, keys: tuple[str, ...]) -> dict[str, Any]:
    """`#stablehlo.gather<offset_dims = [1], ...>` -> {key: ints}, `()` (or 0 for
    `index_vector_dim`) for a key the text leaves out."""
    fields = dialect_fields(text)
    return {k: fields.get(k, 0 if k == "index_vector_dim" else ()) for k in keys}


def _renamed(rec: OpRec, name: str) -> OpRec:
    out = OpRec(rec.form, rec.tok, rec.operands, rec.extra, rec.attrs, rec.sig, name=name)
    out.regions = rec.regions
    return out


CONVERTERS = {
    "simple": _simple, "constant": _constant, "iota": _iota, "dims": _dims,
    "concatenate": _concatenate, "dot_general": _dot_general, "reduce": _reduce,
    "compare": _compare, "slice": _slice, "pad": _pad, "call": _call, "return": _return,
    "generic": _generic, "sdy_sharding": _sdy_sharding, "sdy_group": _sdy_group,
    "sdy_barrier": _sdy_barrier, "sdy_collective": _sdy_collective,
    "while": convert_while, "manual": convert_manual, **CONVERTERS_EXTRA,
}
