"""Run an export pass with shardc and with jaxlib's Shardy on the same StableHLO+sdy text and
compare what they print, function by function.

    outcome = compare(text, "sdy-reshard-to-collectives")
    outcome.kind in ("same", "differ", "jaxlib-rejects", "shardc-error")

jaxlib runs in process (tests/shardy_compare.py's context); a function-level pass is nested in
`func.func(...)` for it. Programs jaxlib does not accept (its verifier, or a failing pass) are
reported as `jaxlib-rejects` and not compared.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Shardy's passes that run on one function (`func.func(...)` in a pass pipeline).
FUNCTION_PASSES = {
    "sdy-insert-explicit-reshards", "sdy-reshard-to-collectives", "sdy-constant-or-scalar-merger",
    "sdy-drop-sharding-rules", "sdy-pad-for-divisibility", "sdy-sharding-constraint-to-reshard",
    "sdy-remove-all-gather-reduce-scatter-for-cmv1", "sdy-sink-data-flow-edges",
    "sdy-sink-func-data-flow-edges", "sdy-constant-or-scalar-splitter",
    "sdy-explicit-gather-scatter-batching",
}


def split_pipeline(pipeline: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for c in pipeline:
        depth += c == "{"
        depth -= c == "}"
        if c == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        parts.append(cur.strip())
    return parts


def jaxlib_pipeline(pipeline: str) -> str:
    """`a{x=1},b` -> `builtin.module(func.func(a{x=1}),b)` (option lists with spaces)."""
    out = []
    for p in split_pipeline(pipeline):
        name = p.split("{")[0]
        p = p.replace(",", " ") if "{" in p else p
        out.append(f"func.func({p})" if name in FUNCTION_PASSES else p)
    return "builtin.module(" + ",".join(out) + ")"


def run_jaxlib(text: str, pipeline: str) -> str:
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir, passmanager

    with jmlir.make_ir_context() as ctx:
        ctx.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        passmanager.PassManager.parse(jaxlib_pipeline(pipeline)).run(module.operation)
        return str(module)


class JaxlibWorker:
    """jaxlib's passes in a child process that serves many requests: Shardy's failed checks abort
    the process (LLVM ERROR), which then only costs a restart of the child."""

    def __init__(self) -> None:
        self.proc = None

    def _start(self) -> None:
        import subprocess
        import sys

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.export_compare", "--serve"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )

    def run(self, text: str, pipeline: str) -> str:
        import pickle
        import struct

        if self.proc is None or self.proc.poll() is not None:
            self._start()
        data = pickle.dumps((text, pipeline))
        try:
            self.proc.stdin.write(struct.pack("<I", len(data)) + data)
            self.proc.stdin.flush()
            head = self.proc.stdout.read(4)
            if len(head) < 4:
                raise EOFError
            kind, out = pickle.loads(self.proc.stdout.read(struct.unpack("<I", head)[0]))
        except (EOFError, BrokenPipeError):
            self.proc.wait()
            self.proc = None
            raise RuntimeError("jaxlib aborted (a failed Shardy check)") from None
        if kind == "error":
            raise RuntimeError(out)
        return out

    def close(self) -> None:
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()
            self.proc = None


def _serve() -> None:
    import pickle
    import struct
    import sys

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = stdin.read(4)
        if len(head) < 4:
            return
        text, pipeline = pickle.loads(stdin.read(struct.unpack("<I", head)[0]))
        try:
            payload = ("ok", run_jaxlib(text, pipeline))
        except Exception as e:  # noqa: BLE001 - sent back to the caller
            payload = ("error", str(e))
        data = pickle.dumps(payload)
        stdout.write(struct.pack("<I", len(data)) + data)
        stdout.flush()


def run_shardc(text: str, pipeline: str) -> str:
    from shardc.passes.manager import PassContext, PassManager, parse_pipeline
    from shardc.stablehlo import export_stablehlo, import_stablehlo

    module = import_stablehlo(text, "input.mlir")
    PassManager(parse_pipeline(pipeline)).run(module, PassContext())
    return export_stablehlo(module)


FUNC = re.compile(r"^  func\.func (?:public |private )?@([\w$.-]+)", re.M)


def functions(text: str) -> dict[str, str]:
    """Function name -> its text (from `func.func` to the line before the next one)."""
    starts = [(m.start(), m.group(1)) for m in FUNC.finditer(text)]
    out = {}
    for k, (pos, name) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(text)
        out[name] = text[pos:end].rstrip().removesuffix("}").rstrip()
    return out


@dataclass
class Outcome:
    kind: str  # same | differ | jaxlib-rejects | shardc-error
    detail: str = ""
    functions: int = 0
    differing: int = 0


MASK_OPS = re.compile(
    r"^(\s*%\S+ = stablehlo\.(?:iota|compare|broadcast_in_dim|select|and) .*?) "
    r"\{sdy\.sharding = #sdy\.sharding_per_value<\[<[^{}]*(?:\{[^{}]*\}[^{}]*)*>\]>\}", re.M)


SCALAR_CONSTANT = re.compile(r"^\s*(%[\w.]+) = stablehlo\.constant (dense<[^>]*>) : "
                             r"(tensor<\w+>)\n", re.M)


PAIRS = re.compile(r"source_target_pairs = dense<[^>]*> : tensor<\d+x2xi64>")


def without_pairs(text: str) -> str:
    """`text` with every `source_target_pairs` written alike: the halo exchange's pairs are device
    ids of the whole mesh in shardc (and Shardy since d83d34d2), positions of the manual axes in
    jaxlib 0.10.2, the same only where every axis of size > 1 is manual and the ids are the iota
    (tests/reshard/test_halo_exchange.py compares them there, and runs the programs)."""
    return PAIRS.sub("source_target_pairs = PAIRS", text)


def without_mask_shardings(text: str) -> str:
    """`text` as pad-for-divisibility's differential test compares it: without the shardings of
    iota/compare/broadcast_in_dim/select/and ops, and with scalar constants written where they
    are used. Shardy's pass gives its padding masks the padded value's sharding and creates a
    mask's fill constant before the mask since mid-2026; jaxlib 0.10.2's (older) pass gives them
    none and creates it after (docs/interop.md)."""
    text = MASK_OPS.sub(r"\1", text)
    constants = SCALAR_CONSTANT.findall(text)
    text = SCALAR_CONSTANT.sub("", text)
    for name, value, ty in constants:
        text = re.sub(re.escape(name) + r"(?![\w.])", f"{value}:{ty}", text)
    return text


def compare(text: str, pipeline: str, worker: JaxlibWorker | None = None,
            normalize=None, jaxlib_pipeline: str | None = None) -> Outcome:
    """Both tools on `text`; with a `worker` jaxlib runs in its child process (survives Shardy's
    aborting checks). `normalize` (text -> text) is applied to each function of both outputs;
    `jaxlib_pipeline`, when given, is what jaxlib runs instead of `pipeline` (options jaxlib's
    older passes do not know)."""
    from shardc.ir.diagnostics import ShardcError

    try:
        their_pipeline = jaxlib_pipeline or pipeline
        theirs = (worker.run(text, their_pipeline) if worker is not None
                  else run_jaxlib(text, their_pipeline))
    except Exception as e:  # noqa: BLE001 - jaxlib's MLIRError: not a program Shardy accepts
        return Outcome("jaxlib-rejects", str(e)[:300])
    try:
        ours = run_shardc(text, pipeline)
    except ShardcError as e:
        return Outcome("shardc-error", e.render() if hasattr(e, "render") else str(e))
    a, b = functions(ours), functions(theirs)
    if normalize is not None:  # per function: value names are function-scoped
        a = {n: normalize(f) for n, f in a.items()}
        b = {n: normalize(f) for n, f in b.items()}
    differing = [n for n in b if a.get(n) != b[n]]
    extra = [n for n in a if n not in b]
    if not differing and not extra and (a or ours.strip() == theirs.strip()):
        return Outcome("same", functions=len(b))
    detail = []
    for n in differing + extra:
        detail.append(f"--- @{n} shardc:\n{a.get(n, '<missing>')}\n--- @{n} jaxlib:\n"
                      f"{b.get(n, '<missing>')}")
    return Outcome("differ", "\n".join(detail), len(b), len(differing) + len(extra))


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--serve"]:
        _serve()
