"""Ops with regions -> native ops that name outlined private functions (XLA's computations).

    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<8xf32>
      cond { ... stablehlo.return %p : tensor<i1> } do { ... stablehlo.return %i, %x : ... }
        -> %0, %1 = while %c, %arg0 {body = @main_while_body, cond = @main_while_cond} : ...

Each region becomes a private function whose arguments are the region's block arguments and
then the values the region reads from the enclosing scope ("captures", in order of first use);
the op gets the captures as trailing operands. `while` passes the union of its two regions'
captures to both (`captures = N`), `case` the union over its branches to every branch.
`sdy.manual_computation` is isolated from above, and the scalar bodies of `sort`/`reduce` in
JAX's text never capture; a capture there is an error. The exporter inlines the functions back
(exporter.py), so import -> export gives JAX's text again. See docs/interop.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from shardc.ir.attributes import Keyword, OpaqueAttr, Symbol
from shardc.ir.core import Function, Value
from shardc.ir.mesh import AxisRef
from shardc.ir.types import DistributedTensorType
from shardc.stablehlo.attributes import props_ints
from shardc.stablehlo.records import AttrRec, OpRec, RegionRec

if TYPE_CHECKING:
    from shardc.stablehlo.importer import FunctionBuilder

# Generic-form op names handled here (the pretty `stablehlo.while` and `sdy.manual_computation`
# have their own record forms).
REGION_OPS = frozenset({
    "stablehlo.while", "stablehlo.case", "stablehlo.sort", "stablehlo.all_reduce",
})


def _base(tok) -> str:
    return str(tok)[1:].partition("#")[0]


def free_names(region: RegionRec) -> list[str]:
    """Values `region` (and regions nested in it) reads but does not define, in first-use order:
    `name` or `name#i` (a result of a multi-result op)."""
    defined = {_base(t) for t, _ in region.args}
    out: list[str] = []
    for op in region.ops:
        used = [str(t)[1:] for t in op.operands]
        for nested in op.regions:
            used.extend(free_names(nested))
        for name in used:
            if name.partition("#")[0] not in defined and name not in out:
                out.append(name)
        for tok, _ in op.results:
            defined.add(_base(tok))
    return out


def _union(regions: list[RegionRec]) -> list[str]:
    out: list[str] = []
    for r in regions:
        for name in free_names(r):
            if name not in out:
                out.append(name)
    return out


def outline(
    fb: FunctionBuilder, region: RegionRec, suffix: str, captures: list[str] = (),
    arg_order: list[int] | None = None,
) -> Function:
    """A new private function holding `region`'s ops: args = block args, then `captures`."""
    from shardc.stablehlo.importer import FunctionBuilder

    b = fb.b
    module = b.module
    base = f"{fb.func.name}_{suffix}"
    name, n = base, 0
    while module.lookup_function(name) is not None:
        n += 1
        name = f"{base}_{n}"
    block_args = list(region.args)
    captured = [fb.scope_value(c, region) for c in captures]
    terminator = region.ops[-1] if region.ops else None
    if terminator is None or not terminator.name.endswith("return"):
        raise b.fail("a region must end with a return", fb.tok or region_tok(region, fb))
    res_toks = terminator.sig[2] if terminator.sig is not None else []
    if len(res_toks) != len(terminator.operands):
        raise b.fail("the region's return must list the types of its operands", terminator.tok)
    func = Function(
        name,
        [b.tensor(ty) for _, ty in block_args]
        + [DistributedTensorType(v.type.shape, v.type.dtype) for v in captured],
        [b.tensor(t) for t in res_toks],
        visibility="private",
        loc=b.where(terminator.tok),
        arg_names=[str(t)[1:] for t, _ in block_args]
        + [None if "#" in c else c for c in captures],
    )
    module.add_function(func)
    child = FunctionBuilder(b, func)
    child.manual_mesh = fb.manual_mesh
    for (tok, _), value in zip(block_args, func.args):
        child.define(_base(tok), value, tok)
    for cap, value in zip(captures, func.args[len(block_args):]):
        child.capture(cap, value, fb.scope.get(cap.partition("#")[0]))
    for rec in region.ops:
        child.add(rec)
    return func


def region_tok(region: RegionRec, fb: FunctionBuilder):
    if region.args:
        return region.args[0][0]
    return region.ops[0].tok if region.ops else None


