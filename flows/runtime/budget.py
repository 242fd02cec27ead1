"""Token and cost budgets (`budget:` on a definition or a node): checked around every LLM call.

A budget is a ceiling on what has been *spent*, read from the store (every recorded LLM call adds
its tokens and cost to the run's totals and is tied to its visit). Before a call, a node or run
already at its ceiling stops; after a call, one that went over it fails the node, which writes
nothing. The run's own totals include its retries and repairs, since those cost money too, and
a node's include the calls of the workstreams its agent launched (delegating does not lift a limit).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.ir import Budget
from flows.moments import announce
from flows.runtime.errors import BudgetExhausted


def _limits(budget: Budget | Mapping[str, Any] | None) -> Budget | None:
    """The budget when it limits anything (a node's IR budget, or the Plan's budget as data)."""
    if budget is None:
        return None
    limits = budget if isinstance(budget, Budget) else Budget.model_validate(budget)
    return limits if limits.max_tokens is not None or limits.max_cost_usd is not None else None


def _over(limit: Budget | None, tokens: int, cost: float) -> str | None:
    if limit is None:
        return None
    if limit.max_tokens is not None and tokens >= limit.max_tokens:
        return f"{tokens} tokens spent, budget {limit.max_tokens}"
    if limit.max_cost_usd is not None and cost >= limit.max_cost_usd:
        return f"${cost:.6f} spent, budget ${limit.max_cost_usd}"
    return None


def check(*, run_id: str | None, visit_id: str | None, node_id: str, node_budget: Budget | None,
          run_budget: Mapping[str, Any] | None) -> None:
    """Raise :class:`BudgetExhausted` when the node's or the run's budget is spent."""
    node_limits, run_limits = _limits(node_budget), _limits(run_budget)
    if run_id is None or not (node_limits or run_limits):
        return
    from flows.store import runs as run_store
    from flows.store import visits as visit_store

    if run_limits:
        run = run_store.get_run(run_id)
        reason = _over(run_limits, run.tokens or 0, run.cost_usd or 0.0) if run else None
        if reason:
            announce("budget.exceeded", run_id, node_id, f"run budget: {reason}")
            raise BudgetExhausted(f"run budget exhausted before/at node `{node_id}`: {reason}")
    if node_limits and visit_id:
        from flows.store import workstreams as workstream_store

        calls = visit_store.llm_calls_for_run(run_id, visit_id=visit_id)
        # what the node's agent delegated (its workstreams) is spent by the node too
        tokens, cost = workstream_store.spend([visit_id])
        tokens += sum((c.tokens_in or 0) + (c.tokens_out or 0) for c in calls)
        cost += sum(c.cost_usd or 0.0 for c in calls)
        reason = _over(node_limits, tokens, cost)
        if reason:
            announce("budget.exceeded", run_id, node_id, f"node budget: {reason}")
            raise BudgetExhausted(f"node `{node_id}` budget exhausted: {reason}")
