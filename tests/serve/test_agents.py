"""A real agent framework end to end: the OpenAI Agents SDK runs an agent whose model is `serve openai` (route
mode, scripted LLM): the agent offers its tools, Nexus routes and calls one, the SDK runs it and sends the result
back, and Nexus answers from it."""

from __future__ import annotations

import anyio
import pytest

agents = pytest.importorskip("agents", reason="pip install openai-agents (dev extra)")

from nexus.config import ServeSettings, Settings  # noqa: E402
from nexus.llm.scripted import ScriptedBackend  # noqa: E402
from nexus.nexus import Nexus  # noqa: E402
from nexus.router import ScoreGate  # noqa: E402
from nexus.serve.openai import create_app  # noqa: E402
from nexus.slb import HashEmbedder  # noqa: E402

from .conftest import serving  # noqa: E402


def test_openai_agents_sdk_runs_an_agent_through_serve_openai():
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    calls: list[str] = []

    @function_tool
    def get_current_time(timezone: str) -> str:
        """Current time in a timezone (IANA name)."""
        calls.append(timezone)
        return f"10:00 in {timezone}"

    @function_tool
    def send_email(to: str, body: str) -> str:
        """Send an email message to a recipient."""
        calls.append(to)
        return "sent"

    backend = ScriptedBackend(arguments=['{"timezone": "Asia/Tokyo"}'], choices=["get_current_time"],
                              answers=["It is 10:00 in Tokyo."])
    nexus = Nexus.from_settings(Settings(gate={"model": "/nonexistent"}), embedder=HashEmbedder(), backend=backend,
                                gate_factory=lambda slb, reg: ScoreGate(slb, route_margin=0.1, no_tool_below=0.1))
    set_tracing_disabled(True)
    with serving(create_app(nexus, ServeSettings(mode="route"))) as url:
        model = OpenAIChatCompletionsModel(model="nexus", openai_client=AsyncOpenAI(base_url=f"{url}/v1", api_key="unused"))
        agent = Agent(name="assistant", instructions="Use the tools.", model=model, tools=[get_current_time, send_email])
        result = anyio.run(lambda: Runner.run(agent, "What is the current time in Tokyo?", max_turns=4))
    assert calls == ["Asia/Tokyo"]                       # the routed tool, with the LLM's arguments, run by the SDK
    assert result.final_output == "It is 10:00 in Tokyo."  # answered from the tool result on the second turn
