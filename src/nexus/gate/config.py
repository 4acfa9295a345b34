"""The gate's settings (env prefix NEXUS_GATE_), a branch of the configuration tree read when built.

>>> GateSettings(k=5).k
5
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class GateSettings(BaseSettings):
    """Example: `NEXUS_GATE_MODEL=/models/my-gate nexus gate eval ...`."""

    model_config = SettingsConfigDict(env_prefix="NEXUS_GATE_", extra="ignore")

    model: Path | None = Field(None, description="trained gate folder; default <cache_dir>/gate/default")
    base_model: Path | None = Field(None, description="Hugging Face cross-encoder/encoder folder to train from; default packaged MiniLM")
    k: int = Field(10, description="SLB candidates the gate rescores")
    shortlist_k: int = Field(5, description="signatures a SHORTLIST decision hands the LLM (more for multi-call turns)")
    context_turns: int = Field(2, description="recent user turns a follow-up turn is read with")
    risk_route: float = Field(0.01, description="target error rate of ROUTE decisions")
    risk_no_tool: float = Field(0.05, description="target error rate of NO_TOOL decisions")
    risk_shortlist: float = Field(0.05, description="target miss rate of SHORTLIST decisions")
    threads: int = Field(1, description="torch CPU threads for the cross-encoder (1: on a shared 2-core machine two threads oversubscribe and run several times slower)")
    decision_log: Path | None = Field(None, description="append every decision as JSON Lines here")
