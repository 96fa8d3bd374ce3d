"""The persistent compile cache of `shardc.jit`: opt-in, on disk, like JAX's compilation cache.

    options = shardc.CompileOptions(cache_dir="/tmp/shardc-cache")
    f = shardc.jit(step, mesh=mesh, in_shardings=specs, options=options)
    f(*args)      # a second process (or a second run of the script) finds shardc's program

An entry is keyed by what decides shardc's program: the StableHLO text JAX lowered, the compile
options (less `cache_dir`), the mesh and shardc's version (`FORMAT` too, bumped when an
entry's layout changes). It holds the global and the per-device program as native text with a
side table of what the text does not carry (every op's location and whether the input wrote
it, value names, the meshes' StableHLO attributes), the report and the warnings. A hit skips
the StableHLO import and shardc's pipeline; `Lowered.explain` on a hit has no propagation
origins (it says which sharding each value has, not which value decided it).

With backend "jax" the per-device program's XLA executable is kept beside the entry
(`jax.experimental.serialize_executable`), keyed further by the JAX and jaxlib versions, the
platform, the devices it runs on and the donated arguments, so a hit also skips tracing the
per-device program and XLA's compile.

On a miss the entry of shardc's program is built and written on a thread while XLA compiles the
per-device program (XLA's compile runs without Python's lock; the thread starts once JAX has
traced the per-device program, which also needs the lock), and the first call waits for it
before it returns: the entry is on disk when the call is done, and a
directory that cannot be written is a warning of that call. (Building the entry, report
included, was ~0.3 s of the 8-layer Llama step's first call.)

Every file is written whole to a temporary file in the directory and renamed into place (an
atomic replace: concurrent writers of one key leave one complete entry, readers never see a
partial one) and starts with a checksum of its contents: a truncated, corrupt or foreign file
reads as a miss, and the next compile writes it anew. See docs/jax.md.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import re
import tempfile
import threading
import time
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from shardc.ir.attributes import MESH_ATTRS_PREFIX, OpaqueAttr
from shardc.ir.core import Module
from shardc.ir.diagnostics import Location
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.manager import PassContext, Warning_
from shardc.pipeline import CompileOptions, CompileResult
from shardc.pipeline import compile as compile_module

__all__ = ["CacheHandle", "CompileCache", "JaxSource", "cache_key", "compile_text"]

FORMAT = 2  # 2: shardc.jit legalizes chlo on import (legalize_chlo.py)
_MAGIC = b"shardc-cache\n"


def _version() -> str:
    try:
        return metadata.version("shardc")
    except metadata.PackageNotFoundError:  # (a source tree on sys.path, not installed)
        return "unknown"


# MLIR locations: `loc(...)` (nesting as JAX writes it: `loc(callsite(#loc1 at #loc2))`,
# `loc("jit(f)/dot"(#loc3))`) and the `#locN = loc(...)` alias lines at the end of the text.
# Compiled on the first cache key, not on import: only a call with `cache_dir` needs them (this
# module is imported inside shardc.jit's first call, which paid ~0.3 ms for them).
_STRING = r'"(?:[^"\\]|\\.)*"'
_LOC = (r"\s*\bloc\((?:[^()\"]|" + _STRING + r"|\((?:[^()\"]|" + _STRING
        + r"|\([^()]*\))*\))*\)")


@functools.cache
def _location_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`(a string or a loc(...), a #locN alias line)`."""
    return re.compile(_STRING + "|" + _LOC), re.compile(r"^#loc[\w.$-]* = .*\n?", re.M)


def without_locations(text: str) -> str:
    """`text` with every source location removed: the program, not where it was written
    (string literals, which may spell `loc(`, are kept whole)."""
    string_or_loc, alias = _location_patterns()
    return string_or_loc.sub(
        lambda m: m.group(0) if m.group(0).startswith('"') else "", alias.sub("", text)
    )


