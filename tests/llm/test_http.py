"""The OpenAI-compatible HTTP backend against a real `python -m llama_cpp.server` on loopback, serving the
packaged GGUF (started and stopped by this module)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest
from jsonschema import Draft202012Validator

from nexus.llm.base import ContextOverflow, LLMError, Prompt
from nexus.llm.grammars import arguments_gbnf
from nexus.llm.http import OpenAIHttpBackend
from nexus.llm.prompts import PromptBuilder

pytest.importorskip("llama_cpp.server.app", reason="needs llama-cpp-python[server] (fastapi, starlette-context)")

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
          "required": ["city", "days"]}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(gguf_path):
    port = free_port()
    log = tempfile.TemporaryFile("w+")  # a pipe nobody reads would fill up and stall the server
    proc = subprocess.Popen(
        [sys.executable, "-m", "nexus.llm.llama_server", "--model", gguf_path, "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", "2048", "--n_threads", "1", "--model_alias", "gemma-270m", "--verbose", "False"],
        stdout=log, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(base + "/models", timeout=2) as response:
                if response.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            log.seek(0)
            pytest.fail(f"llama_cpp.server did not start: {log.read()[-2000:]}")
        time.sleep(0.3)
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(scope="module")
def backend(server):
    return OpenAIHttpBackend(server, model="gemma-270m", n_ctx=2048)


def test_tokens_are_counted_by_the_server(backend):
    assert backend.count_tokens(Prompt(("Hello world",))) == 3  # BOS + "Hello" + " world"
    assert backend.count_tokens(Prompt(("Hello", " world"))) == 3  # segments add up, BOS counted once


@pytest.mark.slow  # llama-cpp-python's server applies the grammar to all 262k tokens each step: ~1 s per token here
def test_grammar_constrained_generation_is_schema_valid(backend):
    builder = PromptBuilder()
    tool_line = "get_forecast(city:str, days:int) Weather forecast for a city.\n"
    prompt = builder.arguments_prompt(builder.call_prompt("Five-day forecast for Lyon", [tool_line]), "get_forecast")
    generation = backend.generate(prompt, grammar=arguments_gbnf(SCHEMA), max_tokens=48)
    Draft202012Validator(SCHEMA).validate(json.loads(generation.text))
    assert generation.finished and generation.t_first_token <= generation.t_end
    assert generation.prompt_tokens == backend.count_tokens(prompt)


def test_choose_returns_one_of_the_options(backend):
    builder = PromptBuilder()
    prompt = builder.call_prompt("What time is it in Tokyo?", ["get_time(timezone) Current time\n",
                                                               "send_email(to, subject) Send an email\n"])
    assert backend.choose(prompt, ["get_time", "send_email"]).option == "get_time"
    assert backend.choose(prompt, ["send_email", "get_time"]).option == "get_time"  # not merely the first option


def test_plain_generation_stops(backend):
    generation = backend.generate(PromptBuilder().answer_prompt("Thanks!"), max_tokens=24, stop=("\n",))
    assert generation.text.strip() and "\n" not in generation.text  # an answer, cut at the line break
    assert generation.finished  # stopped by the stop string, not by max_tokens


def test_overflow_and_unreachable_server(backend):
    with pytest.raises(ContextOverflow):
        backend.generate(Prompt(("word " * 2100,)), max_tokens=8)
    dead = OpenAIHttpBackend(f"http://127.0.0.1:{free_port()}/v1", n_ctx=2048, timeout=2)
    with pytest.raises(LLMError, match="cannot reach the LLM server"):
        dead.generate(Prompt(("hi",)), max_tokens=1)



def test_a_stream_stuck_in_a_loop_is_closed_early_as_unfinished(monkeypatch):
    # a server that would stream one short cycle until the token cap: the backend stops reading once the last
    # LOOP_SPAN pieces repeat it, as the in-process backend does, and the call is rejected as a loop
    from nexus.llm.base import LOOP_SPAN

    backend = OpenAIHttpBackend("http://127.0.0.1:9/v1", model="m", n_ctx=2048)
    read = []

    def stream(body):
        for i in range(200):
            read.append(i)
            yield {"choices": [{"text": ("la", "la", "!")[i % 3], "finish_reason": "length" if i == 199 else None}]}

    monkeypatch.setattr(backend, "_stream", stream)
    monkeypatch.setattr(backend, "_fit", lambda prompt, reserve: 5)
    out = backend.generate(Prompt(("Say it again: ",)), grammar='root ::= ("la" | "!")+', max_tokens=200)
    assert out.looped and not out.finished and out.completion_tokens == LOOP_SPAN == len(read)
    assert out.text == "lala!" * (LOOP_SPAN // 3)
