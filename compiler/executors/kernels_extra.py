"""TEMPORARY: passes/insert_reshards.py reads `CUSTOM_CALLS` from here until the custom-call
target table moves into shardc.ir (issue 17, the passes split); then this file goes."""

from shardc.executors.kernels.custom_calls import CUSTOM_CALLS

__all__ = ["CUSTOM_CALLS"]