def cache_key(text: str, options: CompileOptions, mesh_axes: dict[str, int]) -> str:
    """The key of shardc's program for the StableHLO `text` compiled with `options` on a mesh
    of `mesh_axes`. Source locations are not part of it (as in JAX's cache): the same
    function lowered from another call site, or moved within its file, finds its program;
    the cached program keeps the locations of the compile that stored it."""
    fields = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
              if f.name != "cache_dir"}
    h = hashlib.sha256()
    for part in (f"format {FORMAT}", f"shardc {_version()}", repr(sorted(fields.items())),
                 repr(sorted(mesh_axes.items())), without_locations(text)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class CacheHandle:
    """Where a compiled program's entry is (`hit`: it was read from there); on a miss, the
    entry's write, started (`start`) or under way (`wait` for it)."""

    cache: CompileCache
    key: str
    hit: bool
    writing: _Background | None = None

    def start(self) -> None:
        """Start writing the entry (if it is not under way already)."""
        if self.writing is not None:
            self.writing.start()

    def wait(self) -> None:
        """Wait until the entry is written (starting it if need be); a write that failed warns
        here, on the caller's thread."""
        if self.writing is not None:
            self.writing.wait()


class _Background:
    """`work` on a thread of its own, from `start` on; `wait` starts it if need be, joins it
    and re-raises its warning there. The thread is not a daemon: an interpreter that exits
    first waits for it."""

    def __init__(self, work: Callable[[], None]):
        self.failed: list[str] = []
        self.thread = threading.Thread(target=self._run, args=(work,), name="shardc-cache")
        self.started = False
        self.lock = threading.Lock()

    def start(self) -> None:
        with self.lock:
            if not self.started:
                self.started = True
                self.thread.start()

    def _run(self, work: Callable[[], None]) -> None:
        try:
            work()
        except OSError as e:
            self.failed.append(str(e))

    def wait(self) -> None:
        self.start()
        self.thread.join()
        failed, self.failed = self.failed, []
        for message in failed:
            warnings.warn(message, RuntimeWarning, stacklevel=3)


# ----- files -----------------------------------------------------------------------------------


class CompileCache:
    """One cache directory."""

    def __init__(self, directory: str | os.PathLike[str]):
        self.dir = Path(directory).expanduser()

    def _path(self, key: str, kind: str) -> Path:
        return self.dir / f"{key}.{kind}"

    def read(self, key: str, kind: str) -> bytes | None:
        """The contents stored under `key`, or None (absent, partial, corrupt)."""
        try:
            data = self._path(key, kind).read_bytes()
        except OSError:
            return None
        head = len(_MAGIC) + 32
        if not data.startswith(_MAGIC) or len(data) < head:
            return None
        payload = data[head:]
        if hashlib.sha256(payload).digest() != data[len(_MAGIC) : head]:
            return None
        return payload

    def write(self, key: str, kind: str, payload: bytes) -> None:
        """Store `payload` under `key`: written aside, then renamed into place. A directory
        that cannot be written is a warning, not an error: the program was compiled."""
        try:
            self._write(key, kind, payload)
        except OSError as e:
            warnings.warn(str(e), RuntimeWarning, stacklevel=2)

    def _write(self, key: str, kind: str, payload: bytes) -> None:
        """`write`, an unwritable directory an `OSError` saying so."""
        try:
            self._write_file(key, kind, payload)
        except OSError as e:
            raise OSError(f"shardc.jit: cannot write the compile cache in {self.dir}: "
                          f"{e}") from None

    def _write_file(self, key: str, kind: str, payload: bytes) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".tmp-")
        try:
            os.chmod(tmp, 0o644)  # (mkstemp's 0600 would keep a shared cache to its writer)
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + hashlib.sha256(payload).digest() + payload)
            os.replace(tmp, self._path(key, kind))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # ----- shardc's program ----------------------------------------------------------------------

    def load(self, key: str) -> CompileResult | None:
        payload = self.read(key, "shardc")
        if payload is None:
            return None
        try:
            entry = json.loads(zlib.decompress(payload))
            module, spmd = _load_module(entry["module"]), _load_module(entry["spmd"])
        except (ValueError, KeyError, TypeError, zlib.error):
            return None  # (a file another version wrote: a miss)
        if module is None or spmd is None:
            return None
        ctx = PassContext()
        ctx.warnings = [Warning_(m, _location(loc)) for m, loc in entry["warnings"]]
        result = CompileResult(module, spmd, ctx, dict(entry["timings"]))
        result._report = entry["report"]
        return result

    def store(self, key: str, result: CompileResult) -> None:
        """Write `result`'s entry (an unwritable directory: `OSError`)."""
        entry = {
            "module": _dump_module(result.module), "spmd": _dump_module(result.spmd),
            "report": result.report, "timings": result.timings,
            "warnings": [(w.message, _loc_list(w.loc)) for w in result.context.warnings],
        }
        if entry["module"] is None or entry["spmd"] is None:
            return  # something the native text does not carry: not cached
        self._write(key, "shardc", zlib.compress(json.dumps(entry).encode(), 1))


