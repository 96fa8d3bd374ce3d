"""Run Shardy's own lit tests with `shardc opt` standing in for `sdy_opt`.

    python benchmarks/shardy_lit.py --shardy /work/.mirror/openxla+shardy/repo --set propagation
    python benchmarks/shardy_lit.py --shardy SHARDY --files 'export/test/reshard_to*' -v
    python benchmarks/shardy_lit.py --shardy SHARDY --set all --json /tmp/lit.json

SHARDY is a checkout of openxla/shardy or a bare git directory of one (its HEAD is read). The
tests are read from there at run time; nothing of Shardy's is kept in this repository.

A RUN line `sdy_opt %s -sdy-x="a=1 b=2" -sdy-y 2>&1 | FileCheck %s --check-prefixes=CHECK,V1`
becomes `shardc opt CASE -p 'sdy-x{a=1 b=2},sdy-y'`, checked by LLVM's FileCheck (the
`filecheck` package when LLVM's is not installed; see `default_filecheck`) against the case's
own CHECK lines (the active prefixes renamed to CHECK, the others dropped). What a case is:

- with `-split-input-file`, each `// -----` chunk;
- otherwise each function with a `CHECK-LABEL`: a module of the file's top-level non-function
  ops (meshes), the function and the functions it calls, checked with its label's section
  (sections whose label names no input function join the one before; checks before the first
  label go with the first case); a file without labels is one case. With `--whole-module`
  the module is the whole file (as sdy_opt sees it), still checked section by section: for
  passes that number things across functions, such as sdy-convert-global-to-local's channel
  handles.

With `-verify-diagnostics` a case that annotates `expected-error` passes when `shardc opt` exits
1 with an error located at the annotated line (the message wording is not compared; how many
also match Shardy's words is reported); a case without one passes when shardc accepts it.
Each case runs in its own process, limited to `--timeout` seconds and `--memory-mb` of address
space: a case past either fails and is counted apart.

Sets (`--set`): `propagation` (the import/propagation core of issue 11, with Shardy's debugging
options' files of issue 29), `debugging` (those two files alone), `parse-print` (the
dialect's parse/print tests), `export` (the export core of issue 12), `invalid` (every
expected-error case: dialect verifiers, parsing failures and the passes'), `all` (every sdy
test file whose RUN lines use sdy_opt).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

SDY = "shardy/dialect/sdy/"
SETS = {
    "propagation": [
        "transforms/propagation/test/basic_propagation.mlir",
        "transforms/propagation/test/aggressive_propagation.mlir",
        "transforms/propagation/test/op_priority_propagation.mlir",
        "transforms/propagation/test/user_priority_propagation.mlir",
        "transforms/propagation/test/op_sharding_rule_registry.mlir",
        "transforms/import/test/apply_sharding_constraints.mlir",
        "transforms/propagation/debugging/test/sharding_origins.mlir",
        "transforms/propagation/debugging/test/edge_shardings.mlir",
    ],
    "debugging": ["transforms/propagation/debugging/test/*.mlir"],
    "parse-print": ["ir/test/*parse_print*.mlir"],
    "export": [
        "transforms/export/test/reshard_to_collectives.mlir",
        "transforms/export/test/insert_explicit_reshards/dot_dot_general.mlir",
        "transforms/export/test/insert_explicit_reshards/reduce.mlir",
        "transforms/export/test/insert_explicit_reshards/broadcast_in_dim.mlir",
        "transforms/export/test/insert_explicit_reshards/reshape.mlir",
        "transforms/export/test/insert_explicit_reshards/unreduced.mlir",
    ],
    "invalid": ["**/*.mlir"],  # filtered to expected-error cases
    "all": ["**/*.mlir"],
}
IGNORED_FLAGS = {"--", "-allow-unregistered-dialect", "--allow-unregistered-dialect"}
DIRECTIVE = re.compile(
    r"//\s*([A-Za-z0-9_-]+?)(-NEXT|-SAME|-DAG|-NOT|-LABEL|-EMPTY|-COUNT-\d+)?(\{LITERAL\})?:"
)
EXPECTED = re.compile(
    r"//\s*expected-(error|warning|note|remark)\s*(?:@([+-]\d+|above|below))?\s*\{\{(.*?)\}\}"
)


# ----- reading the tests -----------------------------------------------------------------------


class Source:
    """Shardy's test files from a checkout or a bare git directory."""

    def __init__(self, root: Path):
        self.root = root
        self.git = not (root / "shardy").is_dir()

    def files(self) -> list[str]:
        if self.git:
            out = subprocess.run(
                ["git", "-C", str(self.root), "ls-tree", "-r", "--name-only", "HEAD", SDY],
                capture_output=True, text=True, check=True,
            ).stdout.split()
        else:
            out = [str(p.relative_to(self.root)) for p in (self.root / SDY).rglob("*.mlir")]
        return sorted(f[len(SDY):] for f in out if f.endswith(".mlir") and "/test/" in f)

    def read(self, name: str) -> str:
        if self.git:
            return subprocess.run(
                ["git", "-C", str(self.root), "show", f"HEAD:{SDY}{name}"],
                capture_output=True, text=True, check=True,
            ).stdout
        return (self.root / SDY / name).read_text()


