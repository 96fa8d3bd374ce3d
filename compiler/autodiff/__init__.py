"""Reverse-mode differentiation of programs built with the builder (the zoo's training steps):
`gradients(builder, func, loss, wrt)` in reverse.py, one rule per op in rules.py."""

from shardc.autodiff.reverse import erase_dead, gradients

__all__ = ["erase_dead", "gradients"]
