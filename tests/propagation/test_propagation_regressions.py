"""Minimised programs where shardc once disagreed with jaxlib's Shardy (tests/data/shardy_regressions/),
checked without jaxlib: one value's sharding as Shardy gives it (test_shardy_live.py compares every
value live). All four are about when a use by a dead op stops counting for the single-use
op-priority stage (docs/propagation.md, "Dead ops")."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardc.ir.parser import parse_module
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline

DATA = Path(__file__).parent.parent / "data" / "shardy_regressions"


@pytest.mark.parametrize(
    "name, value, expected",
    [
        # The dead user is erased after the single-use op was first looked at in the stage.
        ("dead_user_single_use.mlir", "%y", '<@mesh, [{"a2", ?}, {?}]>'),
        ("dead_dot_user_single_use.mlir", "%y", '<@mesh, [{"a2", ?}, {?}]>'),
        # ...it no longer counts in a later stage (here: the p1 round).
        ("dead_user_priority_round.mlir", "%y", '<@mesh, [{?}, {"a2", "a0", ?}]>'),
        # The dead users are erased before the single-use op is first looked at.
        ("dead_users_before_single_use.mlir", "%0", '<@mesh, [{"a2":(1)2, ?}]>'),
    ],
)
def test_dead_user_and_single_use_stage(name: str, value: str, expected: str) -> None:
    load_all_passes()
    module = parse_module((DATA / name).read_text(), name)
    PassManager(parse_pipeline("propagation-pipeline")).run(module, PassContext())
    main = module.functions["main"]
    if value == "%y":
        mapping = main.args[1].mapping
    else:
        mapping = list(main.body)[int(value[1:])].results[0].mapping
    assert str(mapping) == expected
