"""shardc.jit's persistent compile cache (compiler/jit_cache.py): a second process skips the
import, shardc's pipeline and XLA's compile and computes the same thing; the key changes with
what decides the program; corrupt, partial and concurrently written files are never read as
an entry; the cached modules are the compiled ones, locations and names included."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from jax.sharding import PartitionSpec as P  # noqa: E402

import shardc  # noqa: E402
from shardc.jit_cache import CompileCache, cache_key  # noqa: E402
from tests.test_stablehlo_line_reader import fingerprint  # noqa: E402

if len(jax.devices()) < 8:
    pytest.skip("needs 8 devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)",
                allow_module_level=True)

ROOT = Path(__file__).resolve().parent.parent
SHARDINGS = (P("dp"), P(None, "tp"), P("tp"))


def mlp(x, w1, w2):
    return jax.nn.tanh(x @ w1) @ w2


@pytest.fixture(scope="module")
def mesh():
    return jax.make_mesh((2, 4), ("dp", "tp"))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return tuple(rng.standard_normal(s).astype(np.float32)
                 for s in [(16, 64), (64, 256), (256, 64)])


def _compiled(mesh, data, cache_dir, backend="jax"):
    options = shardc.CompileOptions(cache_dir=str(cache_dir))
    f = shardc.jit(mlp, mesh=mesh, in_shardings=SHARDINGS, options=options, backend=backend)
    out = f(*data)
    (compiled,) = f.programs()
    return compiled, np.asarray(out)


def test_a_second_jit_finds_the_program(mesh, data, tmp_path):
    first, want = _compiled(mesh, data, tmp_path)
    assert first.result.cache.hit is False
    second, got = _compiled(mesh, data, tmp_path)
    assert second.result.cache.hit is True
    assert second.timings["shardc_compile"] == 0.0
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(got, np.asarray(jax.jit(mlp)(*data)), rtol=1e-4, atol=1e-4)
    # What a hit rebuilds is what was compiled: text, every location, every value name.
    assert fingerprint(second.module) == fingerprint(first.module)
    assert fingerprint(second.spmd) == fingerprint(first.spmd)
    assert second.report == json.loads(json.dumps(first.report))
    assert second.as_text("sdy") == first.as_text("sdy")
    assert second.in_shardings == first.in_shardings


def test_the_entry_is_written_after_the_per_device_program(mesh, data, tmp_path, monkeypatch):
    """On a call's miss the entry (Python work) starts once shardc has printed the per-device
    program (Python too) and is on disk when the call returns; `lower` writes it at once."""
    from shardc.executors import jax_arrays
    from shardc.jit_cache import CompileCache as Cache

    events = []
    text, store = jax_arrays.replica_text, Cache.store
    monkeypatch.setattr(jax_arrays, "replica_text",
                        lambda program: (events.append("trace"), text(program))[1])
    monkeypatch.setattr(Cache, "store",
                        lambda self, *a: (events.append("store"), store(self, *a))[1])
    compiled, _ = _compiled(mesh, data, tmp_path)
    assert events == ["trace", "store"]
    assert Cache(tmp_path).load(compiled.result.cache.key) is not None
    events.clear()
    options = shardc.CompileOptions(cache_dir=str(tmp_path / "lowered"))
    lowered = shardc.jit(mlp, mesh=mesh, in_shardings=SHARDINGS, options=options).lower(*data)
    lowered.result.cache.writing.thread.join()  # (no compile: nothing else waits for it)
    assert events == ["store"]
    assert Cache(tmp_path / "lowered").load(lowered.result.cache.key) is not None


def test_numpy_backend_uses_it_too(mesh, data, tmp_path):
    _, want = _compiled(mesh, data, tmp_path, backend="numpy")
    second, got = _compiled(mesh, data, tmp_path, backend="numpy")
    assert second.result.cache.hit
    np.testing.assert_array_equal(got, want)


def test_another_process_skips_the_compile(tmp_path):
    script = textwrap.dedent(f"""
        import os, sys
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
        sys.path.insert(0, {str(ROOT)!r})
        import numpy as np, jax, shardc
        from jax._src import compiler
        from jax.sharding import PartitionSpec as P
        from tests.test_jit_cache import mlp, SHARDINGS
        compiles, xla = [], compiler.backend_compile_and_load
        compiler.backend_compile_and_load = lambda *a: (compiles.append(1), xla(*a))[1]
        mesh = jax.make_mesh((2, 4), ("dp", "tp"))
        rng = np.random.default_rng(0)
        data = [rng.standard_normal(s).astype(np.float32)
                for s in [(16, 64), (64, 256), (256, 64)]]
        f = shardc.jit(mlp, mesh=mesh, in_shardings=SHARDINGS,
                       options=shardc.CompileOptions(cache_dir={str(tmp_path)!r}))
        out = np.asarray(f(*data))
        (c,) = f.programs()
        print(c.result.cache.hit, c.program().replicas, len(compiles), float(np.abs(out).sum()))
    """)
    runs = [subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           check=True).stdout.split() for _ in range(2)]
    # The second process loads XLA's executable of the replicas: it compiles nothing.
    assert [r[:3] for r in runs] == [["False", "True", "1"], ["True", "True", "0"]]
    assert runs[0][3] == runs[1][3]


def test_the_key_changes_with_what_decides_the_program():
    base = cache_key("text", shardc.CompileOptions(), {"x": 2})
    assert base == cache_key("text", shardc.CompileOptions(cache_dir="/elsewhere"), {"x": 2})
    assert base != cache_key("text ", shardc.CompileOptions(), {"x": 2})
    assert base != cache_key("text", shardc.CompileOptions(strategy="conservative"), {"x": 2})
    assert base != cache_key("text", shardc.CompileOptions(), {"x": 4})
    import shardc.jit_cache as jc

    saved = jc.FORMAT
    jc.FORMAT = saved + 1
    try:
        assert base != cache_key("text", shardc.CompileOptions(), {"x": 2})
    finally:
        jc.FORMAT = saved


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty", "foreign"])
def test_a_damaged_entry_is_a_miss_and_is_rewritten(mesh, data, tmp_path, damage):
    _, want = _compiled(mesh, data, tmp_path)
    for path in tmp_path.iterdir():
        raw = path.read_bytes()
        if damage == "truncate":
            path.write_bytes(raw[: len(raw) // 2])
        elif damage == "flip":
            path.write_bytes(raw[:-10] + bytes(b ^ 0xFF for b in raw[-10:]))
        elif damage == "empty":
            path.write_bytes(b"")
        else:
            path.write_text("{}")
    again, got = _compiled(mesh, data, tmp_path)
    assert again.result.cache.hit is False
    np.testing.assert_array_equal(got, want)
    third, _ = _compiled(mesh, data, tmp_path)
    assert third.result.cache.hit is True


def test_concurrent_writers_leave_one_whole_entry(tmp_path):
    """Writers racing on a key while readers read: every read is None (before the first
    rename) or one writer's complete payload; no temporary file is left behind."""
    cache = CompileCache(tmp_path)
    payloads = [bytes([i]) * (200_000 + i) for i in range(4)]
    seen: list[bytes | None] = []

    def write(p: bytes) -> None:
        for _ in range(20):
            cache.write("k", "shardc", p)

    def read() -> None:
        for _ in range(200):
            seen.append(cache.read("k", "shardc"))

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    threads += [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(s is None or s in payloads for s in seen)
    assert cache.read("k", "shardc") in payloads
    assert [p.name for p in tmp_path.iterdir()] == ["k.shardc"]


def test_without_a_cache_dir_nothing_is_written(mesh, data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    f = shardc.jit(mlp, mesh=mesh, in_shardings=SHARDINGS)
    f(*data)
    (compiled,) = f.programs()
    assert compiled.result.cache is None
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_directory_is_a_warning(mesh, data, tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    with pytest.warns(RuntimeWarning, match="cannot write the compile cache"):
        compiled, got = _compiled(mesh, data, blocked / "cache")
    assert compiled.result.cache.hit is False
    np.testing.assert_allclose(got, np.asarray(jax.jit(mlp)(*data)), rtol=1e-4, atol=1e-4)


def test_the_key_ignores_locations_but_not_strings():
    from shardc.jit_cache import without_locations

    text = (
        '  func.func public @main(%arg0: tensor<2xf32> loc("x")) -> (tensor<2xf32>) {\n'
        '    %c = stablehlo.custom_call @foo() {backend_config = "loc(x)"} : () -> tensor<2xf32>'
        " loc(callsite(#loc1 at #loc2))\n"
        "    %0 = stablehlo.add %arg0, %c : tensor<2xf32> loc(#loc7)\n"
        '#loc3 = loc("/a/b.py":12:8)\n'
        '#loc7 = loc("jit(f)/add"(#loc3))\n'
    )
    assert without_locations(text) == (
        "  func.func public @main(%arg0: tensor<2xf32>) -> (tensor<2xf32>) {\n"
        '    %c = stablehlo.custom_call @foo() {backend_config = "loc(x)"} : () -> tensor<2xf32>\n'
        "    %0 = stablehlo.add %arg0, %c : tensor<2xf32>\n"
    )
    # A string that spells a location is part of the program: it changes the key.
    other = text.replace('"loc(x)"', '"loc(y)"')
    assert without_locations(other) != without_locations(text)
