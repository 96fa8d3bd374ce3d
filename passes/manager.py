"""Passes, their registry, pipeline text and the pass manager.

A pass is a frozen dataclass whose fields are its options, registered by name::

    @register_pass("propagate")
    @dataclass(frozen=True)
    class Propagate(Pass):
        strategy: str = "aggressive"
        def run(self, module, ctx): ...

A pipeline is text: `"propagate{strategy=basic},insert-reshards"`; MLIR's wrapper
`builtin.module(...)` is accepted too. Aliases map other spellings (Shardy's `sdy-*` names)
to a pass with preset options.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from shardc.ir.core import Module
from shardc.ir.diagnostics import PassError, ShardcError
from shardc.ir.verifier import verify_module


@dataclass
class Warning_:
    """A warning a pass reports (printed by the CLI, listed in the JSON report)."""

    message: str
    loc: Any = None

    def render(self) -> str:
        where = f"{self.loc}: " if self.loc is not None and getattr(self.loc, "line", 0) else ""
        return f"{where}warning: {self.message}"


@dataclass
class PassContext:
    """What passes share across a pipeline run: options, warnings and report data."""

    strict: bool = False
    explain: bool = False
    verify_each: bool = True
    warnings: list[Warning_] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)

    def warn(self, message: str, loc: Any = None) -> None:
        self.warnings.append(Warning_(message, loc))


class Pass:
    """Base of every pass. Subclasses are frozen dataclasses; `name` is set by registration."""

    name: ClassVar[str] = "<unregistered>"

    def run(self, module: Module, ctx: PassContext) -> None:
        raise NotImplementedError

    def text(self) -> str:
        opts = [
            f"{f.name.replace('_', '-')}={_format_option(getattr(self, f.name))}"
            for f in dataclasses.fields(self)  # type: ignore[arg-type]
            if getattr(self, f.name) != f.default
        ]
        return self.name + ("{" + ",".join(opts) + "}" if opts else "")


def _format_option(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


PASSES: dict[str, type[Pass]] = {}
ALIASES: dict[str, tuple[str, dict[str, str]]] = {}
DESCRIPTIONS: dict[str, str] = {}


def register_pass(name: str) -> Callable[[type[Pass]], type[Pass]]:
    def wrap(cls: type[Pass]) -> type[Pass]:
        assert name not in PASSES, name
        cls.name = name  # type: ignore[misc]
        PASSES[name] = cls
        DESCRIPTIONS[name] = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        return cls

    return wrap


def register_alias(alias: str, target: str, **options: str) -> None:
    """`register_alias("sdy-basic-propagate", "propagate", strategy="basic")`."""
    ALIASES[alias] = (target, options)


def _coerce_option(pass_name: str, f: dataclasses.Field, raw: str, hints: dict[str, Any]) -> Any:
    kind = hints.get(f.name, f.type)
    try:
        if kind is bool or kind == "bool":
            if raw not in ("true", "false", "1", "0"):
                raise ValueError
            return raw in ("true", "1")
        if kind is int or kind == "int":
            return int(raw)
        if kind is float or kind == "float":
            return float(raw)
    except ValueError:
        raise PassError(f"pass '{pass_name}' option '{f.name}' cannot be {raw!r}") from None
    return raw


def make_pass(name: str, options: dict[str, str]) -> Pass:
    if name not in PASSES and name not in ALIASES and not _loaded:
        load_pass(name)
    if name in ALIASES:
        target, preset = ALIASES[name]
        merged = dict(preset)
        merged.update(options)
        return make_pass(target, merged)
    cls = PASSES.get(name)
    if cls is None:
        known = ", ".join(sorted(set(PASSES) | set(ALIASES)))
        raise PassError(f"unknown pass '{name}' (known passes: {known})")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for key, raw in options.items():
        key_py = key.replace("-", "_")
        f = fields.get(key_py)
        if f is None:
            opts = ", ".join(k.replace("_", "-") for k in fields) or "none"
            raise PassError(f"pass '{name}' has no option '{key}' (options: {opts})")
        kwargs[key_py] = _coerce_option(name, f, raw, hints)
    try:
        return cls(**kwargs)
    except ShardcError:
        raise
    except (TypeError, ValueError) as e:
        raise PassError(f"pass '{name}': {e}") from None


def parse_pipeline(text: str) -> list[Pass]:
    """`"a{x=1,y=two},b"` -> [A(x=1, y="two"), B()]. Accepts `builtin.module(...)` wrappers."""
    text = text.strip()
    for wrapper in ("builtin.module(", "func.func("):
        while text.startswith(wrapper) and text.endswith(")"):
            text = text[len(wrapper) : -1].strip()
    passes: list[Pass] = []
    i, n = 0, len(text)
    while i < n:
        j = i
        while j < n and text[j] not in ",{":
            j += 1
        name = text[i:j].strip()
        options: dict[str, str] = {}
        if j < n and text[j] == "{":
            k = _closing_brace(text, j)
            if k < 0:
                raise PassError(f"pipeline option list for '{name}' is missing its '}}'")
            key = ""
            for item in _option_items(text[j + 1 : k]):
                if "=" not in item or item[0] in "'\"":
                    if not key:
                        raise PassError(f"pipeline option '{item}' of '{name}' must be "
                                        "key=value")
                    options[key] += "," + _unquoted(item)  # `filter=dot,pad`: one value
                    continue
                key, value = item.split("=", 1)
                key = key.strip()
                options[key] = _unquoted(value.strip())
            j = k + 1
        if not name:
            raise PassError(f"empty pass name in pipeline {text!r}")
        passes.append(make_pass(name, options))
        while j < n and text[j] in ", ":
            j += 1
        i = j
    return passes


def run_passes(text: str, module: Module, ctx: PassContext | None = None) -> None:
    """Run the pipeline `text` on `module` as one step of the calling pass (no verification
    or timing between its passes). A pass runs a later stage's passes this way, by name, never
    by importing them (docs/architecture.md): `run_passes("close-shardings", module, ctx)`."""
    ctx = PassContext() if ctx is None else ctx
    for p in parse_pipeline(text):
        p.run(module, ctx)


def _closing_brace(text: str, start: int) -> int:
    """The index of the `}` closing the option list opened at `start` (quotes skipped)."""
    quote = ""
    for i in range(start + 1, len(text)):
        c = text[i]
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "}":
            return i
    return -1


def _option_items(text: str) -> list[str]:
    """Option items split at commas and spaces outside quotes (`filter='a, b' x=1`)."""
    items, cur, quote = [], "", ""
    for c in text:
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in ", ":
            if cur:
                items.append(cur)
            cur = ""
            continue
        cur += c
    if cur:
        items.append(cur)
    return items


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


class PassManager:
    """Runs passes in order; verifies after each, optionally prints IR and times them."""

    def __init__(
        self,
        passes: list[Pass],
        *,
        verify_each: bool = True,
        print_after: Callable[[Pass, Module], None] | None = None,
    ):
        self.passes = passes
        self.verify_each = verify_each
        self.print_after = print_after

    def run(self, module: Module, ctx: PassContext | None = None) -> PassContext:
        ctx = ctx or PassContext(verify_each=self.verify_each)
        for p in self.passes:
            start = time.perf_counter()
            try:
                p.run(module, ctx)
            except ShardcError as e:
                if not e.message.startswith("in pass"):
                    e.message = f"in pass '{p.name}': {e.message}"
                raise
            ctx.timings[p.name] = ctx.timings.get(p.name, 0.0) + time.perf_counter() - start
            if self.verify_each:
                verify_after(module, f"pass '{p.name}'")
            if self.print_after is not None:
                self.print_after(p, module)
        return ctx


def verify_after(module: Module, what: str) -> None:
    """Verify `module`, a failure a `PassError` saying it is invalid after `what`."""
    try:
        verify_module(module)
    except ShardcError as e:
        raise PassError(f"IR is invalid after {what}: {e.message}", e.loc) from None


_loaded = False


def load_all_passes() -> None:
    """Import every pass module of every stage so its registration runs (`make_pass` imports
    the one module a name it does not know is registered in, so callers need not). Pass
    modules sit directly in a stage folder (`shardc.passes.STAGES`); the folders below them are
    the passes' libraries."""
    global _loaded
    if _loaded:
        return
    import importlib
    import pkgutil

    from shardc.passes import STAGES

    for stage in STAGES:
        package = importlib.import_module(f"shardc.passes.{stage}")
        for info in pkgutil.iter_modules(package.__path__):
            if not info.ispkg:
                importlib.import_module(f"shardc.passes.{stage}.{info.name}")
    _loaded = True


