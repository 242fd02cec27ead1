"""Route coverage: which nodes and moves of each definition the cases took, like line coverage for code.

A definition's *nodes* are its top-level nodes; its *moves* are the exits of its Plan — a
process's transitions, a condition's branches and default, a human task's ``on_timeout`` — and,
for a pipeline, its ``needs`` edges. A node counts as taken when some case's route visited it; a
process move when some visit recorded it as where the run went next; a pipeline edge when both
its ends ran in the same case. The exits never taken are listed: the paths no test has seen.

*Guards*: each guarded exit of a process (a transition's or a condition branch's guard) has two
outcomes, and a case's routing shows which were seen. The engine tries a node's exits in order
and takes the first whose guard holds (a condition's default after every branch), so a visit
that went to exit *k* saw *k*'s guard true and the guards of the exits before it false; the
exits after it were never evaluated. This is read from the visits' recorded next nodes, not by
evaluating guards again. An exit is known by its target: when two exits of a node lead to the
same node, a move there counts for the first of them. Agent and person-picked exits are not
guards of routing (the model or the person chooses) and are left out.

A pipeline node's ``when`` is a guard too: seen true when a case ran the node, false when the
node's visit was recorded skipped for it (:data:`flows.runtime.engine.WHEN_FALSE`). A node a
skipped need or a failure upstream left unrun saw neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compiler.plan import Plan, PlanEdge
from flows.testing.runner import CaseResult


@dataclass
class DefinitionCoverage:
    """One definition's coverage by the cases that test it."""

    definition: str
    nodes: list[str]
    nodes_taken: list[str]
    moves: list[PlanEdge]
    moves_taken: list[PlanEdge]
    cases: int = 0
    untaken: list[PlanEdge] = field(default_factory=list)
    guards: list[GuardCoverage] = field(default_factory=list)

    @property
    def percent(self) -> float:
        """Nodes and moves taken, over all of them (100 for a definition with neither)."""
        total = len(self.nodes) + len(self.moves)
        return 100.0 if total == 0 else 100.0 * (len(self.nodes_taken) + len(self.moves_taken)) / total

    def as_dict(self) -> dict[str, Any]:
        return {"definition": self.definition, "cases": self.cases, "percent": round(self.percent, 1),
                "nodes": {"taken": len(self.nodes_taken), "total": len(self.nodes),
                          "never": [n for n in self.nodes if n not in self.nodes_taken]},
                "moves": {"taken": len(self.moves_taken), "total": len(self.moves),
                          "never": [describe(e) for e in self.untaken]},
                "guards": {"seen": sum(g.seen_true + g.seen_false for g in self.guards), "total": 2 * len(self.guards),
                           "never_true": [g.what for g in self.guards if not g.seen_true],
                           "never_false": [g.what for g in self.guards if not g.seen_false]}}


@dataclass
class GuardCoverage:
    """One guard — a guarded exit of a process, or a pipeline node's ``when`` — and whether the
    cases saw it true, and false."""

    #: how it is shown: ``route → review (high priority)``, ``notify (when)``
    what: str
    seen_true: bool = False
    seen_false: bool = False


def describe(edge: PlanEdge) -> str:
    """``route_invoice → finance_approval (amount > 10000 EUR)``."""
    label = f" ({edge.label})" if edge.label else f" ({edge.kind})" if edge.kind in ("default", "timeout") else ""
    return f"{edge.source} → {edge.target}{label}"


def coverage(plans: dict[str, Plan], results: list[CaseResult]) -> list[DefinitionCoverage]:
    """The coverage of each definition under test, in name order."""
    out = []
    for name in sorted(plans):
        plan = plans[name]
        mine = [r for r in results if r.definition == name]
        visited = {n for r in mine for n in r.actual.route}
        nodes = list(plan.nodes)
        if plan.control == "state_machine":
            moves = [e for e in plan.edges if e.kind != "needs"]
            made = {m for r in mine for m in r.moves}
            taken = [e for e in moves if (e.source, e.target) in made]
        else:
            moves = [e for e in plan.edges if e.kind == "needs"] or list(plan.edges)
            together = [set(r.actual.route) for r in mine]
            taken = [e for e in moves if any({e.source, e.target} <= ran for ran in together)]
        out.append(DefinitionCoverage(name, nodes, [n for n in nodes if n in visited], moves, taken, len(mine),
                                      [e for e in moves if e not in taken], guard_coverage(plan, mine)))
    return out


def guard_coverage(plan: Plan, results: list[CaseResult]) -> list[GuardCoverage]:
    """The outcomes of each guard the cases show (see the module docstring)."""
    if plan.control != "state_machine":
        return when_coverage(plan, results)
    routed: dict[str, list[PlanEdge]] = {}
    for edge in sorted(plan.edges, key=lambda e: e.order):
        if edge.kind in ("transition", "branch", "default") and edge.trigger == "auto":
            routed.setdefault(edge.source, []).append(edge)
    for exits in routed.values():  # a condition's default is tried after all its branches
        exits.sort(key=lambda e: e.kind == "default")
    found = {id(e): GuardCoverage(describe(e)) for exits in routed.values() for e in exits if e.guard is not None}
    for result in results:
        for source, target in result.moves:
            for edge in routed.get(source, []):
                seen = found.get(id(edge))
                if edge.target == target:
                    if seen is not None:
                        seen.seen_true = True
                    break
                if seen is not None:
                    seen.seen_false = True
    return [found[id(e)] for exits in routed.values() for e in exits if id(e) in found]


def when_coverage(plan: Plan, results: list[CaseResult]) -> list[GuardCoverage]:
    """A pipeline's ``when`` guards: true in a case that ran the node, false in one that skipped it for its ``when``."""
    guarded = [n.id for n in plan.nodes.values() if n.when is not None or n.extras.get("when_regexp")]
    return [GuardCoverage(f"{nid} (when)", seen_true=any(nid in r.actual.route for r in results),
                          seen_false=any(nid in r.when_false for r in results)) for nid in guarded]
