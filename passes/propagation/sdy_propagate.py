"""Shardy's propagation passes, with Shardy's names and options, as jaxlib runs them:

    shardc opt m.mlir -p 'sdy-aggressive-propagate{propagation-strategy=aggressive}'

| pass | what runs |
|---|---|
| `sdy-basic-propagate` | one propagation, basic strategy |
| `sdy-aggressive-propagate` | one propagation, `propagation-strategy` (aggressive) |
| `sdy-op-priority-propagate` | the op-priority stages (`run-op-priority-propagation=true`) |
| `sdy-user-priority-propagate` | user-priority rounds around the op-priority stages |

Every pass takes `conservative-propagation`, `keep-sharding-rules` (each op keeps the
`sdy.sharding_rule` propagation used; false: only custom rules stay), `module-dump-directory`
(write the module before and after, as `<dir>/<n>_before_propagation.mlir` and
`..._after_propagation.mlir`), `debug-sharding-origins` and `debug-propagation-edge-sharding`
(write Shardy's `sdy.sharding_origins` and `sdy.propagation_edges`: shardy_debug.py; the
recorder is left in `ctx.data["shardy_debug"]`). Unlike shardc's `propagate`, they leave
calls alone, as jaxlib's passes do: a call neither gives nor takes a sharding, and only the main
function's results follow what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shardc.ir.core import Module
from shardc.ir.diagnostics import PassError
from shardc.passes.manager import Pass, PassContext, register_pass
from shardc.passes.propagation.propagate import PropagationOptions, run_propagation
from shardc.passes.propagation.shardy_debug import ShardyDebugInfo
from shardc.passes.propagation.shardy_debug_saving import save as save_debug_info


@dataclass(frozen=True)
class _ShardyPropagation(Pass):
    conservative_propagation: bool = False
    debug_propagation_edge_sharding: bool = False
    debug_sharding_origins: bool = False
    keep_sharding_rules: bool = False
    module_dump_directory: str = ""

    def options(self) -> PropagationOptions:
        raise NotImplementedError

    def run(self, module: Module, ctx: PassContext) -> None:
        self._dump(module, "before")
        debug = None
        if self.debug_sharding_origins or self.debug_propagation_edge_sharding:
            # seeded before propagation starts: before sharding groups share their shardings
            debug = ShardyDebugInfo(
                module, self.debug_sharding_origins, self.debug_propagation_edge_sharding
            )
        run_propagation(module, ctx, self.options(), debug)
        if debug is not None:
            save_debug_info(debug)
            ctx.data["shardy_debug"] = debug
        self._dump(module, "after")

    def _dump(self, module: Module, when: str) -> None:
        if not self.module_dump_directory:
            return
        from shardc.ir.printer import print_module

        directory = Path(self.module_dump_directory)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            n = len(list(directory.glob(f"*_{when}_propagation.mlir")))
            (directory / f"{n}_{when}_propagation.mlir").write_text(print_module(module))
        except OSError as e:
            raise PassError(f"pass '{self.name}': cannot write to {directory}: {e}") from None


@register_pass("sdy-basic-propagate")
@dataclass(frozen=True)
class SdyBasicPropagate(_ShardyPropagation):
    """Shardy's basic propagation: only what every tensor of an op agrees on."""

    def options(self) -> PropagationOptions:
        return PropagationOptions(
            "basic", False, False, self.conservative_propagation, self.keep_sharding_rules
        )


@register_pass("sdy-aggressive-propagate")
@dataclass(frozen=True)
class SdyAggressivePropagate(_ShardyPropagation):
    """Shardy's aggressive propagation (conflicts resolved per tensor)."""

    propagation_strategy: str = "aggressive"

    def options(self) -> PropagationOptions:
        return PropagationOptions(
            self.propagation_strategy, False, False, self.conservative_propagation,
            self.keep_sharding_rules,
        )


@register_pass("sdy-op-priority-propagate")
@dataclass(frozen=True)
class SdyOpPriorityPropagate(_ShardyPropagation):
    """Shardy's op-priority propagation: the op-priority stages, each a full propagation."""

    propagation_strategy: str = "aggressive"
    run_op_priority_propagation: bool = True

    def options(self) -> PropagationOptions:
        return PropagationOptions(
            self.propagation_strategy, self.run_op_priority_propagation, False,
            self.conservative_propagation, self.keep_sharding_rules,
        )


@register_pass("sdy-user-priority-propagate")
@dataclass(frozen=True)
class SdyUserPriorityPropagate(_ShardyPropagation):
    """Shardy's user-priority propagation: one round per user priority, around op priorities."""

    propagation_strategy: str = "aggressive"
    run_op_priority_propagation: bool = True

    def options(self) -> PropagationOptions:
        return PropagationOptions(
            self.propagation_strategy, self.run_op_priority_propagation, True,
            self.conservative_propagation, self.keep_sharding_rules,
        )