def load_pass(name: str) -> None:
    """Import the module that registers the pass (or alias) `name`, found by reading the pass
    modules' text for its `register_pass`/`register_alias` line; every module when no text
    names it (a name registered some other way, or none: `make_pass` then lists the known
    ones). Importing only what a pipeline names saves `shardc.jit`'s first call ~0.3 s of
    importing every stage."""
    module = _pass_modules().get(name)
    if module is None:
        load_all_passes()
        return
    import importlib

    importlib.import_module(module)
    if name not in PASSES and name not in ALIASES:
        load_all_passes()


# `register_pass("name")` / `register_alias("name", ...)` at the start of a line, as written
# (tests/test_house.py checks that every registered name is found so).
_REGISTRATION = re.compile(r'^@?register_(?:pass|alias)\(\s*"([^"]+)"', re.M)


def registered_names(text: str) -> list[str]:
    """`_REGISTRATION.findall(text)`, tried only where `register_` starts a line (or follows
    an `@` that does): the expression alone, tried at every character of the ~90 pass
    modules' text, was ~3% of the instructions of a 2-layer Llama step's first compile."""
    names: list[str] = []
    end = 0  # (where the last match ended: findall's matches do not overlap)
    at = text.find("register_")
    while at != -1:
        start = at - 1 if at and text[at - 1] == "@" else at
        if start >= end and (start == 0 or text[start - 1] == "\n"):
            found = _REGISTRATION.match(text, start)
            if found is not None:
                names.append(found.group(1))
                end = found.end()
        at = text.find("register_", at + 1)
    return names


@functools.cache
def _pass_modules() -> dict[str, str]:
    """Every pass and alias name the pass modules' text registers -> its module."""
    import importlib
    import pkgutil
    from pathlib import Path

    from shardc.passes import STAGES

    found: dict[str, str] = {}
    for stage in STAGES:
        package = importlib.import_module(f"shardc.passes.{stage}")
        for info in pkgutil.iter_modules(package.__path__):
            if info.ispkg:
                continue
            module = f"shardc.passes.{stage}.{info.name}"
            folder = getattr(info.module_finder, "path", None)
            try:
                text = (Path(folder) / f"{info.name}.py").read_text() if folder else None
            except OSError:
                text = None
            if text is None:  # (not a source file on disk: its registrations by importing it)
                importlib.import_module(module)
                continue
            for name in registered_names(text):
                found.setdefault(name, module)
    return found
