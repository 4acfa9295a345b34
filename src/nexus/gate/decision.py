"""What the boundary gate decides for one turn: the value object every later stage reads."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from nexus.slb.index import Hit


class Action(str, enum.Enum):
    ROUTE = "route"          # one tool, high confidence: the LLM sees only its schema
    SHORTLIST = "shortlist"  # k signatures: the LLM chooses among them
    FALLBACK = "fallback"    # all schemas: the never-regress path
    NO_TOOL = "no_tool"      # answer without calling a tool


@dataclass(frozen=True)
class Decision:
    action: Action
    candidates: tuple[Hit, ...]          # best first, after rerank when a gate ran
    p_top1: float = 0.0                  # calibrated p(top candidate is the right tool)
    p_no_tool: float = 0.0               # calibrated p(no tool applies)
    scores: tuple[float, ...] = field(default=())  # gate scores aligned with candidates (NaN: added for one request of a several-request turn, not reranked)
    gate_ms: float = 0.0
    slb_sure: bool = False               # ROUTEd on the SLB's scores alone: the cross-encoder did not run (`SureRoute`)

    @property
    def tool(self) -> str | None:
        """The routed tool's key for ROUTE, else None."""
        return self.candidates[0].key if self.action is Action.ROUTE and self.candidates else None

    def shortlist(self, k: int) -> list[str]:
        return [hit.key for hit in self.candidates[:k]]
