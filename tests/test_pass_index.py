"""`make_pass` finds the module registering a pass by reading the pass modules' text
(passes/manager.py: `registered_names`, `_REGISTRATION`); the scan that tries the expression only
where `register_` starts a line finds what the expression finds everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardc.passes.manager import _REGISTRATION, registered_names

ROOT = Path(__file__).resolve().parent.parent
MODULES = sorted((ROOT / "passes").rglob("*.py"))

TEXTS = [
    "",
    'register_pass("a")',
    '@register_pass("a")\nclass A: ...\nregister_alias("b", "a")\n',
    '  register_pass("indented")\nx = "register_pass(\\"quoted\\")"\n',
    '@register_pass(\n    "split"\n)\n@@register_pass("twice")\n@register_passes("no")\n',
    'register_pass("unterminated\nregister_alias("c", "a")\n',
    'register_pass("a\nregister_pass("inside")")\nregister_alias("after", "a")',
    "\n\n@register_alias(  \"spaced\" , \"x\")\r\nregister_pass('single')\n",
]


@pytest.mark.parametrize("text", TEXTS)
def test_scan_finds_what_the_expression_finds(text: str) -> None:
    assert registered_names(text) == _REGISTRATION.findall(text)


def test_scan_of_every_pass_module() -> None:
    found = 0
    for path in MODULES:
        text = path.read_text()
        names = registered_names(text)
        assert names == _REGISTRATION.findall(text), path
        found += len(names)
    assert found > 50  # (the pass modules register their passes so)
