"""The StableHLO line reader (compiler/stablehlo/line_reader.py) is only a faster way to the
module the grammar builds: on every StableHLO input of the test suite it builds the same
module (text, locations, value names), or declines and the grammar reads the text; it never
accepts a text the grammar rejects."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardc.ir.diagnostics import ShardcError
from shardc.ir.printer import print_module
from shardc.stablehlo import importer
from shardc.stablehlo.importer import import_stablehlo

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted(
    p for folder in ("tests/data", "examples") for p in (ROOT / folder).rglob("*.mlir")
    if "stablehlo." in p.read_text() or "sdy." in p.read_text()
)


def _grammar(text: str, name: str):
    """`import_stablehlo` with the line reader turned off: the grammar's module or error."""
    saved = importer._read_lines
    importer._read_lines = lambda *a: None
    try:
        return import_stablehlo(text, name)
    finally:
        importer._read_lines = saved


def fingerprint(module) -> tuple:
    """Everything an import decides: the text, and what the text does not show."""
    ops = [op for f in module.functions.values() for op in f.body]
    return (
        print_module(module),
        [(op.loc, op.loc_written) for op in ops],
        [[r.name_hint for r in op.results] for op in ops],
        [(f.name, f.loc, f.loc_written, [a.name_hint for a in f.args], f.arg_labels)
         for f in module.functions.values()],
        dict(module.mesh_locs), sorted(module.attributes),
    )


def _both(text: str, name: str):
    """(line reader's module or None, grammar's fingerprint or its error message)."""
    fast = importer._read_lines(text, name, importer.DEFAULT_LIMITS)
    try:
        slow = fingerprint(_grammar(text, name))
    except ShardcError as e:
        slow = e.render() if hasattr(e, "render") else str(e)
    return fast, slow


def test_corpus_is_found():
    assert len(CORPUS) > 100


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(ROOT)))
def test_same_module_as_the_grammar(path):
    text = path.read_text()
    fast, slow = _both(text, path.name)
    if fast is None:
        return  # declined: the grammar reads it (whatever it says is import_stablehlo's answer)
    assert not isinstance(slow, str), f"the line reader accepts what the grammar rejects: {slow}"
    assert fingerprint(fast) == slow


def test_reads_what_jax_prints():
    """The JAX-lowered inputs are read line by line, not handed back to the grammar."""
    read = [p for p in CORPUS if importer._read_lines(p.read_text(), p.name,
                                                      importer.DEFAULT_LIMITS) is not None]
    names = {p.name for p in read}
    assert {"transformer_block.mlir", "mlp.debug_info.mlir"} <= names
    assert len(read) > len(CORPUS) // 2


def test_a_return_with_a_location_is_read_by_line(monkeypatch):
    """`return %2 : tensor<...> loc(#loc21)` (JAX with debug info) is read here, its location
    as the grammar reads it (test_same_module_as_the_grammar compares the modules)."""
    from shardc.stablehlo import line_reader

    text = (ROOT / "tests/data/stablehlo/extras/mlp.debug_info.mlir").read_text()
    assert "return %2 : tensor<16x32xf32> loc(#loc21)" in text
    asked = []
    monkeypatch.setattr(line_reader, "read_item", lambda rule, *a: asked.append(rule))
    module = importer._read_lines(text, "mlp.mlir", importer.DEFAULT_LIMITS)
    assert module is not None and asked == []
    def returns(m):
        return [(op.name, op.loc, op.loc_written)
                for op in (list(f.body)[-1] for f in m.functions.values())]

    ours = returns(module)
    assert ours == returns(_grammar(text, "mlp.mlir"))
    assert any(written for *_, written in ours)  # (`loc(#loc)` is unknown: not written)


def test_repeated_lines_are_built_once():
    """Ops that repeat a line (other value names) share the first one's verified template;
    the module's verification skips the ops verified so (the first of each key included),
    not the others (a return, whose check reads the function)."""
    text = (ROOT / "tests/data/stablehlo/transformer_block.mlir").read_text()
    from shardc.stablehlo.builder import ModuleBuilder
    from shardc.stablehlo.line_reader import LineReader

    reader = LineReader(text, "t.mlir", ModuleBuilder(text, "t.mlir", {}))
    module = reader.read()
    ops = sum(len(f.body) for f in module.functions.values())
    templates = reader.templates.values()
    verified = sum(t is not None and t.verified for t in templates)
    assert 0 < len(templates) < ops
    assert verified < len(reader.repeats) < ops
    assert len(reader.repeats) - verified + len(templates) <= ops
    assert not any(op.name == "return" for op in reader.repeats)
    # A call's and a reduce's verifiers read only the functions the op names: once per key.
    names = {op.name for op in reader.repeats}
    assert {"call", "reduce"} <= names


