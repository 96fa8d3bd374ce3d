"""The reshard planner on random reshards of large meshes: plan time, memory and cost against
the greedy plan, by mesh size.

    python benchmarks/planner.py                    # 40 reshards per mesh-size bucket
    python benchmarks/planner.py --per-bucket 10    # quicker
    python benchmarks/planner.py --write-docs       # replace the planner section of benchmarks.md

A case: a mesh of 2 to 8 axes (sizes 2 to 16, some 3) with 8 to 4096 devices, its axes cut into
sub-axes at random, a tensor of rank 1 to 3 (dims 1 to 4096, often multiples of the mesh axes),
and two random layouts of those sub-axes (the source sometimes with unreduced axes, the target
keeping some of them). The issue-13 reshards that once hung the planner are measured first.
Each case is planned fresh (caches cleared); memory is the tracemalloc peak of a second run.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_section import write_section  # noqa: E402

from shardc.ir.mapping import DimSharding, NamedMapping  # noqa: E402
from shardc.ir.mesh import AxisRef, DeviceMesh  # noqa: E402
from shardc.passes.analysis.collectives import greedy_plan, plan_reshard  # noqa: E402
from shardc.passes.analysis.collectives.axes import merge_refs  # noqa: E402
from shardc.passes.analysis.collectives.planner import DEFAULT_BUDGET, _plan_cached  # noqa: E402

BUCKETS = [(8, 32), (64, 256), (512, 1024), (2048, 4096)]
NAMES = "abcdefgh"


@dataclass
class Case:
    mesh: DeviceMesh
    shape: tuple[int, ...]
    src: NamedMapping
    dst: NamedMapping

    def text(self) -> str:
        axes = ", ".join(f'"{n}"={s}' for n, s in self.mesh.axes)
        return f"{self.shape} on [{axes}]: {self.src.text()} -> {self.dst.text()}"


def layout(mesh: DeviceMesh, dims: list[list[AxisRef]], unreduced=()) -> NamedMapping:
    return NamedMapping(
        mesh, tuple(DimSharding(merge_refs(d, mesh)) for d in dims), (), tuple(unreduced)
    )


def parse_ref(text: str) -> AxisRef:
    """`"w"` or `"w:4:2"` (pre 4, size 2)."""
    name, *sub = text.split(":")
    return AxisRef(name, int(sub[0]), int(sub[1])) if sub else AxisRef(name)


def issue_cases() -> list[Case]:
    """The reshards issue 13 measured: 24 GB / 9 min, 13 GB, and > 20 s."""
    m1 = DeviceMesh.create("mesh", {"x": 2, "y": 2, "z": 2, "w": 16})
    src = [[parse_ref(r) for r in ["y", "w:4:2", "z", "w:1:2"]], []]
    out = [
        Case(m1, (16, 8), layout(m1, src), layout(m1, [[parse_ref("y")],
                                                       [parse_ref("x"), parse_ref("w:2:8")]])),
        Case(m1, (16, 8), layout(m1, src), layout(m1, [[parse_ref("y")],
                                                       [parse_ref("x"), parse_ref("w")]])),
    ]
    m2 = DeviceMesh.create("mesh", {"a": 4, "b": 8, "c": 8})
    out.append(Case(
        m2, (16, 16, 16),
        layout(m2, [[parse_ref("b:4:2")], [parse_ref("a:1:2")], [parse_ref("c:4:2")]]),
        layout(m2, [[parse_ref("c:1:4")], [], []]),
    ))
    return out


def random_mesh(rng: random.Random, lo: int, hi: int) -> DeviceMesh:
    while True:
        n = rng.randint(2, 8)
        sizes = [rng.choice([2, 2, 2, 4, 4, 8, 16, 3]) for _ in range(n)]
        total = 1
        for s in sizes:
            total *= s
        if lo <= total <= hi:
            return DeviceMesh.create("mesh", dict(zip(NAMES, sizes, strict=False)))


def atoms_of(rng: random.Random, mesh: DeviceMesh) -> list[AxisRef]:
    """Each axis whole, or cut into two or three sub-axes."""
    out = []
    for name, size in mesh.axes:
        cuts = [c for c in (2, 4, 8) if c < size and size % c == 0]
        chosen = sorted(rng.sample(cuts, min(len(cuts), rng.randint(0, 2))))
        bounds = [1, *chosen, size]
        out += [
            AxisRef(name) if (a, b) == (1, size) else AxisRef(name, a, b // a)
            for a, b in zip(bounds, bounds[1:])
        ]
    return out


def random_case(rng: random.Random, lo: int, hi: int) -> Case:
    mesh = random_mesh(rng, lo, hi)
    atoms = atoms_of(rng, mesh)
    rank = rng.randint(1, 3)
    sizes = [s for _, s in mesh.axes]
    shape = tuple(
        rng.choice(sizes) * rng.choice([1, 2, 4, 8, 16]) if rng.random() < 0.7
        else rng.randint(1, 4096)
        for _ in range(rank)
    )

    def one(unreduced_from: list[AxisRef]) -> tuple[list[list[AxisRef]], list[AxisRef]]:
        dims: list[list[AxisRef]] = [[] for _ in range(rank)]
        unreduced = []
        for a in rng.sample(atoms, len(atoms)):
            slot = rng.randint(0, rank + 1)
            if slot < rank:
                dims[slot].append(a)
            elif slot == rank and a in unreduced_from:
                unreduced.append(a)
        return dims, unreduced

    src_dims, src_unreduced = one(atoms if rng.random() < 0.3 else [])
    dst_dims, dst_unreduced = one(src_unreduced)
    return Case(mesh, shape, layout(mesh, src_dims, src_unreduced),
                layout(mesh, dst_dims, dst_unreduced))


def measure(case: Case, budget: int) -> dict:
    _plan_cached.cache_clear()
    start = time.process_time()  # CPU time: the shared machine's load does not count
    plan = plan_reshard(case.shape, "f32", case.src, case.dst, budget=budget)
    seconds = time.process_time() - start
    greedy = greedy_plan(case.shape, "f32", case.src, case.dst)
    _plan_cached.cache_clear()
    tracemalloc.start()
    plan_reshard(case.shape, "f32", case.src, case.dst, budget=budget)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {
        "devices": case.mesh.num_devices, "seconds": seconds, "peak_mb": peak / 2**20,
        "search": plan.search, "cost": plan.cost, "greedy": greedy.cost,
        "steps": len(plan.steps), "searched": plan.searched,
    }


def ratio(r: dict) -> float:
    return r["cost"] / r["greedy"] if r["greedy"] else 1.0


def table(rows: list[dict]) -> str:
    lines = [
        "| devices | reshards | optimal | budget cut | median ms | max ms | max MB "
        "| cost / greedy: mean | min | cheaper than greedy |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for lo, hi in BUCKETS:
        rs = [r for r in rows if lo <= r["devices"] <= hi]
        if not rs:
            continue
        ms = [r["seconds"] * 1e3 for r in rs]
        ratios = [ratio(r) for r in rs]
        lines.append(
            f"| {lo}-{hi} | {len(rs)} | {sum(r['search'] == 'optimal' for r in rs)} "
            f"| {sum(r['search'] == 'bounded' for r in rs)} | {statistics.median(ms):.0f} "
            f"| {max(ms):.0f} | {max(r['peak_mb'] for r in rs):.0f} "
            f"| {statistics.mean(ratios):.2f} | {min(ratios):.2f} "
            f"| {sum(x < 1 for x in ratios)} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-bucket", type=int, default=40)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    issue_rows = []
    for case in issue_cases():
        r = measure(case, args.budget)
        issue_rows.append((case, r))
        print(f"issue case: {r['seconds'] * 1e3:.0f} ms, {r['peak_mb']:.1f} MB, {r['search']}, "
              f"cost {r['cost']} (greedy {r['greedy']}): {case.text()}")
    rows = []
    for lo, hi in BUCKETS:
        for _ in range(args.per_bucket):
            case = random_case(rng, lo, hi)
            r = measure(case, args.budget)
            rows.append(r)
            if args.verbose:
                print(f"{r['seconds'] * 1e3:7.0f} ms {r['peak_mb']:6.1f} MB {r['search']:8} "
                      f"{ratio(r):.2f} {case.text()}")
    text = table(rows)
    print(text)
    worst = max(rows, key=lambda r: r["seconds"])
    print(f"slowest: {worst['seconds'] * 1e3:.0f} ms; "
          f"largest: {max(r['peak_mb'] for r in rows):.0f} MB")
    if args.write_docs:
        issue_lines = "\n".join(
            f"| `{c.text()}` | {r['seconds'] * 1e3:.0f} | {r['peak_mb']:.1f} | {r['search']} "
            f"| {ratio(r):.2f} |"
            for c, r in issue_rows
        )
        body = (
            "## Reshard planner\n\n"
            f"`python benchmarks/planner.py --per-bucket {args.per_bucket} --seed {args.seed} "
            "--write-docs`: random single reshards (benchmarks/README.md says how they are "
            f"drawn), budget {args.budget} edges per search tier. *optimal*: the full search "
            "finished (the plan is the cheapest); *budget cut*: the best plan found within the "
            "budget (never worse than greedy). Cost is ring-model bytes per device; "
            "time is the process's CPU time (the shared machine's load left out), memory the "
            "tracemalloc peak.\n\n"
            + text + "\n\nThe reshards issue 13 measured (before: 24 GB / 9 min, 13 GB, > 20 s):"
            "\n\n| reshard | ms | MB | search | cost / greedy |\n|---|---|---|---|---|\n"
            + issue_lines
        )
        write_section("planner", body)


if __name__ == "__main__":
    main()
