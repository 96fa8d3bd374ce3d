"""`explain_text`: per value its name, op, global type, sharding, local shape and origin.

    print(explain_text(module, ctx.data.get("origins")))
"""

from __future__ import annotations

from typing import Any

from shardc.explain.graph import (
    collectives_by_function,
    fmt_bytes,
    function_nodes,
    local_shape,
    origin_text,
    shape_text,
    sharding_key,
)
from shardc.ir.core import Module


def explain_text(module: Module, origins: Any = None) -> str:
    """Per value: name, op, global type, sharding, local (per-device, padded) shape and origin.

    `origins` is propagation's `OriginTracker` (`ctx.data["origins"]`); without it the
    `shardc.origin` attributes written by `propagate --explain` are used when present.
    """
    by_func, report = collectives_by_function(module)
    lines: list[str] = []
    for m in module.meshes.values():
        lines.append(f"mesh {m}")
    for func in module.functions.values():
        lines.append("")
        lines.append(f"func @{func.name}")
        rows = [("value", "op", "type", "sharding", "local shape", "origin")]
        for n in function_nodes(func, by_func.get(func.name, {})):
            if n.value is None:
                continue
            v = n.value
            origin = origin_text(v, origins)
            if n.collective is not None:
                e = n.collective
                bytes_text = f"{fmt_bytes(e['bytes_per_device'])}/device over {','.join(e['axes'])}"
                origin = bytes_text + (f"; {origin}" if origin else "")
            rows.append(
                (
                    n.name,
                    n.op,
                    f"{shape_text(v.type.shape)}x{v.type.dtype}" if v.type.shape else v.type.dtype,
                    sharding_key(v),
                    shape_text(local_shape(v)),
                    origin,
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        for r in rows:
            cells = [c.ljust(w) for c, w in zip(r[:5], widths)]
            lines.append(("  " + "  ".join(cells) + "  " + r[5]).rstrip())
    lines.append("")
    count = len(report["collectives"])
    lines.append(
        f"collectives: {count}, {fmt_bytes(report['total_comm_bytes'])} per device"
        + "".join(
            f"; {k} x{v['count']} {fmt_bytes(v['bytes'])}" for k, v in report["by_kind"].items()
        )
    )
    lines.append(f"peak memory: {fmt_bytes(report['peak_memory_bytes_per_device'])} per device")
    return "\n".join(lines) + "\n"