@dataclass
class Run:
    """One RUN line that drives sdy_opt."""

    pipeline: list[str]
    prefixes: list[str]
    split: bool
    verify: bool
    expect_failure: bool
    unsupported: list[str] = field(default_factory=list)


def run_lines(text: str) -> list[str]:
    lines, cur = [], ""
    for line in text.splitlines():
        m = re.match(r"\s*//\s*RUN:\s?(.*)", line)
        if not m:
            continue
        part = m.group(1)
        cur += part[:-1] + " " if part.rstrip().endswith("\\") else part
        if not part.rstrip().endswith("\\"):
            lines.append(cur.strip())
            cur = ""
    return lines


def parse_run(line: str) -> Run | None:
    """The sdy_opt invocation of a RUN line, or None when it drives another tool."""
    stages = [s.strip() for s in line.split("|")]
    pipeline: list[str] = []
    prefixes = ["CHECK"]
    split = verify = expect_failure = False
    unsupported: list[str] = []
    saw_opt = False
    for stage in stages:
        try:
            words = shlex.split(stage)
        except ValueError:
            return None
        if words and words[0] == "not":
            expect_failure = True
            words = words[1:]
        if not words:
            continue
        tool = words[0]
        if tool == "sdy_opt":
            saw_opt = True
            for w in words[1:]:
                if w in ("%s", "2>&1") or w in IGNORED_FLAGS:
                    continue
                if w.lstrip("-") == "split-input-file":
                    split = True
                elif w.lstrip("-") == "verify-diagnostics":
                    verify = True
                elif w.startswith("--pass-pipeline=") or w.startswith("-pass-pipeline="):
                    pipeline.append(w.split("=", 1)[1])
                elif w.startswith("-"):
                    name, _, opts = w.lstrip("-").partition("=")
                    if name.startswith("mlir-") or name.startswith("debug"):
                        unsupported.append(w)
                        continue
                    pipeline.append(f"{name}{{{opts}}}" if opts else name)
                else:
                    unsupported.append(w)
        elif tool == "FileCheck":
            for w in words[1:]:
                if w.startswith("--check-prefixes=") or w.startswith("-check-prefixes="):
                    prefixes = w.split("=", 1)[1].split(",")
                elif w.startswith("--check-prefix=") or w.startswith("-check-prefix="):
                    prefixes = [w.split("=", 1)[1]]
        else:
            return None
    if not saw_opt:
        return None
    return Run(pipeline, prefixes, split, verify, expect_failure, unsupported)


# ----- cases -----------------------------------------------------------------------------------


@dataclass
class Case:
    file: str
    run: int
    name: str
    text: str  # the module shardc reads
    checks: list[str]  # check lines, prefixes already renamed to CHECK
    expected_errors: list[tuple[int, str]]  # (1-based line in `text`, message)
    spec: Run


