"""Minimising a failing fuzz input: delete lines, then characters, while it still fails the same
way (same outcome kind, same first words of the message).

    small = minimise(text, lambda t: same_failure(judge(t), outcome))

Line deletion first (ddmin over chunks of lines, halving down to single lines), then single
tokens (names, numbers, punctuation; whitespace is kept so the result stays readable). The judge is called at most `budget` times.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from tests.fuzzing.oracle import Outcome

_NUMBERS = re.compile(r"\d+(\.\d+)?")
_TOKENS = re.compile(r"\s+|[%@\w.]+|.")


def signature(outcome: Outcome) -> tuple[str, str]:
    """What makes two failures the same: the kind and the message with numbers blanked."""
    words = _NUMBERS.sub("N", outcome.message.split(": ", 1)[-1])
    return outcome.kind, words[:60]


def same_failure(got: Outcome, want: Outcome) -> bool:
    return got.bad and signature(got) == signature(want)


def minimise(text: str, fails: Callable[[str], bool], budget: int = 400) -> str:
    """The smallest text found that still `fails` (module docstring)."""
    calls = 0

    def check(candidate: str) -> bool:
        nonlocal calls
        calls += 1
        return fails(candidate)

    lines = text.splitlines(keepends=True)
    chunk = max(1, len(lines) // 2)
    while chunk >= 1 and calls < budget:
        i, shrunk = 0, False
        while i < len(lines) and calls < budget:
            candidate = lines[:i] + lines[i + chunk :]
            if candidate and check("".join(candidate)):
                lines, shrunk = candidate, True
            else:
                i += chunk
        if not shrunk:
            chunk //= 2
    tokens = _TOKENS.findall("".join(lines))
    i = 0
    while i < len(tokens) and calls < budget:
        candidate = tokens[:i] + tokens[i + 1 :]
        if tokens[i].strip() and "".join(candidate).strip() and check("".join(candidate)):
            tokens = candidate
        else:
            i += 1
    text = "".join(tokens)
    return text
