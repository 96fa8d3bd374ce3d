"""dot_general's `algorithm` (`#stablehlo.dot_algorithm<...>`), as JAX emits it for
`lax.dot_general(..., precision=lax.DotAlgorithmPreset.X)` and for bf16
`jax.nn.dot_product_attention`: read by the line reader and the grammar alike, in the pretty and
the generic form, printed back byte for byte, kept through compilation, and run by the numpy
executors (as XLA's CPU backend runs it: f32 operands in f32) and through JAX (the preset it
lowers from) to `jax.jit`'s numbers."""

from __future__ import annotations

import numpy as np
import pytest

from shardc.executors.reference import run_reference
from shardc.ir.parser import parse_module
from shardc.ir.printer import print_module
from shardc.stablehlo import export_stablehlo, import_stablehlo
from tests.test_stablehlo_line_reader import _both

jax = pytest.importorskip("jax")
lax = jax.lax
F32 = np.float32


def _dot(preset):
    def fn(a, b):
        return lax.dot_general(a, b, (((1,), (0,)), ((), ())), precision=preset,
                               preferred_element_type=F32)
    return fn


def _args():
    rng = np.random.default_rng(0)
    return [rng.standard_normal((8, 64)).astype(F32), rng.standard_normal((64, 16)).astype(F32)]


def _text(fn, *, in_shardings=None) -> str:
    jitted = jax.jit(fn) if in_shardings is None else jax.jit(fn, in_shardings=in_shardings)
    return jitted.lower(*_args()).as_text()


def test_jax_text_reads_the_same_by_line_and_by_grammar_and_prints_back() -> None:
    text = _text(_dot(lax.DotAlgorithmPreset.BF16_BF16_F32))
    assert "algorithm = <lhs_precision_type = bf16, rhs_precision_type = bf16" in text
    fast, slow = _both(text, "dot.mlir")
    assert fast is not None  # the line reader read it, and as the grammar does
    from tests.test_stablehlo_line_reader import fingerprint
    assert fingerprint(fast) == slow
    module = import_stablehlo(text)
    assert export_stablehlo(module) == text
    (op,) = [op for op in module.main.body if op.name == "dot_general"]
    assert op.attributes["algorithm"].text.startswith("#stablehlo.dot_algorithm<lhs_prec")
    native = print_module(module)  # shardc's own text keeps it too
    assert print_module(parse_module(native)) == native and "dot_algorithm" in native


def test_generic_form_reads_as_the_pretty_form() -> None:
    text = _text(_dot(lax.DotAlgorithmPreset.BF16_BF16_F32_X3))
    pretty = import_stablehlo(text)
    line = next(x for x in text.splitlines() if "stablehlo.dot_general" in x)
    algorithm = line[line.index("algorithm = <") + len("algorithm = "):line.index("> :") + 1]
    generic = (
        '%0 = "stablehlo.dot_general"(%arg0, %arg1) <{algorithm = #stablehlo.dot_algorithm'
        f"{algorithm}, dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], "
        "rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, "
        "#stablehlo<precision DEFAULT>]}> : (tensor<8x64xf32>, tensor<64x16xf32>) -> "
        "tensor<8x16xf32>")
    body = line[:line.index("%0 =")] + generic
    module = import_stablehlo(text.replace(line, body))
    assert export_stablehlo(module) == export_stablehlo(pretty)
    bad = text.replace(line, body.replace("#stablehlo.dot_algorithm", "#stablehlo.dot"))
    with pytest.raises(Exception, match="'algorithm' must be a #stablehlo.dot_algorithm"):
        import_stablehlo(bad)


@pytest.mark.parametrize("preset", ["BF16_BF16_F32", "F32_F32_F32", "BF16_BF16_F32_X3"])
def test_reference_executor_runs_as_xla_cpu_does(preset: str) -> None:
    fn = _dot(getattr(lax.DotAlgorithmPreset, preset))
    args = _args()
    (got,) = run_reference(import_stablehlo(_text(fn)), args)
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(*args)), rtol=2e-6, atol=2e-5)


def test_sharded_contraction_runs_the_algorithm_on_both_executors() -> None:
    from jax.sharding import NamedSharding, PartitionSpec

    import shardc
    from shardc.pipeline import compile

    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
    shardings = (NamedSharding(mesh, PartitionSpec("dp", "tp")),
                 NamedSharding(mesh, PartitionSpec("tp", None)))
    fn = _dot(lax.DotAlgorithmPreset.BF16_BF16_F32)
    args = _args()
    want = np.asarray(jax.jit(fn, in_shardings=shardings)(*args))
    (numpy_spmd,) = compile(import_stablehlo(_text(fn, in_shardings=shardings))).run(args)
    np.testing.assert_allclose(numpy_spmd, want, rtol=2e-6, atol=2e-5)
    ours = shardc.jit(fn, in_shardings=shardings, mesh=mesh)
    np.testing.assert_allclose(np.asarray(ours(*args)), want, rtol=2e-6, atol=2e-5)
    assert "algorithm = <lhs_precision_type = bf16" in ours.lower(*args).as_text("sdy")