def top_level_items(text: str) -> list[tuple[int, int]]:
    """(start, end) character ranges of the top-level statements of a module body."""
    items, depth, start, i, n = [], 0, None, 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if start is None and not c.isspace():
            start, body_closed = i, False
            needs_body = text.startswith(("func.func", "module"), i)
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            body_closed = body_closed or (c == "}" and depth == 0)
        elif c == "\n" and depth == 0 and start is not None and (body_closed or not needs_body):
            items.append((start, i))
            start = None
        i += 1
    if start is not None and text[start:].strip():
        items.append((start, n))
    return items


def unwrap_module(text: str) -> tuple[str, str, str] | None:
    """(header, body, "}") when the text is one explicit `module ... { body }`."""
    items = top_level_items(text)
    if len(items) != 1 or not text[items[0][0]:].startswith("module"):
        return None
    s, e = items[0]
    stmt = text[s:e].rstrip()
    if not stmt.endswith("}"):
        return None
    depth = 0
    for i, c in enumerate(stmt):  # the body brace is the one that closes at the very end
        if c == "{":
            if depth == 0:
                open_at = i
            depth += 1
        elif c == "}":
            depth -= 1
    return stmt[: open_at + 1], stmt[open_at + 1 : -1], "}"


FUNC_NAME = re.compile(r"func\.func\s+(?:(?:public|private|nested)\s+)?@([\w$.-]+)")


def split_functions(text: str) -> tuple[str, list[str], list[tuple[str, str]], str]:
    """(header, prelude items, [(func name, func text)], footer) of a module's text."""
    header, footer, body = "", "", text
    wrapped = unwrap_module(text)
    if wrapped:
        header, body, footer = wrapped
    prelude, funcs = [], []
    for s, e in top_level_items(body):
        item = body[s:e]
        m = FUNC_NAME.match(item)
        if m:
            funcs.append((m.group(1), item))
        else:
            prelude.append(item)
    return header, prelude, funcs, footer


def check_lines(text: str, prefixes: list[str]) -> list[str]:
    out = []
    for line in text.splitlines():
        m = DIRECTIVE.search(line)
        if not m or m.group(1) not in prefixes:
            continue
        suffix = (m.group(2) or "") + (m.group(3) or "")
        out.append("// CHECK" + suffix + ":" + line[m.end():])
    return out


def expected_errors(text: str) -> list[tuple[int, str]]:
    lines = text.splitlines()
    out = []
    for k, line in enumerate(lines, start=1):
        for m in EXPECTED.finditer(line):
            if m.group(1) != "error":
                continue
            where = m.group(2)
            if where is None:
                target = k
            elif where in ("above", "below"):
                step = -1 if where == "above" else 1
                target = k + step
                while 0 < target <= len(lines) and _annotation_only(lines[target - 1]):
                    target += step
            else:
                target = k + int(where)
            out.append((target, m.group(3)))
    return out


def _annotation_only(line: str) -> bool:
    return line.strip().startswith("//")


def cases_of(file: str, text: str, whole_module: bool = False) -> list[Case]:
    out = []
    for r, line in enumerate(run_lines(text)):
        run = parse_run(line)
        if run is None:
            continue
        if run.split:
            chunks = re.split(r"(?m)^// -----.*\n?", text)
            for k, chunk in enumerate(chunks):
                out.append(
                    Case(file, r, f"chunk {k}", chunk, check_lines(chunk, run.prefixes),
                         expected_errors(chunk) if run.verify else [], run)
                )
        else:
            out += _function_cases(file, r, text, run, whole_module)
    return out


