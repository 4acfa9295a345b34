"""Filter mode in front of a real OpenAI-compatible server: `python -m llama_cpp.server` with the bundled Gemma 3
270M GGUF (slow: the model loads and decodes on the CPU). The openai client talks to Nexus, Nexus to llama.cpp."""

from __future__ import annotations

import json
import subprocess
import sys

import openai
import pytest

from nexus.config import ServeSettings, Settings
from nexus.nexus import Nexus
from nexus.router import ScoreGate
from nexus.serve.openai import create_app
from nexus.slb import HashEmbedder

from .conftest import free_port, serving, wait_http

pytestmark = pytest.mark.slow


def test_filter_mode_forwards_narrowed_tools_to_llama_cpp_server(gguf_path, tmp_path):
    port = free_port()
    log = open(tmp_path / "llama.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "nexus.llm.llama_server", "--model", gguf_path, "--host", "127.0.0.1",
                             "--port", str(port), "--n_ctx", "4096", "--n_threads", "2"], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/v1/models", timeout=180)
        nexus = Nexus.from_settings(Settings(gate={"model": "/nonexistent"}), embedder=HashEmbedder(),
                                    gate_factory=lambda slb, reg: ScoreGate(slb, route_margin=0.1, no_tool_below=0.1))
        tools = [{"type": "function", "function": {"name": n, "description": d, "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
            for n, d in [("get_weather", "Current weather for a city"), ("book_hotel", "Book a hotel room in a city"),
                         ("get_population", "Population of a city")]]
        with serving(create_app(nexus, ServeSettings(upstream=f"http://127.0.0.1:{port}/v1", upstream_timeout_s=300))) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", timeout=300, max_retries=0)
            messages = [{"role": "user", "content": "What is the current weather for a city, Paris?"}]
            raw = client.chat.completions.with_raw_response.create(model="gemma", messages=messages, tools=tools, max_tokens=48)
            assert raw.headers["x-nexus-decision"] == "route" and json.loads(raw.headers["x-nexus-kept"]) == ["get_weather"]
            completion = raw.parse()
            assert completion.choices and completion.object == "chat.completion"  # llama.cpp's own answer, passed through
            chunks = list(client.chat.completions.create(model="gemma", messages=messages, tools=tools, max_tokens=16, stream=True))
            assert chunks and all(c.object == "chat.completion.chunk" for c in chunks)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