def _no_captures(fb: FunctionBuilder, rec: OpRec, region: RegionRec, what: str) -> None:
    free = free_names(region)
    if free:
        raise ValueError(f"its {what} reads %{free[0]} from the enclosing scope; shardc "
                         f"imports a {what} only when it uses its own arguments")


# ----- converters ------------------------------------------------------------------------------


def convert_while(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    cond_region, body_region = rec.regions
    captures = _union([cond_region, body_region])
    cond = outline(fb, cond_region, "while_cond", captures)
    body = outline(fb, body_region, "while_body", captures)
    operands.extend(fb.scope_value(c, cond_region) for c in captures)
    attrs: dict[str, Any] = {"body": Symbol(body.name), "cond": Symbol(cond.name)}
    if captures:
        attrs["captures"] = len(captures)
    results = list(rec.sig[2]) if rec.sig is not None else []
    if rec.form == "generic":
        results = fb.results_of(rec, operands[: len(operands) - len(captures)])
    return "while", attrs, results, None


def convert_case(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    if len(operands) != 1:
        raise ValueError("takes exactly one operand, the branch index")
    results = fb.results_of(rec, operands)
    captures = _union(rec.regions)
    branches = [outline(fb, r, f"case_{i}", captures) for i, r in enumerate(rec.regions)]
    operands.extend(fb.scope_value(c, rec.regions[0]) for c in captures)
    return "case", {"branches": tuple(Symbol(f.name) for f in branches)}, results, None


def convert_sort(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props):
    (region,) = rec.regions
    _no_captures(fb, rec, region, "comparator")
    results = fb.results_of(rec, operands)
    cmp = outline(fb, region, "sort_comparator")
    attrs: dict[str, Any] = {"comparator": Symbol(cmp.name)}
    if props.get("dimension") is not None:
        attrs["dimension"] = props["dimension"].value
    if props.get("is_stable") is not None:
        attrs["is_stable"] = props["is_stable"].value
    return "sort", attrs, results, None


def convert_reduce_body(fb: FunctionBuilder, rec: OpRec, operands: list[Value], dims):
    """A reduce whose region is not one binary op (argmax's compare/select body)."""
    (region,) = rec.regions
    _no_captures(fb, rec, region, "reducer")
    results = fb.results_of(rec, operands)
    body = outline(fb, region, "reduce_body")
    return "reduce", {"body": Symbol(body.name), "dimensions": dims}, results, None


def convert_manual(fb: FunctionBuilder, rec: OpRec, operands: list[Value]):
    b = fb.b
    (region,) = rec.regions
    free = free_names(region)
    if free:
        raise ValueError(f"its body reads %{free[0]} from the enclosing scope; a "
                         "manual_computation's body may only use its own arguments")
    results = fb.results_of(rec, operands)
    in_sh = [b.mapping(str(t), t) for t in rec.extra["in"]]
    out_sh = [b.mapping(str(t), t) for t in rec.extra["out"]]
    meshes = {m.mesh.name for m in in_sh + out_sh}
    if len(meshes) > 1:
        raise ValueError(f"in/out shardings name several meshes ({sorted(meshes)})")
    axes = tuple(AxisRef(a.name if hasattr(a, "name") else a[0]) for a in rec.extra["axes"])
    saved = fb.manual_mesh
    mesh = (in_sh + out_sh)[0].mesh if in_sh or out_sh else None
    fb.manual_mesh = mesh
    try:
        body = outline(fb, region, "manual")
    finally:
        fb.manual_mesh = saved
    attrs = {
        "body": Symbol(body.name),
        "in_shardings": tuple(in_sh),
        "manual_axes": axes,
        "out_shardings": tuple(out_sh),
    }
    # The results are typed with their out_shardings, as propagation leaves them.
    return "manual_computation", attrs, results, out_sh


def convert_all_reduce(fb: FunctionBuilder, rec: OpRec, operands: list[Value], props):
    """`stablehlo.all_reduce` inside a manual body -> `spmd.all_reduce` over the mesh axes whose
    device groups are its replica groups."""
    from shardc.passes.collectives.groups import device_groups

    mesh = fb.manual_mesh
    if mesh is None:
        raise ValueError("imports only inside an sdy.manual_computation body (shard_map)")
    if len(operands) != 1 or len(rec.regions) != 1:
        raise ValueError("imports with one operand and one reducer region")
    region, constraint = _strip_scalar_constraint(rec.regions[0])
    kind = fb.region_kind(rec, region, allow_replace=False)
    groups_attr = props.get("replica_groups")
    if groups_attr is None or groups_attr.kind != "dense":
        raise ValueError("needs replica_groups = dense<[[...]]>")
    if props.get("use_global_device_ids", "absent") == "absent":
        raise ValueError("imports only with use_global_device_ids (as shard_map emits)")
    groups = _dense_groups(str(groups_attr.value[0]))
    axes = _axes_for_groups(mesh, groups, device_groups)
    if axes is None:
        raise ValueError(f"replica_groups {groups} are not the device groups of any "
                         f"axes of mesh @{mesh.name}")
    attrs: dict[str, Any] = {
        "axes": axes, "groups": tuple(tuple(g) for g in groups), "kind": Keyword(kind),
    }
    inner = region.ops[0]
    if inner.attrs is not None and inner.attrs.entries:
        # Shardy's output shards the reducer's scalar op too: kept verbatim for the exporter.
        attrs["reducer_attrs"] = OpaqueAttr("{" + ", ".join(
            key if v is None else f"{key} = {fb.b.text[v.start:v.end]}"
            for key, v in inner.attrs.entries.items()) + "}")
    if constraint is not None:
        # JAX constrains the reducer's scalar to replicated in a partially manual shard_map: a
        # no-op on a scalar, kept only so the exporter writes it back.
        text = f"{constraint.name} {constraint.extra['sharding']}"
        if constraint.attrs is not None and constraint.attrs.entries:
            text += " {" + ", ".join(
                key if v is None else f"{key} = {fb.b.text[v.start:v.end]}"
                for key, v in constraint.attrs.entries.items()) + "}"
        attrs["reducer_constraint"] = OpaqueAttr(text)
    channel = props.get("channel_handle")
    if channel is not None:
        attrs["channel_handle"] = OpaqueAttr(fb.b.text[channel.start : channel.end])
    return "spmd.all_reduce", attrs, fb.results_of(rec, operands), None


def _strip_scalar_constraint(region: RegionRec) -> tuple[RegionRec, OpRec | None]:
    """`{%r = op %a, %b; %c = sdy.sharding_constraint %r <@m, []>; return %c}` -> the region
    without the constraint (returning %r), and the constraint."""
    ops = region.ops
    if len(ops) != 3 or ops[1].form != "sdy_sharding" or not ops[0].results:
        return region, None
    inner, constraint, ret = ops
    produced = str(inner.results[0][0])
    if [str(t) for t in constraint.operands] != [produced] or not ret.operands:
        return region, None
    if str(ret.operands[0]) != str(constraint.results[0][0]):
        return region, None
    if not str(constraint.extra["sharding"]).endswith("[]>"):
        return region, None
    new_ret = OpRec(ret.form, ret.tok, [inner.results[0][0]], ret.extra, ret.attrs, ret.sig,
                    name=ret.name)
    return RegionRec(region.args, [inner, new_ret]), constraint


def _dense_groups(text: str) -> list[list[int]]:
    import ast

    body = text[len("dense<"):-1]
    value = ast.literal_eval(body)
    if not isinstance(value, list) or not all(isinstance(g, list) for g in value):
        raise ValueError("replica_groups must be a 2-D dense<[[...], ...]>")
    return value


def _axes_for_groups(mesh, groups, device_groups):
    """The mesh axes (in mesh order, as shard_map's psum names them) whose device groups are
    `groups` (as sets of sets), or None."""
    from itertools import combinations

    want = {frozenset(g) for g in groups}
    names = list(mesh.axis_names)
    for r in range(1, len(names) + 1):
        for combo in combinations(names, r):
            refs = tuple(AxisRef(n) for n in combo)
            got = {frozenset(g) for g in device_groups(mesh, refs)}
            if got == want:
                return refs
    return None


def generic_region_op(fb: FunctionBuilder, rec: OpRec, operands: list[Value],
                      props: dict[str, AttrRec | None]):
    name = rec.name
    if name == "stablehlo.while":
        if len(rec.regions) != 2:
            raise ValueError("needs two regions (cond, body)")
        return convert_while(fb, rec, operands)
    if name == "stablehlo.case":
        return convert_case(fb, rec, operands)
    if name == "stablehlo.sort":
        return convert_sort(fb, rec, operands, props)
    if name == "stablehlo.all_reduce":
        return convert_all_reduce(fb, rec, operands, props)
    raise AssertionError(name)


def reduce_dims(props) -> tuple[int, ...]:
    return props_ints(props["dimensions"])