def _function_cases(file: str, r: int, text: str, run: Run,
                    whole_module: bool = False) -> list[Case]:
    checks = check_lines(text, run.prefixes)
    labels = [i for i, c in enumerate(checks) if c.startswith("// CHECK-LABEL:")]
    header, prelude, funcs, footer = split_functions(text)
    names = {n for n, _ in funcs}
    if not labels or not funcs:
        return [Case(file, r, "module", text, checks, _errors(text, run), run)]
    head_checks = checks[: labels[0]]
    sections: list[tuple[str, list[str]]] = []
    for a, b in zip(labels, labels[1:] + [len(checks)]):
        label = checks[a]
        m = re.search(r"@([\w$.-]+)", label)
        # `CHECK-LABEL: func @f`, or the bare function name (`CHECK-LABEL: f`).
        bare = re.search(r"([\w$.-]+)\s*$", label)
        name = m.group(1) if m else bare.group(1) if bare and bare.group(1) in names else None
        if name in names or not sections:
            sections.append((name or label, checks[a:b]))
        else:
            sections[-1][1].extend(checks[a:b])
    bodies = dict(funcs)
    # A function with checks but no label of its own is checked right after the labelled
    # function before it (sdy_opt prints the whole file): it joins that function's case.
    labelled = {name for name, _ in sections}
    joins: dict[str, list[str]] = {}
    last = None
    for n, item in funcs:
        if n in labelled:
            last = n
        elif last is not None and check_lines(item, run.prefixes):
            joins.setdefault(last, []).append(n)
    out = []
    for name, section in sections:
        keep = set(bodies) if whole_module else _with_callees(name, bodies)
        for joined in joins.get(name, []):
            keep |= _with_callees(joined, bodies)
        parts = prelude + [item for n, item in funcs if n in keep]
        module = "\n".join(parts) + "\n"
        if header:
            module = header + "\n" + module + footer + "\n"
        out.append(
            Case(file, r, f"@{name}", module, section, _errors(module, run), run)
        )
    out[0].checks[:0] = head_checks  # checks before the first label count once, with the first
    return out


def _errors(text: str, run: Run) -> list[tuple[int, str]]:
    return expected_errors(text) if run.verify else []


def _with_callees(name: str, bodies: dict[str, str]) -> set[str]:
    keep, todo = set(), [name]
    while todo:
        n = todo.pop()
        if n in keep or n not in bodies:
            continue
        keep.add(n)
        todo += [m for m in re.findall(r"@([\w$.-]+)", bodies[n]) if m in bodies]
    return keep


# ----- running ---------------------------------------------------------------------------------


@dataclass
class Outcome:
    case: Case
    ok: bool
    why: str
    seconds: float
    message_matches: bool = False


def _limits(memory_mb: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

    return apply


def run_case(
    case: Case, timeout: float, memory_mb: int, shardc: list[str], filecheck: str = "filecheck"
) -> Outcome:
    run = case.spec
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(case.file).name
        path.write_text(case.text)
        cmd = shardc + ["opt", str(path)]
        if run.pipeline:
            cmd += ["-p", ",".join(run.pipeline)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=timeout,
                preexec_fn=_limits(memory_mb),
            )
        except subprocess.TimeoutExpired:
            return Outcome(case, False, "timeout", timeout)
        seconds = time.perf_counter() - t0
        err = proc.stderr
        crashed = "Traceback" in err or "internal compiler error" in err
        if crashed or proc.returncode not in (0, 1, 2):
            kind = "memory" if "MemoryError" in err else "crash"
            last = err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}"
            return Outcome(case, False, f"{kind}: {last[:200]}", seconds)
        if case.expected_errors:
            if proc.returncode == 0:
                return Outcome(case, False, "accepted (expected an error)", seconds)
            located = re.finditer(rf"{re.escape(str(path))}:(\d+):\d+: error", err)
            lines = {int(m.group(1)) for m in located}
            want = {line for line, _ in case.expected_errors}
            if not lines & want:
                got = ",".join(map(str, sorted(lines))) or "none"
                why = f"error at line {got}, expected {sorted(want)}"
                return Outcome(case, False, why, seconds)
            words = any(msg.strip() in err for _, msg in case.expected_errors)
            return Outcome(case, True, "located error", seconds, words)
        if proc.returncode != 0 and not run.expect_failure:
            first = err.strip().splitlines()[0] if err.strip() else f"exit {proc.returncode}"
            return Outcome(case, False, "error: " + first.replace(str(path), "")[:200], seconds)
        if not case.checks:
            return Outcome(case, proc.returncode == 0 or run.expect_failure, "no checks", seconds)
        check_file = Path(tmp) / "checks.txt"
        check_file.write_text("\n".join(case.checks) + "\n")
        fc = subprocess.run(
            [filecheck, str(check_file)], input=proc.stdout + err, capture_output=True,
            text=True, timeout=timeout,
        )
        if fc.returncode == 0:
            return Outcome(case, True, "checks pass", seconds)
        first = next((ln for ln in fc.stderr.splitlines() if "error" in ln), fc.stderr[:200])
        return Outcome(case, False, "filecheck: " + first.replace(str(check_file), "")[:200],
                       seconds)


