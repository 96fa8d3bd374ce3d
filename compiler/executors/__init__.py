"""Executors: the numpy reference interpreter (global program) and, later, SPMD executors."""

from shardc.executors.reference import run_reference

__all__ = ["run_reference"]
