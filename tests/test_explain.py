"""compiler/explain/: per-value text, DOT, the offline HTML page and device grids."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from shardc.explain.device_grid import block_owners, visualize_sharding
from shardc.explain.dot import to_dot
from shardc.explain.graph import REPLICATED_COLOR, sharding_colors
from shardc.explain.graph_layout import layered_layout
from shardc.explain.html_page import to_html
from shardc.explain.text import explain_text
from shardc.ir.mapping import NamedMapping
from shardc.ir.mesh import DeviceMesh
from shardc.ir.parser import parse_module
from shardc.ir.types import shard_bounds
from shardc.passes.manager import PassContext, PassManager, load_all_passes, parse_pipeline

ROOT = Path(__file__).resolve().parent.parent
PIPELINE = "propagation-pipeline,insert-reshards,lower-collectives"

load_all_passes()


def _compiled(name: str):
    module = parse_module((ROOT / "examples" / name).read_text(), name)
    ctx = PassManager(parse_pipeline(PIPELINE)).run(module, PassContext())
    return module, ctx.data["origins"]


@pytest.fixture(scope="module")
def mlp():
    return _compiled("mlp.mlir")


@pytest.fixture(scope="module")
def transformer():
    return _compiled("transformer_dp_tp.mlir")


# ----- text -------------------------------------------------------------------------------------


def test_explain_text_lists_value_sharding_local_shape_and_origin(mlp):
    module, origins = mlp
    text = explain_text(module, origins)
    rows = {line.split()[0]: line for line in text.splitlines() if line.startswith("  %")}
    assert set(rows) >= {"%x", "%w1", "%w2", "%0", "%5"}
    assert '<@mesh, [{"dp"}, {"tp"}]>' in rows["%0"]
    assert " 8x64 " in rows["%0"]  # 16x256 on dp=2, tp=4
    assert '"tp" = input: 1 via dot_general' in rows["%0"]
    assert rows["%5"].split()[1] == "all_reduce"
    assert "2.0 KiB/device over tp" in rows["%5"]
    assert "collectives: 1, 2.0 KiB per device; all_reduce x1 2.0 KiB" in text


def test_explain_text_falls_back_to_origin_attributes():
    module = parse_module((ROOT / "examples" / "mlp.mlir").read_text())
    PassManager(parse_pipeline("propagate")).run(module, PassContext(explain=True))
    text = explain_text(module)
    assert '"dp" = input: 0 via dot_general' in text


# ----- DOT --------------------------------------------------------------------------------------

NODE = re.compile(r'^\s+"([^"]+)" \[label=(".*?(?<!\\)"), fillcolor="(#[0-9a-f]{6})"(.*)\];$')
EDGE = re.compile(r'^\s+"([^"]+)" -> "([^"]+)" \[label="(\d+)"\];$')


def test_dot_has_a_node_per_op_an_edge_per_use_and_marks_collectives(mlp):
    module, _ = mlp
    dot = to_dot(module)
    assert dot.startswith("digraph shardc {") and dot.rstrip().endswith("}")
    nodes = {m.group(1): m for m in map(NODE.match, dot.splitlines()) if m}
    edges = [m.groups() for m in map(EDGE.match, dot.splitlines()) if m]
    func = module.main
    ops = list(func.body)
    assert len([k for k in nodes if k.startswith("main/")]) == len(func.args) + len(ops)
    assert len(edges) == sum(op.num_operands for op in ops)
    assert all(src in nodes and dst in nodes for src, dst, _ in edges)
    (coll,) = [m for m in nodes.values() if "all_reduce" in m.group(2)]
    assert "2.0 KiB over tp" in coll.group(2)
    assert 'color="#c0392b"' in coll.group(4) and "penwidth=3" in coll.group(4)
    # different shardings, different fills: %x is [dp, -], %w1 is [-, tp]
    assert nodes["main/%x"].group(3) != nodes["main/%w1"].group(3)


def test_dot_is_read_by_networkx_when_pydot_is_installed(mlp):
    pydot = pytest.importorskip("pydot")
    from networkx.drawing.nx_pydot import from_pydot

    module = mlp[0]
    (graph,) = pydot.graph_from_dot_data(to_dot(module))
    g = from_pydot(graph)
    assert g.number_of_edges() == sum(op.num_operands for op in module.main.body)


# ----- colours ----------------------------------------------------------------------------------


def test_colours_differ_per_sharding_and_replicated_is_grey(transformer):
    module, _ = transformer
    colors = sharding_colors(module)
    sharded = {k: c for k, c in colors.items() if c != REPLICATED_COLOR and k != "(no sharding)"}
    assert len(set(sharded.values())) == len(sharded) >= 8
    assert colors["<@mesh, [{}]>"] == REPLICATED_COLOR
    assert sharding_colors(module) == colors  # deterministic


# ----- HTML -------------------------------------------------------------------------------------


def test_html_is_offline_well_formed_and_shows_the_graph(transformer):
    module, origins = transformer
    page = to_html(module, origins, title="transformer dp+tp")
    assert not re.search(r"https?://", page)
    assert "<script" not in page and "@import" not in page and "url(http" not in page
    root = ET.fromstring(page.split("\n", 1)[1])  # drop <!DOCTYPE html>
    svg = root.find(".//svg")
    assert svg is not None
    groups = svg.findall("g")
    ops = list(module.main.body)
    assert len(groups) == len(module.main.args) + len(ops)
    assert len(svg.findall("path")) == sum(op.num_operands for op in ops)
    # collectives: red-outlined group with the bytes, once per all_reduce (16 KiB each)
    colls = [g for g in groups if "collective" in g.get("class", "")]
    assert len(colls) == 2
    for g in colls:
        texts = [t.text for t in g.findall("text")]
        assert texts[1] == "16.0 KiB over tp"
        assert "all_reduce over tp: 16384 bytes/device" in g.find("title").text
    # hover titles carry sharding, local shape and origin
    q = next(g for g in groups if g.find("title").text.startswith("%q_0 = dot_general"))
    title = q.find("title").text
    assert 'sharding: <@mesh, [{"dp"}, {}, {"tp"}, {}]>' in title
    assert "local shape: 4x16x2x8" in title and "origin:" in title
    # a legend and a value table with one row per value
    assert "fully replicated" in page and "collective (red: bytes per device)" in page
    values, collectives = root.findall(".//table")
    rows = values.findall("tr")
    assert len(rows) == 1 + len(module.main.args) + sum(len(op.results) for op in ops)
    # the collectives table: a row per collective, linked to its node in the graph
    linked = [tr.find("td/a").get("href") for tr in collectives.findall("tr")[1:]]
    assert len(linked) == 2
    assert {"#" + g.get("id") for g in colls} == set(linked)


def test_html_nodes_do_not_overlap(transformer):
    page = to_html(transformer[0])
    root = ET.fromstring(page.split("\n", 1)[1])
    boxes = [
        tuple(float(r.get(k)) for k in ("x", "y", "width", "height"))
        for r in root.findall(".//svg/g/rect")
    ]
    for i, (x1, y1, w1, h1) in enumerate(boxes):
        for x2, y2, w2, h2 in boxes[i + 1 :]:
            assert x1 + w1 <= x2 or x2 + w2 <= x1 or y1 + h1 <= y2 or y2 + h2 <= y1
    assert min(x for x, *_ in boxes) >= 0


def test_layout_puts_users_below_their_operands_and_routes_long_edges():
    keys = ["a", "b", "c", "d", "w"]
    edges = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("w", "d")]
    lay = layered_layout(keys, edges, {k: 100.0 for k in keys})
    assert all(lay.layer[s] < lay.layer[d] for s, d in edges)
    assert lay.layer["w"] == lay.layer["d"] - 1  # a weight sits just above its user
    route = lay.route("a", "d")
    assert [li for _, li in route] == [1, 2]  # one bend per crossed layer


# ----- device grids -----------------------------------------------------------------------------


def _grid_labels(picture: str) -> list[list[str]]:
    rows = []
    for line in picture.splitlines():
        if line.startswith("\u2502") and line.strip("\u2502 "):
            rows.append([c.strip() for c in line.strip("\u2502").split("\u2502")])
    return rows


def _expand(label: str) -> list[int]:
    out: list[int] = []
    for part in label.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


@pytest.mark.parametrize(
    ("shape", "spec", "ids"),
    [
        ((16, 64), ("dp", "tp"), None),
        ((16, 64), (("tp", "dp"), None), None),
        ((16, 64), (None, "tp"), None),
        ((8, 8), ("tp", "dp"), [7, 6, 5, 4, 3, 2, 1, 0]),
        ((10,), ("tp",), None),
        ((13,), (("dp", "tp"),), [3, 1, 2, 0, 7, 5, 6, 4]),  # last block empty
    ],
)
def test_grid_labels_match_shard_bounds_ownership(shape, spec, ids):
    mesh = DeviceMesh.create("mesh", {"dp": 2, "tp": 4}, ids)
    mapping = NamedMapping.from_spec(spec, mesh)
    picture = visualize_sharding(shape, mapping)
    labels = _grid_labels(picture)
    # expected: group device ids by the block shard_bounds gives them, in block order
    owners: dict[tuple, list[int]] = {}
    for p in range(mesh.num_devices):
        owners.setdefault(shard_bounds(shape, mapping, p), []).append(mesh.device_id(p))
    starts = [sorted({b[d][0] for b in owners}) for d in range(len(shape))]
    if len(shape) == 1:
        expected = [[sorted(owners[k]) for k in sorted(owners)]]
    else:
        expected = [[sorted(owners[k]) for k in sorted(owners) if k[0][0] == r] for r in starts[0]]
    assert [[_expand(c) for c in row] for row in labels] == expected
    for d in range(len(shape)):
        if mapping.num_shards(d) > 1:
            assert f"dim {d} ({shape[d]}): split {mapping.num_shards(d)} ways" in picture


def test_grid_of_a_replicated_tensor_is_one_block_of_every_device():
    mesh = DeviceMesh.create("mesh", {"dp": 2, "tp": 4})
    picture = visualize_sharding((4, 4), NamedMapping.from_spec((None, None), mesh))
    assert _grid_labels(picture) == [["0-7"]]


def test_higher_rank_is_described_per_dim():
    mesh = DeviceMesh.create("mesh", {"dp": 2, "tp": 4})
    picture = visualize_sharding((4, 8, 2), NamedMapping.from_spec(("tp", None, "dp"), mesh))
    assert "\u250c" not in picture
    assert 'dim 0 (4): split 4 ways over "tp": [0:1] [1:2] [2:3] [3:4]' in picture
    assert "dim 1 (8): whole on every device" in picture
    assert "device 5: [1:2, 0:8, 1:2]" in picture


def test_uneven_blocks_stay_distinct():
    mesh = DeviceMesh.create("mesh", {"x": 4})
    blocks = block_owners((2,), NamedMapping.from_spec(("x",), mesh))
    assert [b.devices for b in blocks] == [[0], [1], [2], [3]]
    assert [b.bounds for b in blocks] == [((0, 1),), ((1, 2),), ((2, 2),), ((2, 2),)]