def default_filecheck() -> str:
    """LLVM's `FileCheck`, which Shardy's lit tests run, when it is installed (on PATH or in
    /usr/lib/llvm-*/bin); else the `filecheck` Python package. The package differs from LLVM's
    tool in one way that matters here: a CHECK-NOT before a CHECK-NEXT also searches the line
    the CHECK-NEXT then matches, so `CHECK-NOT: sdy.sharding` fails on the very
    `sdy.sharding_constraint` line the next check expects (LLVM stops at the start of that
    match)."""
    found = shutil.which("FileCheck")
    if found:
        return found
    for candidate in sorted(Path("/usr/lib").glob("llvm-*/bin/FileCheck"), reverse=True):
        return str(candidate)
    return "filecheck"


def select(source: Source, set_name: str, patterns: list[str]) -> list[str]:
    files = source.files()
    globs = patterns or SETS[set_name]
    return [f for f in files if any(fnmatch.fnmatch(f, g) for g in globs)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shardy", type=Path, required=True, help="openxla/shardy checkout or git dir")
    ap.add_argument("--set", default="propagation", choices=sorted(SETS))
    ap.add_argument("--files", nargs="*", default=[], help="globs under shardy/dialect/sdy/")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=30.0)
    ap.add_argument("--memory-mb", type=int, default=2048)
    ap.add_argument("--json", type=Path, help="write every case's outcome here")
    ap.add_argument("--whole-module", action="store_true",
                    help="run each labelled case on the file's whole module (as sdy_opt does), "
                    "checking its own section: for passes that number things across functions "
                    "(channel handles)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every failing case")
    ap.add_argument("--shardc", default=f"{sys.executable} -m shardc.cli")
    ap.add_argument("--filecheck", default=default_filecheck(),
                    help="the FileCheck to check with (default: LLVM's if installed, else the "
                    "`filecheck` package)")
    args = ap.parse_args(argv)
    print(f"checking with {args.filecheck}")

    source = Source(args.shardy)
    cases: list[Case] = []
    for f in select(source, args.set, args.files):
        cases += cases_of(f, source.read(f), args.whole_module)
    if args.set == "invalid":
        cases = [c for c in cases if c.expected_errors]
    shardc = shlex.split(args.shardc)
    with ThreadPoolExecutor(args.jobs) as pool:
        outcomes = list(
            pool.map(
                lambda c: run_case(c, args.timeout, args.memory_mb, shardc, args.filecheck), cases
            )
        )

    per_file: dict[str, Counter] = {}
    for o in outcomes:
        per_file.setdefault(o.case.file, Counter())["pass" if o.ok else "fail"] += 1
    width = max((len(f) for f in per_file), default=10)
    for f, c in per_file.items():
        print(f"{f:<{width}}  {c['pass']:>4}/{c['pass'] + c['fail']:<4}")
    passed = sum(o.ok for o in outcomes)
    print(f"{'total':<{width}}  {passed:>4}/{len(outcomes):<4} "
          f"({passed / max(len(outcomes), 1):.3f})")
    reasons = Counter(o.why.split(":")[0] for o in outcomes if not o.ok)
    print("failures by kind:", dict(reasons.most_common()))
    slow = max(outcomes, key=lambda o: o.seconds, default=None)
    if slow:
        print(f"slowest case: {slow.case.file} {slow.case.name} {slow.seconds:.1f} s")
    if args.set == "invalid":
        print(f"message also matches Shardy's words: {sum(o.message_matches for o in outcomes)}")
    if args.verbose:
        for o in outcomes:
            if not o.ok:
                print(f"FAIL {o.case.file} run {o.case.run} {o.case.name}: {o.why}")
    if args.json:
        args.json.write_text(json.dumps([
            {"file": o.case.file, "run": o.case.run, "case": o.case.name, "ok": o.ok,
             "why": o.why, "seconds": round(o.seconds, 3)} for o in outcomes
        ], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