# ----- modules as text + what the text does not carry ---------------------------------------


def _loc_list(loc: Any) -> list | None:
    return [loc.file, loc.line, loc.col] if isinstance(loc, Location) else None


def _location(loc: list | None) -> Location | None:
    return Location(loc[0], loc[1], loc[2]) if loc is not None else None


def _dump_module(module: Module) -> dict[str, Any] | None:
    hidden = {k: v for k, v in module.attributes.items() if k.startswith(MESH_ATTRS_PREFIX)}
    if any(not isinstance(v, OpaqueAttr) for v in hidden.values()):
        return None
    funcs = [
        [f.name, _loc_list(f.loc), f.loc_written, f.visibility_written,
         [a.name_hint for a in f.args],
         [[_loc_list(op.loc), op.loc_written, [r.name_hint for r in op.results]]
          for op in f.body]]
        for f in module.functions.values()]
    return {"text": print_module(module), "functions": funcs,
            "mesh_locs": {k: _loc_list(v) for k, v in module.mesh_locs.items()},
            "hidden": {k: v.text for k, v in hidden.items()}}


def _load_module(entry: dict[str, Any]) -> Module | None:
    module = parse_module(entry["text"], "<shardc cache>")
    if [f.name for f in module.functions.values()] != [f[0] for f in entry["functions"]]:
        return None
    for f, (_, loc, written, visibility, args, ops) in zip(module.functions.values(),
                                                            entry["functions"]):
        body = list(f.body)
        if len(body) != len(ops) or len(f.args) != len(args):
            return None
        f.loc, f.loc_written, f.visibility_written = _location(loc), written, visibility
        for a, hint in zip(f.args, args):
            a.name_hint = hint
        for op, (loc, written, hints) in zip(body, ops):
            if len(op.results) != len(hints):
                return None
            op.loc, op.loc_written = _location(loc), written
            for r, hint in zip(op.results, hints):
                r.name_hint = hint
    module.mesh_locs = {k: _location(v) for k, v in entry["mesh_locs"].items()}
    module.attributes.update({k: OpaqueAttr(v) for k, v in entry["hidden"].items()})
    return module


# ----- what shardc.jit calls ------------------------------------------------------------------


@dataclass(frozen=True)
class JaxSource:
    """The program as JAX lowered it (`text`), for what needs it before any pass: the compile
    on a cache miss, and `Lowered.explain_collectives` (which recompiles it with changes), also
    after a cache hit."""

    text: str
    name: str
    mesh_axes: dict[str, int]
    # The arguments' pytree paths, one per argument of main (the text names them flat[i]).
    arg_labels: tuple[str, ...] = ()

    def label(self, module: Module) -> None:
        """Name `module`'s main arguments by their pytree paths."""
        if len(self.arg_labels) == len(module.main.args):
            module.main.arg_labels = list(self.arg_labels)

    def module(self) -> Module:
        """The text imported, on the jit's mesh when JAX printed none."""
        from shardc.ir.mesh import DeviceMesh
        from shardc.passes.propagation.legalize_chlo import legalize_chlo
        from shardc.stablehlo import import_stablehlo

        module = import_stablehlo(self.text, f"<jax:{self.name}>")
        legalize_chlo(module)  # what XLA does to JAX's chlo ops before Shardy (legalize_chlo.py)
        self.label(module)
        if all(m.is_empty or m.is_maximal for m in module.meshes.values()):
            # No sharding given (JAX then prints no mesh, or only its axis-less @empty_mesh of
            # 0-d arguments, or the one-device mesh of a host callback): the program still runs
            # on the jit's mesh, every value replicated unless auto-shard decides otherwise.
            module.add_mesh(DeviceMesh.create("mesh", self.mesh_axes))
        return module


