"""StableHLO + sdy text as JAX prints it -> `Module`, a line at a time: the fast path of
`import_stablehlo` (importer.py).

JAX prints one op per line, and a model's layers repeat the same few hundred op lines with
other value names (a 2-layer and a 128-layer Llama step both have 217 distinct op lines once
the `%names` are taken out). So:

- an op on one line is keyed by its shape (its text without value names and `loc(...)`,
  which also says how many of its names are results) and by its operands' types: the first
  op of a key is read by line_records.py or the grammar (`reader.read_item`, the same rules
  and converters as the whole-text path, its tokens located in the whole text), and every
  later op of that key is the same native op (name, attributes, result types) on other
  values, located at its own line;
- an op over several lines is read by line_regions.py (a generic op with one region of
  one-line ops, as JAX prints a scatter), meshes and function headers by line_headers.py,
  attribute dictionaries by line_attrs.py (once per distinct text); what they do not read,
  by the grammar, item by item (which loads lark: tokens.py);
- an op is verified once per key, when its first op is read, if its verifier reads nothing
  but the op itself (its name, operand and result types and attributes) and the functions it
  names by symbol: every later op of the key has the same inputs. Ops whose verifier reads
  their function, region or the uses of values (returns, data-flow edges, manual
  computations) are verified again with the module.

On anything else, and on any error, it raises `Unsupported` and the whole text is read by
the grammar (reader.py + builder.py), which reports the error located as it always has: so
this path only has to build, for what it accepts, exactly the module the grammar builds
(tests/test_stablehlo_line_reader.py compares the two on every test input and JAX program).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from itertools import accumulate, repeat
from typing import Any

from shardc.ir.core import Module, Operation, Value
from shardc.ir.diagnostics import Location
from shardc.ir.line_values import Unsupported
from shardc.ir.ops import OPS, verify_operation
from shardc.ir.verifier import check_result_meshes
from shardc.stablehlo.builder import FunctionBuilder, ModuleBuilder
from shardc.stablehlo.line_headers import (
    HeaderReader,
    patterns,
    read_item,
)
from shardc.stablehlo.line_records import RESULT, read_record, record_at, split_line
from shardc.stablehlo.line_regions import read_region_op
from shardc.stablehlo.records import (
    DictRec,
    FuncRec,
    ModuleRec,
)
from shardc.stablehlo.tokens import new_token

_STRING = r'"(?:[^"\\\n]|\\.)*"'
_STRINGS = re.compile(_STRING)
_VALUE = r"%[\w$.\-]+"
_USE_SPLIT = re.compile(rf"({_VALUE}(?:#\d+)?)")
_USE_OR_STRING = re.compile(rf"{_STRING}|({_VALUE}(?:#\d+)?)")
_NAME_SPLIT = re.compile(r"%([\w$.\-]+(?:#\d+)?)")  # (as _USE_SPLIT, without the `%`)
_NAME_OR_STRING = re.compile(rf"{_STRING}|%([\w$.\-]+(?:#\d+)?)")
_ONE = (1,)  # the result counts of a shape with one result


def _name_to_mark(m: re.Match) -> str:
    return m.group(0) if m.group(1) is None else "%"


# A line that goes on with the op of the line before it (a region's keywords, or its start).
_CONTINUES = ("cond", "do", "reducer", "(", "{", "^")
# The start of a line that does not begin with a `%` name (after its indentation).
_NOT_A_RESULT_LINE = re.compile(r"\n(?![ \t]*%)")
# Verifiers (and result-type inference) that read more than the op: its function, its region
# or the uses of values. An op of these is verified every time (module docstring). A verifier
# that reads only the functions the op names by symbol (a call's callee, a reduce's or sort's
# body in ir/ops/func.py and scalar_bodies.py) gives every op of a key the same answer: the
# key's text names the same function, and every signature is declared before a body is read.
_CONTEXT_MODULES = frozenset(f"shardc.ir.ops.{m}" for m in (
    "control", "data_flow", "manual", "spmd"))
_READS_FUNCTION = frozenset({"return"})  # (its function's result types)


def _reads_context(name: str) -> bool:
    d = OPS.get(name)
    return d is None or name in _READS_FUNCTION or any(
        fn is not None and fn.__module__ in _CONTEXT_MODULES for fn in (d.verify, d.infer))


def _balanced(line: str) -> bool:
    if '"' in line:
        line = _STRINGS.sub("", line)
    return line.count("{") == line.count("}") and line.count("(") == line.count(")")


def _braces(line: str) -> int:
    if '"' in line:
        line = _STRINGS.sub("", line)
    return line.count("{") - line.count("}")


_NOT_BRACKETS = re.compile(r"[^\[\](){}]+")
_STEP = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


def _deepest(line: str) -> int:
    """How deep the brackets of `line` nest (strings skipped), as check_source counts: the
    highest running sum of its brackets (+1 open, -1 close), summed in C (a long signature
    has thousands)."""
    if '"' in line:
        line = _STRINGS.sub("", line)
    return max(accumulate(map(_STEP.__getitem__, _NOT_BRACKETS.sub("", line)), initial=0))


def _nesting(line: str) -> int:
    """How many brackets `line` leaves open (outside strings)."""
    if '"' in line:
        line = _STRINGS.sub("", line)
    return sum(line.count(c) for c in "([{") - sum(line.count(c) for c in ")]}")


class _Template:
    """What the first op of a key built: the native op other ops of the key repeat."""

    __slots__ = ("name", "attrs", "types", "operand_types", "verified")

    def __init__(self, op: Operation, verified: bool):
        self.name = op.name
        self.attrs = dict(op.attributes)
        self.types = [r.type for r in op.results]
        self.operand_types = [v.type for v in op.operands]  # keeps the key's ids alive
        self.verified = verified


class LineReader(HeaderReader):
    """One text, read line by line; `read()` returns the module (not yet verified as a
    whole: see `repeats`) or raises `Unsupported`."""

    def __init__(self, text: str, filename: str, builder: ModuleBuilder):
        self.text = text
        self.filename = filename
        self.b = builder
        self.p = patterns()
        self.limit = builder.limits.depth
        self.lines = text.split("\n")
        # Where each line starts in the text (and, last, the end of the text plus one).
        self.starts: list[int] = list(accumulate([len(line) + 1 for line in self.lines],
                                                 initial=0))
        self.dicts: dict[str, DictRec] = {}
        self.templates: dict[tuple, _Template | None] = {}
        # The result counts of each shape's results (its first names, as in `%a, %b:2 = ...`)
        # and the column its op starts at.
        self.heads: dict[str, tuple[tuple[int, ...], int]] = {}
        # One object per distinct type, so that keys (which hold the operands' types by
        # identity) repeat whenever the types do.
        self.types: dict[Any, Any] = {}
        # Where the text next has a `{`, `}`, `"`, and ("\n") a line not starting with a `%`
        # name, from where each was last looked for (`_plain_end`).
        self.next_at: dict[str, int] = {}
        # Ops built from a template whose verification holds for them (module docstring).
        self.repeats: set[Operation] = set()
        # Whether an op name's verification holds for every op of a key (`_reads_context`).
        self.context: dict[str, bool] = {}
        self.depth = 0  # a bound on the text's bracket nesting (limits.check_source)

    # ----- the text's structure ----------------------------------------------------------------

    def read(self) -> Module:
        """Meshes and function signatures first, then the bodies (as builder.py's
        `ModuleBuilder.build` does)."""
        lines = self.lines
        if "\r" in self.text or "//" in self.text:
            raise Unsupported("carriage returns or comments")
        items: list[Any] = []
        module_rec: ModuleRec | None = None
        in_module = closed = trailing = False  # (the grammar's `start` rule)
        i, n = 0, len(lines)
        while i < n:
            line = lines[i]
            stripped = line.strip()
            if not stripped:
                i += 1
                continue
            if len(line) + 1 > self.limit:
                self._bound(1, line)
            if stripped.startswith("#loc") and not in_module:
                m = self.p.loc_alias.match(stripped)
                if m is None:
                    raise Unsupported("location alias")
                self.b.locs.aliases[m.group(1)] = m.group(2)
                trailing = trailing or bool(items) or module_rec is not None
            elif trailing or closed:
                raise Unsupported("items after the module")
            elif stripped.startswith("func.func"):
                frec, i = self._function(i)
                items.append(frec)
                continue
            elif stripped.startswith("sdy.mesh"):
                items.append(self._mesh(i))
            elif stripped.startswith("module") and module_rec is None and not items:
                module_rec = self._module_header(i)
                in_module = True
            elif in_module and self.p.close.match(line):
                in_module, closed = False, True
            else:
                raise Unsupported(stripped)
            i += 1
        if in_module:
            raise Unsupported("unclosed module")
        if module_rec is None:
            module_rec = ModuleRec(None, None, items)
        module_rec.items = items
        for frec, func in self.b.declare(module_rec):
            self._body(frec, FunctionBuilder(self.b, func))
        return self.b.module

    def _body_lines(self, i: int, f: FuncRec) -> int:
        """Find the ops of the body starting at line `i`: `f.ops` gets the line of each
        one-line op but a return, and a `(first, last, one_line)` triple of lines for the
        others; returns the line after the closing brace. (A run of lines that start with a
        `%` name and have no brace or string, and as many `(` as `)` each, is taken whole: what
        the tests below find of each of them when the line after the run does not go on.)"""
        lines, n, limit = self.lines, len(self.lines), self.limit
        per_line = i  # (the lines before this one are known not to be a plain run)
        while i < n:
            if i >= per_line:
                end = self._plain_end(i)
                if end < n and lines[end].lstrip().startswith(_CONTINUES):
                    end -= 1  # (the run's last op goes on: the tests below read it)
                if end > i:
                    run = lines[i:end]
                    if list(map(str.count, run, repeat("("))) != list(
                            map(str.count, run, repeat(")"))):
                        per_line = end  # (an op goes on, or is broken: line by line)
                    else:
                        if max(map(len, run)) + 2 > limit:
                            for line in run:
                                if len(line) + 2 > limit:
                                    self._bound(2, line)
                        f.ops.extend(range(i, end))
                        i = end
                        continue
            line = lines[i]
            stripped = line.lstrip()
            if not stripped:
                i += 1
                continue
            if stripped[0] == "}":
                m = self.p.close.match(line)
                if m is None:
                    raise Unsupported("function end")
                f.loc = None
                if m.group(1):
                    at = m.start(1)
                    f.loc = new_token("LOC", m.group(1), self.starts[i] + at, i + 1, at + 1)
                return i + 1
            first = i
            if "{" in line or "}" in line or '"' in line:
                depth = _braces(line)
                one_line = depth == 0 and _balanced(line)
            else:
                depth, one_line = 0, line.count("(") == line.count(")")
            if len(line) + 2 > limit:  # (a line nests at most a bracket a character)
                self._bound(2, line)
            i += 1
            # The op goes on while its braces are open or the next line continues it.
            if depth > 0 or (i < n and lines[i].lstrip().startswith(_CONTINUES)):
                one_line, nesting = False, _nesting(line)
                while i < n and (depth > 0 or lines[i].lstrip().startswith(_CONTINUES)):
                    depth += _braces(lines[i])
                    self._bound(2 + nesting, lines[i])
                    nesting += _nesting(lines[i])
                    i += 1
            if one_line and not stripped.startswith("return"):
                f.ops.append(first)
            else:
                f.ops.append((first, i - 1, one_line))
        raise Unsupported("unclosed function")

    def _plain_end(self, i: int) -> int:
        """The first line from `i` on that has a brace or a string or does not start with a
        `%` name. (Each is found in C, from the last place it was found: the text is searched
        once whatever the number of runs.)"""
        text, pos, found = self.text, self.starts[i], self.next_at
        end = len(text)
        for c in '{}"\n':
            at = found.get(c, -1)
            if at < pos:
                if c == "\n":
                    m = _NOT_A_RESULT_LINE.search(text, pos - 1)
                    at = len(text) if m is None else m.start() + 1
                else:
                    at = text.find(c, pos)
                    at = len(text) if at < 0 else at
                found[c] = at
            end = min(end, at)
        return bisect_right(self.starts, end) - 1

    def _bound(self, outer: int, line: str) -> None:
        """Raise the bound on the text's bracket nesting (limits.check_source) for `line`,
        inside `outer` open brackets: at most one more per bracket it opens, or, when that is
        over the limit (a long signature), the deepest its brackets nest."""
        depth = outer + line.count("(") + line.count("[") + line.count("{")
        if depth > self.limit:
            depth = outer + _deepest(line)
        if depth > self.depth:
            self.depth = depth

    # ----- ops -----------------------------------------------------------------------------------

    def _intern(self, values: list[Value]) -> None:
        types = self.types
        for v in values:
            v.type = types.setdefault(v.type, v.type)

    def _body(self, f: FuncRec, fb: FunctionBuilder) -> None:
        """Build the ops of `f`'s body. A one-line op is built here from its shape (the line
        without value names and `loc(...)`, which says how many of its names are results and
        the op's column) and its operands' types: the key of the template it repeats. A shape
        or key seen for the first time is read in full (`_new_key`); other ops, by `_op`.
        (One loop, its lookups in locals: it runs once per line of the text.)"""
        self._intern(fb.func.args)
        for a, value in zip(f.args, fb.func.args):
            fb.define(str(a.tok)[1:], value, a.tok)
        lines, heads, templates, repeats = self.lines, self.heads, self.templates, self.repeats
        scope, unsupported, body = fb.scope, self.b.unsupported, fb.func.body
        filename, loc_tail = self.filename, self.p.loc_tail
        append, add_repeat = body.append, repeats.add
        for i in f.ops:
            if i.__class__ is not int:
                self._op(i, fb)
                continue
            line = lines[i]
            text, loc_text = line, None
            if line.endswith(")") and "loc(" in line:
                m = loc_tail.search(line)
                if m is not None:
                    loc_text = m.group(1)
                    text = line[: m.start()]
            if '"' in text:
                names = [u for u in _NAME_OR_STRING.findall(text) if u]
                shape = _NAME_OR_STRING.sub(_name_to_mark, text)
            else:
                parts = _NAME_SPLIT.split(text)  # text, name, text, name, ..., text
                names = parts[1::2]  # (without their `%`)
                shape = "%".join(parts[0::2])
            head = heads.get(shape)
            if head is None:
                self._new_key(i, fb, shape)
                continue
            counts, col = head
            operands: list[Value] = []
            key: list[Any] = [shape]  # and the operands' types (interned: by identity)
            for name in names[len(counts):] if counts else names:
                found = scope.get(name)
                if found is None or found.__class__ is tuple or "#" in name:
                    found = self._indexed(scope, "%" + name)
                operands.append(found)
                key.append(id(found.type))
            if unsupported and any(v in unsupported for v in operands):
                raise Unsupported("an operand of an unsupported type")
            template = templates.get(tuple(key), False)
            if template is False:
                self._new_key(i, fb, shape)
                continue
            if template is None:  # a key whose ops are read one by one
                self._op((i, i, True), fb)
                continue
            loc, written = None, False
            if loc_text is not None:
                loc = self.b.locs.resolve(loc_text)
                written = loc is not None
            if loc is None:
                loc = Location(filename, i + 1, col)
            op = Operation(template.name, operands, template.types, template.attrs, loc, written)
            append(op)
            if template.verified:
                add_repeat(op)
            if counts is _ONE:
                name = names[0]
                if name in scope or "#" in name:  # (`%a#1 = ...` has the shape of `%a = ...`)
                    raise Unsupported(f"result %{name}")
                r = op.results[0]
                r.name_hint = name
                scope[name] = r
                continue
            at = 0
            for name, count in zip(names, counts):
                if name in scope or "#" in name:
                    raise Unsupported(f"result %{name}")
                if count == 1:
                    r = op.results[at]
                    r.name_hint = name
                    scope[name] = r
                else:
                    scope[name] = tuple(op.results[at : at + count])
                at += count
        for error in self.b.deferred_types.pop(fb.func.name, []):
            raise error

    def _op(self, lines: tuple[int, int, bool], fb: FunctionBuilder) -> None:
        """The op on lines `first..last` read as a record: a return by line_records.py when it
        can, else (an op over several lines, or one of a key read one by one) by the grammar."""
        first, last, one_line = lines
        begin = self.starts[first]
        rec = None
        line = self.lines[first]
        stripped = line.lstrip()
        if one_line and stripped.startswith("return"):  # (columns count from the line's start)
            # (its `loc(...)`, as JAX prints it with debug info, taken off as `_first` does)
            m = self.p.loc_tail.search(line) if line.endswith(")") and "loc(" in line else None
            rec = read_record(line if m is None else line[: m.start()],
                              len(line) - len(stripped), begin, first + 1)
            if rec is not None and m is not None:
                at = m.start(1)
                rec.loc = new_token("LOC", m.group(1), begin + at, first + 1, at + 1)
        if rec is None and not one_line:
            rec = read_region_op(self.lines, self.starts, first, last, self.p.loc_tail)
        if rec is None:
            end = self.starts[last] + len(self.lines[last])
            rec = read_item("op", self.text, begin, end, first + 1, begin)
        self._intern(fb.add(rec).results)

    def _new_key(self, i: int, fb: FunctionBuilder, shape: str) -> None:
        """Read the op on line `i` (`_first`) as the template of its key (`shape` and its
        operands' types), and note how many results the shape's names begin with."""
        line = self.lines[i]
        head, body_at, loc_at = split_line(line, self.p.loc_tail)
        results: list[tuple[str, int]] = []
        if head is not None:
            results = [(name[1:], int(count) if count else 1)
                       for name, count in RESULT.findall(head.group(1))]
        body = line[body_at:loc_at]
        names = ([u for u in _USE_OR_STRING.findall(body) if u] if '"' in body
                 else _USE_SPLIT.split(body)[1::2])
        operands = [fb.scope.get(use[1:]) if "#" not in use else None for use in names]
        operands = [v if v.__class__ is Value else self._indexed(fb.scope, use)
                    for v, use in zip(operands, names)]
        if self.b.unsupported and any(v in self.b.unsupported for v in operands):
            raise Unsupported("an operand of an unsupported type")
        counts = tuple(c for _, c in results)
        # (The shape keeps the line's indentation, so it says the op's column too.)
        col = len(line) - len(line.lstrip()) + 1
        self.heads[shape] = (_ONE if counts == _ONE else counts, col)
        key = (shape, *[id(v.type) for v in operands])
        self.templates[key] = self._first(i, fb, names, results, head, body_at, loc_at)

    @staticmethod
    def _indexed(scope: dict[str, Any], use: str) -> Value:
        """The value `%name` or `%name#i` names, as FunctionBuilder.lookup finds it."""
        base, _, index = use[1:].partition("#")
        found = scope.get(base)
        if isinstance(found, tuple):
            found = found[int(index or 0)] if int(index or 0) < len(found) else None
        elif index and index != "0":
            found = None
        if found is None:
            raise Unsupported(f"use of {use}")
        return found

    def _first(self, i: int, fb: FunctionBuilder, names: list[str],
               results: list[tuple[str, int]], head: re.Match | None, body_at: int,
               loc_at: int) -> _Template | None:
        """Read the op at line `i` (line_records.py, else the grammar); the template of its
        key, or None when its record is not what the line's names say (its ops are then read
        one by one). `body_at`, `loc_at`: where the op's name and its `loc(...)` are."""
        line, start, lineno = self.lines[i], self.starts[i], i + 1
        rec = record_at(line, start, lineno, head, body_at, loc_at)
        if rec is None:
            rec = read_item("op", self.text, start, start + len(line), lineno, start)
        op = fb.add(rec)
        self._intern(op.results)
        if (rec.regions or [str(t) for t in rec.operands] != names
                or [(str(t)[1:], c) for t, c in rec.results] != results
                or rec.name in ("sdy.data_flow_edge", "sdy.func_data_flow_edge")):
            return None
        verify_operation(op)  # coerces its attributes, as the module's verification would
        verified = self.context.get(op.name)
        if verified is None:
            verified = self.context[op.name] = not _reads_context(op.name)
        if verified:  # checked as verify_function would check it, the first of its key too
            check_result_meshes(self.b.module, op)
            self.repeats.add(op)
        return _Template(op, verified)