def test_a_result_name_with_an_index_reads_as_the_grammar_reads_it():
    """`%m#0 = ...` has the shape of `%m = ...` once names are taken out (which the line
    reader keys repeats by); whichever comes first, the module is the grammar's."""
    text = (ROOT / "tests/data/stablehlo/transformer_block.mlir").read_text()
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if "%20 = stablehlo.multiply" in line)
    for line in (lines[at].replace("%20 =", "%17#1 ="), lines[at].replace("%20 =", "%m#0 =")):
        for broken in ("\n".join([*lines[: at + 1], line, *lines[at + 1 :]]),
                       "\n".join([*lines[:at], line, *lines[at:]])):
            fast, slow = _both(broken, "t.mlir")
            assert not isinstance(slow, str)
            assert fast is None or fingerprint(fast) == slow
            assert fingerprint(import_stablehlo(broken, "t.mlir")) == slow


def _mutations(text: str, seed: int, count: int) -> str:
    """`text` with `count` lines dropped, duplicated, swapped or cut short."""
    rng = random.Random(seed)
    lines = text.split("\n")
    for _ in range(count):
        i = rng.randrange(len(lines))
        kind = rng.randrange(4)
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[i])
        elif kind == 2:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        else:
            lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    return "\n".join(lines)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, 10_000), seed=st.integers(0, 2**32 - 1), count=st.integers(1, 3))
def test_broken_texts_read_as_the_grammar_reads_them(index, seed, count):
    """Whatever the damage, the line reader builds the grammar's module or declines."""
    path = CORPUS[index % len(CORPUS)]
    text = _mutations(path.read_text(), seed, count)
    fast, slow = _both(text, path.name)
    if fast is not None:
        assert not isinstance(slow, str), f"accepted what the grammar rejects: {slow}"
        assert fingerprint(fast) == slow


def test_errors_are_the_grammars():
    """An error found on the line reader's way is reported as the grammar reports it."""
    text = (ROOT / "tests/data/stablehlo/transformer_block.mlir").read_text()
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if "stablehlo.multiply" in line)
    lines[at] = lines[at].replace("stablehlo.multiply %", "stablehlo.multiply %undefined_")
    broken = "\n".join(lines)
    with pytest.raises(ShardcError) as fast:
        import_stablehlo(broken, "t.mlir")
    with pytest.raises(ShardcError) as slow:
        _grammar(broken, "t.mlir")
    assert str(fast.value) == str(slow.value)
    assert f"t.mlir:{at + 1}:" in str(fast.value)


def test_argument_labels_are_jaxs_pytree_paths():
    """JAX writes each argument's pytree path as its `loc("...")` (inline or through an
    alias); both readers keep it as the argument's label (explanations name it)."""
    text = "\n".join([
        '#loc1 = loc("params[\'w2\']")',
        "module @jit_f {",
        '  func.func public @main(%arg0: tensor<4xf32> loc("params[\'w1\']"), '
        "%arg1: tensor<4xf32> loc(#loc1), %arg2: tensor<4xf32> loc(unknown)) -> tensor<4xf32> {",
        "    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>",
        "    %1 = stablehlo.add %0, %arg2 : tensor<4xf32>",
        "    return %1 : tensor<4xf32>",
        "  }",
        "}",
    ])
    fast = import_stablehlo(text, "t.mlir")
    slow = _grammar(text, "t.mlir")
    for module in (fast, slow):
        assert module.main.arg_labels == ["params['w1']", "params['w2']", None]
    assert fingerprint(fast) == fingerprint(slow)