def compile_text(source: JaxSource, options: CompileOptions,
                 defer_store: bool = False) -> tuple[CompileResult, dict[str, float]]:
    """Import JAX's StableHLO text and compile it (through the cache when `options` names
    one); the result and the seconds spent importing and compiling. `defer_store`: a miss's
    entry is written once `result.cache.start()` (or `wait()`) is called, not at once."""

    cache = CompileCache(options.cache_dir) if options.cache_dir is not None else None
    key = cache_key(source.text, options, source.mesh_axes) if cache is not None else ""
    start = time.perf_counter()
    if cache is not None:
        result = cache.load(key)
        if result is not None:
            source.label(result.module)
            source.label(result.spmd)
            result.cache = CacheHandle(cache, key, hit=True)
            return result, {"import": 0.0, "shardc_compile": 0.0,
                            "cache_load": time.perf_counter() - start}
    module = source.module()
    imported = time.perf_counter()
    result = compile_module(module, options, consume=True)  # (a fresh import)
    timings = {"import": imported - start, "shardc_compile": time.perf_counter() - imported}
    if cache is not None:
        # (on a thread: the caller compiles the per-device program meanwhile, and waits for it
        # before the first call returns; it only reads `result`)
        writing = _Background(lambda: cache.store(key, result))
        result.cache = CacheHandle(cache, key, hit=False, writing=writing)
        if not defer_store:
            writing.start()
    return result, timings


def compile_program(program: Any, result: CompileResult) -> Any:
    """The XLA executable of `program` (a `JaxArrayProgram`): from the cache beside `result`'s
    entry when there is one for these devices, else compiled (and kept there)."""
    handle = result.cache
    if handle is None:
        return program.compile()
    try:
        return _compile_program(program, handle)
    finally:
        handle.wait()


def _compile_program(program: Any, handle: CacheHandle) -> Any:
    jax = program.jax
    import jaxlib
    from jax.experimental import serialize_executable

    devices = [(d.id, d.platform, d.device_kind) for d in program.executor.mesh.devices.flat]
    client = program.executor.mesh.devices.flat[0].client
    # donated arguments are part of the executable (its input/output aliases)
    where = hashlib.sha256(repr((handle.key, jax.__version__, jaxlib.__version__,
                                 client.platform_version, devices,
                                 program.donate)).encode()).hexdigest()
    in_tree = jax.tree_util.tree_structure((tuple(range(len(program.in_shapes))), {}))
    out_tree = jax.tree_util.tree_structure(tuple(range(len(program.out_shapes))))
    payload = handle.cache.read(where, "xla")
    if payload is not None:
        try:
            loaded = program.load(payload)  # the replicas' executable (xla_replicas.py)
            if loaded is not None:
                return loaded
            return serialize_executable.deserialize_and_load(payload, in_tree, out_tree)
        except Exception:  # noqa: BLE001 - jaxlib's errors have no common type: a miss
            pass
    # The entry's write (Python, as the per-device program's printing or trace is) starts
    # once that is done, and runs beside XLA's compile, which releases Python's lock. (Both at
    # once, the 8-layer Llama step's per-device trace took 1.2-2.9 s wall instead of 0.5-1.0
    # s, load ~9; benchmarks/jit_breakdown.py has the CPU time of each.)
    executable = program.compile(traced=handle.start)
    try:
        if program.replicas:
            payload = executable.serialize()
        else:
            payload, ins, outs = serialize_executable.serialize(executable)
            if ins != in_tree or outs != out_tree:
                return executable
    except Exception:  # noqa: BLE001 - a backend that cannot serialize: not cached
        return executable
    handle.cache.write(where, "xla", payload)
    return executable
