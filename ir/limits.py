"""What shardc agrees to read: bounds on input size, nesting, meshes and tensors, each a located
error that names the option that raises it.

    model.mlir:1:18: error: mesh @mesh has 99999999999999999999996 devices, more than the limit
    of 65536 (raise it with --limit devices=N)

A compiler inside someone's build job must answer at once, whatever the input: a mesh of 10^23
devices, a tensor of 2^70 elements or a file nested 100,000 brackets deep would otherwise hang,
exhaust memory or overflow the stack somewhere far from the input's fault. `Limits` is an
options object (the CLI's `--limit key=value`, `shardc.parse(..., limits=...)`); the checks are
independent of the parsers, so either parser calls them the same way:

- `check_source(text, file, limits)` before parsing: the size, and the bracket nesting;
- `check_module(module, limits)` after building, before verifying: every mesh's device count
  and every value's element count (int64, as in MLIR and XLA, is a hard bound);
- `check_run(module, limits)` before executing on simulated devices: the bytes every value
  would take over all devices;
- `while_limit_error(op, limits)` while executing: a `while` op that ran `while-iterations`
  times and would go on (a loop whose condition never turns false would run forever).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from shardc.ir.core import Module
from shardc.ir.diagnostics import ExecutionError, Location, ShardcError
from shardc.ir.mesh import DeviceMesh
from shardc.ir.types import element_bytes, shard_shape

MAX_INT64 = (1 << 63) - 1


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what shardc reads and runs; each field is a `--limit` key (module docstring)."""

    devices: int = 1 << 16  # devices in one mesh
    depth: int = 256  # nesting of (), [] and {} in the text
    file_mb: int = 256  # input size in MiB
    run_mb: int = 4096  # MiB a value takes over all simulated devices (`run`)
    while_iterations: int = 100_000  # iterations of one `while` op run (`run`)

    KEYS = ("devices", "depth", "file-mb", "run-mb", "while-iterations")

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ShardcError(f"limit {f.name.replace('_', '-')} must be a positive integer")

    @classmethod
    def parse(cls, items: list[str]) -> Limits:
        """`["devices=1000000", "depth=512"]` -> Limits; a `ShardcError` names a bad item."""
        values: dict[str, int] = {}
        for item in items:
            for part in item.split(","):
                key, sep, raw = part.partition("=")
                key = key.strip()
                if not sep or key not in cls.KEYS:
                    raise ShardcError(
                        f"bad limit '{part}': expected KEY=N with KEY one of {', '.join(cls.KEYS)}"
                    )
                try:
                    values[key.replace("-", "_")] = int(raw)
                except ValueError:
                    raise ShardcError(f"bad limit '{part}': {raw!r} is not an integer") from None
        return cls(**values)


DEFAULT_LIMITS = Limits()
# A string or a comment (skipped whole: brackets in them do not nest), or one bracket.
_TOKENS = re.compile(r'"(?:[^"\\\n]|\\.)*"|//[^\n]*|[\[\](){}]')


def _over(what: str, key: str, limit: int, loc: Location | None) -> ShardcError:
    return ShardcError(
        f"{what}, more than the limit of {limit} (raise it with --limit {key}=N)", loc
    )


def _location(text: str, file: str, offset: int) -> Location:
    line = text.count("\n", 0, offset) + 1
    return Location(file, line, offset - (text.rfind("\n", 0, offset) + 1) + 1)


def check_source(text: str, file: str, limits: Limits = DEFAULT_LIMITS) -> None:
    """Raise a located `ShardcError` if `text` is larger or nests deeper than `limits` allow."""
    budget = limits.file_mb << 20
    if len(text) > budget // 4 and len(text.encode("utf-8")) > budget:
        size = len(text.encode("utf-8"))
        raise _over(f"the input is {size / 2**20:.1f} MiB", "file-mb", limits.file_mb,
                    Location(file, 1, 1))
    if text.count("(") + text.count("[") + text.count("{") <= limits.depth:
        return  # cannot nest deeper than it has brackets
    depth = 0
    for m in _TOKENS.finditer(text):
        c = m.group()
        if c in "([{":
            depth += 1
            if depth > limits.depth:
                raise _over(f"brackets nest {depth} deep here", "depth", limits.depth,
                            _location(text, file, m.start()))
        elif c in ")]}":
            depth -= 1


def check_module(module: Module, limits: Limits = DEFAULT_LIMITS) -> None:
    """Raise a located `ShardcError` for a mesh with more devices than `limits.devices`, or a
    value with more than 2^63 - 1 elements."""
    for name, mesh in module.meshes.items():
        check_mesh(mesh, module.mesh_locs.get(name), limits)
    for func in module.functions.values():
        for a in func.args:
            _check_elements(a.type.shape, f"argument {a.label}", func.loc)
        fits: set[tuple[int, ...]] = set()  # shapes checked (a model repeats a few hundred)
        op = func.body.first
        while op is not None:
            for r in op.results:
                shape = r.type.shape
                if shape not in fits:
                    _check_elements(shape, f"result of '{op.name}'", op.loc)
                    fits.add(shape)
            op = op.next


def check_mesh(mesh: DeviceMesh, loc: Location | None, limits: Limits = DEFAULT_LIMITS) -> None:
    """Raise a `ShardcError` at `loc` if `mesh` has more devices than `limits.devices`."""
    for axis, size in mesh.axes:
        if size > limits.devices:
            raise _over(f"axis {axis!r} of mesh @{mesh.name} has {size} devices", "devices",
                        limits.devices, loc)
    if mesh.num_devices > limits.devices:
        raise _over(f"mesh @{mesh.name} has {mesh.num_devices} devices", "devices",
                    limits.devices, loc)


def _check_elements(shape: tuple[int, ...], what: str, loc: Location | None) -> None:
    n = 1
    for d in shape:
        n *= d
    if n > MAX_INT64:
        raise ShardcError(
            f"{what} has {n} elements, more than 2^63 - 1 (a tensor's element count is an int64)",
            loc,
        )


def check_run(module: Module, limits: Limits = DEFAULT_LIMITS) -> None:
    """Raise a located `ShardcError` if running `module` on its simulated devices would hold a
    value taking more than `limits.run_mb` MiB over all of them (a replicated value is held by
    every device)."""
    budget = limits.run_mb << 20
    for func in module.functions.values():
        values = [(a, func.loc) for a in func.args]
        values += [(r, op.loc) for op in func.body for r in op.results]
        for v, loc in values:
            m = v.mapping
            devices = m.mesh.num_devices if m is not None else 1
            local = 1
            for d in shard_shape(v.type.shape, m):
                local *= d
            size = local * element_bytes(v.type.dtype) * devices
            if size > budget:
                raise _over(
                    f"running {v.label} would take {size / 2**20:.0f} MiB over {devices} "
                    "simulated devices", "run-mb", limits.run_mb, loc,
                )


def while_limit_error(loc: Location | None, limits: Limits) -> ShardcError:
    """The error of a `while` op at `loc` still running after `limits.while_iterations`."""
    return ExecutionError(
        f"'while' op: its condition still holds after {limits.while_iterations} iterations, the "
        "limit (raise it with --limit while-iterations=N)", loc)
