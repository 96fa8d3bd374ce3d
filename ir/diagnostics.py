"""Locations and the user-facing error hierarchy.

Every error a user can cause is a `ShardcError`. It carries an optional `Location` and renders
MLIR-style::

    model.mlir:3:14: error: 'dot_general' op operand 1 has rank 3, expected 2
      %0 = dot_general %x, %w {...} : tensor<8x16xf32>
                   ^
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, init=False)
class Location:
    """A point in a source file: `loc("model.mlir":3:14)`. Lines and columns count from 1."""

    file: str
    line: int
    col: int

    def __init__(self, file: str, line: int, col: int) -> None:
        # Each field set through its slot (a frozen dataclass's own __init__ calls
        # object.__setattr__ per field, 3x the cost): an import makes one per op.
        _SET_FILE(self, file)
        _SET_LINE(self, line)
        _SET_COL(self, col)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


_SET_FILE = Location.file.__set__  # type: ignore[attr-defined]
_SET_LINE = Location.line.__set__  # type: ignore[attr-defined]
_SET_COL = Location.col.__set__  # type: ignore[attr-defined]


UNKNOWN_LOCATION = Location("<unknown>", 0, 0)


class ShardcError(Exception):
    """Base of every error a user can cause. `render()` gives the MLIR-style message."""

    kind = "error"

    def __init__(self, message: str, loc: Location | None = None, *, source: str | None = None):
        super().__init__(message)
        self.message = message
        self.loc = loc
        # The full text of the file `loc` points into, when known: used to print the line.
        self.source = source

    def with_location(self, loc: Location | None, source: str | None = None) -> ShardcError:
        """Attach a location if this error has none yet (errors raised deep in the IR)."""
        if self.loc is None and loc is not None:
            self.loc = loc
        if self.source is None:
            self.source = source
        return self

    def render(self) -> str:
        if self.loc is None or self.loc.line <= 0:
            return f"error: {self.message}"
        text = f"{self.loc}: error: {self.message}"
        if self.source is not None:
            lines = self.source.splitlines()
            if 1 <= self.loc.line <= len(lines):
                line = lines[self.loc.line - 1]
                caret = " " * (max(self.loc.col, 1) - 1) + "^"
                text += f"\n{line}\n{caret}"
        return text

    def __str__(self) -> str:
        return self.render()


class ParseError(ShardcError):
    """The text is not valid shardc IR (or StableHLO) syntax."""


class VerifyError(ShardcError):
    """The IR is well-formed text but breaks an op's or a type's rules."""


class ShardingError(ShardcError):
    """A sharding is invalid for its mesh or tensor (unknown axis, duplicate axis, ...)."""


class ConversionError(ShardcError):
    """A conversion between sharding forms would lose information."""


class PassError(ShardcError):
    """A pass could not complete (names the pass in its message)."""


class ExecutionError(ShardcError):
    """Running a program failed for a reason the user can fix (missing input, bad shape)."""
