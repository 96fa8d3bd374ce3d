"""Minimised programs where shardc once disagreed with jaxlib's Shardy (tests/data/shardy_regressions/),
checked without jaxlib: the sharding of `%y` that Shardy gives (test_shardy_live.py compares all
values live)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ir.parser import parse_module
from passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline

DATA = Path(__file__).parent / "data" / "shardy_regressions"


@pytest.mark.parametrize(
    "name, expected",
    [
        # A dead user counts until the op-priority stage after the one that erased it.
        ("dead_user_single_use.mlir", '<@mesh, [{"a2", ?}, {?}]>'),
        ("dead_dot_user_single_use.mlir", '<@mesh, [{"a2", ?}, {?}]>'),
        # ...but no longer in a later user-priority round.
        ("dead_user_priority_round.mlir", '<@mesh, [{?}, {"a2", "a0", ?}]>'),
    ],
)
def test_dead_user_counts_until_next_stage(name: str, expected: str) -> None:
    load_all_passes()
    module = parse_module((DATA / name).read_text(), name)
    PassManager(parse_pipeline("propagation-pipeline")).run(module, PassContext())
    assert str(module.functions["main"].args[1].mapping) == expected
