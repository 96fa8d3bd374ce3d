"""Test-session setup. JAX reads XLA_FLAGS when it is first imported, so the 8 simulated CPU
devices the JAX executor tests need are requested here, before any test imports JAX."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