_BODY_LINES = [
    "    %0 = stablehlo.add %a, %b : tensor<4xf32>",
    "    %1 = stablehlo.reduce(%a init: %b) applies stablehlo.add across dimensions = [0] : "
    "(tensor<4xf32>, tensor<f32>) -> tensor<f32>",
    "    %2 = call @f((%a)) : (tensor<4xf32>) -> tensor<4xf32>",  # nested parentheses
    "    %3 = stablehlo.negate (%a : tensor<4xf32>",  # unbalanced
    "    %4 = stablehlo.negate %a) : tensor<4xf32>",
    '    %5 = "stablehlo.gather"(%a) <{x = 1}> : (tensor<4xf32>) -> tensor<4xf32>',
    "    %6:2 = stablehlo.reduce(%a init: %b) across dimensions = [0] : (tensor<4xf32>) -> "
    "tensor<f32>",
    "    %7 = stablehlo.multiply %a, %b : " + "tensor<1x1x1x1x1x1x1x1x1x1x1x1xf32>" * 3,  # long
    "    %8 = stablehlo.add %a, %b : " + "(" * 30 + ")" * 30,  # long and deep
    "    ({", "    ^bb0(%x: tensor<f32>):", "      stablehlo.return %x : tensor<f32>",
    "    }) : (tensor<f32>) -> tensor<f32>", "    cond {", "    do {", "    }", "    {", "",
    "  ", "    reducer(%x: tensor<f32>) {", "    return %a : tensor<4xf32>", "    %9 = x {",
    '    %10 = stablehlo.abs %a ")" ( : tensor<4xf32>',  # balanced only with the string in
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_BODY_LINES), max_size=30), st.sampled_from([40, 256]))
def test_runs_of_plain_lines_split_as_line_by_line(body, depth):
    """`_body_lines` takes a run of plain op lines whole (`_plain_end`): the ops, their
    extents, the nesting bound and the end it finds are those of its line-by-line tests."""
    from shardc.ir.limits import Limits
    from shardc.stablehlo import line_reader
    from shardc.stablehlo.builder import ModuleBuilder
    from shardc.stablehlo.records import FuncRec

    text = "\n".join(["  func.func @f() {", *body, "  }", "}"])

    def split(runs: bool):
        b = ModuleBuilder(text, "t.mlir", {}, Limits(depth=depth))
        reader = line_reader.LineReader(text, "t.mlir", b)
        if not runs:
            reader._plain_end = lambda i: i  # (no run: every line tested on its own)
        f = FuncRec()
        f.ops = []
        try:
            end = reader._body_lines(1, f)
        except line_reader.Unsupported as e:
            end = f"unsupported: {e}"
        return f.ops, end, reader.depth

    fast = split(True)
    assert fast == split(False)
    if body and all(line in _BODY_LINES[:3] for line in body):
        assert fast[0] == list(range(1, len(body) + 1))


def _deepest_by_scan(line: str) -> int:
    """How deep brackets nest outside strings, counted bracket by bracket (check_source's way)."""
    import re

    depth = top = 0
    for m in re.finditer(r'"(?:[^"\\\n]|\\.)*"|[\[\](){}]', line):
        if m.group() in "([{":
            depth += 1
            top = max(top, depth)
        elif m.group() in ")]}":
            depth -= 1
    return top


@given(st.text(alphabet='([{}])"\\ax\n', max_size=40))
def test_a_lines_deepest_nesting_is_the_scans(line):
    from shardc.stablehlo.line_reader import _deepest

    assert _deepest(line) == _deepest_by_scan(line)


def test_terminals_are_the_grammars():
    """The line reader reads the terminals' regular expressions from grammar.lark's text
    (tokens.py, without loading lark): each is the one lark's parser lexes with."""
    from shardc.stablehlo.reader import _parser
    from shardc.stablehlo.tokens import terminals

    lark_terms = {t.name: t.pattern.to_regexp() for t in _parser().terminals
                  if t.pattern.type == "re" and not t.name.startswith("__")}
    ours = terminals()
    assert {"TENSOR_TYPE", "LOC", "SIMPLE_OP", "DIALECT_ATTR", "COMMENT"} <= set(ours)
    assert set(lark_terms) - set(ours) == {"WS"}  # (lark's common.WS, imported)
    assert {name: lark_terms.get(name) for name in ours} == ours


