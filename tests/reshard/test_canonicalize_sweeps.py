"""canonicalize's lean sweeps (a later sweep visits only the ops that can fire in it) rewrite
exactly as full sweeps do: the same program and the same number of rewrites."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardc.commands.text_io import split_input
from shardc.ir.core import Module
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline
from shardc.passes.reshard.canonicalize import REWRITES, canonicalize_module

load_all_passes()
ROOT = Path(__file__).parent.parent.parent
FILECHECK = ROOT / "tests" / "filecheck" / "reshard" / "canonicalize.mlir"
BEFORE = "propagation-pipeline,close-shardings,insert-reshards,lower-collectives"

# Dead chains of several lengths (one op more of each goes per full sweep), a reshard chain
# folded in the middle of one (a sweep where another rewrite fires), a pair cancelled whose
# operand becomes dead, and a dead op with several dead users.
CHAINS = """
mesh @m = <["x"=4, "y"=2]>
func @f(%a: tensor<16x16xf32, <@m, [{"x"}, {}]>>) -> tensor<16x16xf32, <@m, [{"x"}, {}]>> {
  %0 = negate %a : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %1 = negate %0 : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %2 = reshard %1 : tensor<16x16xf32, <@m, [{}, {}]>>
  %3 = reshard %2 : tensor<16x16xf32, <@m, [{"y"}, {}]>>
  %4 = negate %3 : tensor<16x16xf32, <@m, [{"y"}, {}]>>
  %5 = add %a, %a : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %6 = negate %5 : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %7 = multiply %5, %6 : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %8 = all_gather %a {gathering_axes = [["x"], []]} : tensor<16x16xf32, <@m, [{}, {}]>>
  %9 = all_slice %8 {slicing_axes = [["x"], []]} : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %10 = negate %9 : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  %11 = negate %10 : tensor<16x16xf32, <@m, [{"x"}, {}]>>
  return %a
}
"""


def both(module: Module) -> tuple[str, int, str, int]:
    """The program and rewrite count of lean sweeps, then of full sweeps (a copy of the
    rewrite table takes the full path)."""
    lean, full = module.clone(), module.clone()
    n_lean = canonicalize_module(lean)
    n_full = canonicalize_module(full, list(REWRITES))
    return print_module(lean), n_lean, print_module(full), n_full


def test_dead_chains_and_other_rewrites() -> None:
    lean, n_lean, full, n_full = both(parse_module(CHAINS))
    assert (lean, n_lean) == (full, n_full)
    assert n_lean >= 10  # the chains went, over several sweeps
    assert "negate" not in lean.split("func @f")[1].split("return")[0]


@pytest.mark.parametrize("index", range(len(split_input(FILECHECK.read_text(), True))))
def test_filecheck_cases(index: int) -> None:
    chunk = split_input(FILECHECK.read_text(), True)[index].text
    lean, n_lean, full, n_full = both(parse_module(chunk))
    assert (lean, n_lean) == (full, n_full)


EXAMPLES = sorted((ROOT / "examples").glob("*.mlir"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_zoo_after_lower_collectives(path: Path) -> None:
    module = parse_module(path.read_text(), str(path))
    PassManager(parse_pipeline(BEFORE)).run(module, PassContext())
    lean, n_lean, full, n_full = both(module)
    assert (lean, n_lean) == (full, n_full)
