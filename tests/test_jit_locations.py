"""Locations JAX gives the ops it makes outside the user's code (a function's `return`, the
result of a reduction's wrapper) name the user's call, not the shardc module that traced the
function: explanations and warnings then point at the user's file."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

import shardc

pytestmark = pytest.mark.skipif(jax.device_count() < 8, reason="needs 8 devices")


def test_no_location_names_shardcs_own_files():
    mesh = jax.make_mesh((2, 4), ("dp", "tp"), axis_types=(jax.sharding.AxisType.Auto,) * 2)

    def step(x):
        return (x > 0).any(0), x.sum()

    lowered = shardc.jit(step, mesh=mesh, in_shardings=(P("dp", "tp"),)).lower(
        np.ones((16, 32), np.float32))
    text = lowered.as_text()
    own = shardc.__file__.rsplit("/", 1)[0] + "/"
    located = [line for line in text.splitlines() if "loc(" in line]
    assert located and not any(own in line for line in located), [
        line for line in located if own in line]
    assert any(f'"{__file__}"' in line for line in located if "return" in line), located
    explanation = lowered.explain_collectives().text()
    assert own not in explanation and __file__ in explanation