def _embedding_grad_text() -> str:
    """What JAX prints (with debug info) for the gradient of an embedding and a
    take_along_axis loss: generic gathers, scatters with a region (block arguments with
    locations), a mesh with its dictionary and the module's attributes."""
    jax = pytest.importorskip("jax")
    import numpy as np
    from jax.sharding import PartitionSpec as P

    from shardc.jax_api import lower_to_text

    def loss(table, ids, labels):
        logp = jax.nn.log_softmax(table[ids] @ table.T, -1)
        return -jax.numpy.take_along_axis(logp, labels[..., None], -1).mean()

    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    ids = np.arange(16, dtype=np.int32).reshape(2, 8) % 32
    return lower_to_text(jax.grad(loss), np.ones((32, 16), np.float32), ids, ids, mesh=mesh,
                         in_shardings=(P(None, "tp"), P("dp"), P("dp")))


def test_jax_gathers_scatters_meshes_and_attributes_are_read_by_line(monkeypatch):
    """None of them is handed to the grammar, and the module is the grammar's."""
    from shardc.stablehlo import line_headers, line_reader

    text = _embedding_grad_text()
    for form in ('"stablehlo.gather"', '"stablehlo.scatter"', "^bb0(%", "sdy.mesh @mesh = <[",
                 "module @jit_loss attributes {mhlo.num_partitions = 8 : i32"):
        assert form in text
    asked = []
    for module in (line_reader, line_headers):
        monkeypatch.setattr(module, "read_item", lambda rule, *a: asked.append(rule))
    fast = importer._read_lines(text, "grad.mlir", importer.DEFAULT_LIMITS)
    assert fast is not None and asked == []
    assert fingerprint(fast) == fingerprint(_grammar(text, "grad.mlir"))


def test_a_text_read_by_line_does_not_load_lark(tmp_path):
    """lark (the grammar) is loaded only when the grammar reads something (tokens.py)."""
    import subprocess
    import sys

    path = tmp_path / "grad.mlir"
    path.write_text(_embedding_grad_text())
    code = ("import sys; from shardc.stablehlo import import_stablehlo; "
            f"m = import_stablehlo(open({str(path)!r}).read()); "
            "print(len(m.functions), 'lark' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[1] == "False", out.stdout
    # (and a text the line reader declines loads it: the check can fail)
    path.write_text("// a comment\n" + path.read_text())
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[1] == "True", out.stdout


_DICTS = [
    '{mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32}',
    '{stablehlo.mesh = {axes = [{name = "dp", size = 2 : i64}], device_ids = dense<[1, 0]> : '
    'tensor<2xi64>}}',
    '{a = true, b = array<i64: 1, 2>, c = #sdy.sharding<@mesh, [{"dp"}]>, d = [], e = {}}',
    '{a = -3, b = "x\\"y", c = dense<1.0>, d = 1 : f32}', '{}',
    # read by the grammar only (the line reader declines each):
    '{a = 1.5}', '{a}', '{"a" = 1}', '{a = 0x1F}', '{a = 1, a = 2}', '{a = @f}',
]


@pytest.mark.parametrize("text", _DICTS)
def test_dictionaries_read_as_the_grammar_reads_them(text):
    """line_attrs.py builds the grammar's record (kinds, values, spans, key tokens), or
    declines."""
    from shardc.stablehlo.line_attrs import read_dict
    from shardc.stablehlo.reader import read_item

    line = f"  {text}"
    ours = read_dict(line, 2, 100, 3)
    try:
        theirs = read_item("attr_dict", "x" * 100 + line, 102, 100 + len(line), 3, 100)
    except Exception:  # (the grammar's error: the line reader must not read it)
        assert ours is None
        return

    def shape(rec):
        def value(v):
            if v is None or v.kind not in ("list", "dict", "dense"):
                return v and (v.kind, v.value, v.start, v.end)
            if v.kind == "dense":
                return (v.kind, [t and (str(t), t.line, t.column) for t in v.value], v.start, v.end)
            items = v.value if v.kind == "list" else [(k, value(x), t) for k, x, t in v.value]
            return (v.kind, [value(x) if v.kind == "list" else x for x in items], v.start, v.end)
        return ({k: value(v) for k, v in rec.entries.items()},
                {k: (str(t), t.type, t.line, t.column, t.start_pos) for k, t in rec.tokens.items()})

    if ours is None:
        assert text in _DICTS[5:], "declined a dictionary it should read"
        return
    rec, end = ours
    assert end == len(line)
    assert shape(rec) == shape(theirs)
