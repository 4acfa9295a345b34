"""OpenAI-compatible HTTP backend (llama.cpp server, `python -m llama_cpp.server`, vLLM, Ollama, ...).

Uses the text-completions endpoint with our own prompts, greedy decoding, a GBNF grammar in the request
(`grammar` is what llama.cpp servers read; vLLM calls it `guided_grammar`, set `grammar_field`), and
streaming so the first argument token is timed when it arrives. Only the standard library is used.

The server owns its KV cache: `reset()` cannot empty it and `prefilled_tokens` is reported as the whole
prompt (an upper bound). Token counts come from the server's tokenize endpoint.

>>> b = OpenAIHttpBackend("http://127.0.0.1:8000/v1", n_ctx=8192)  # doctest: +SKIP
>>> b.choose(Prompt(("Request: time in UTC\\nTool:",)), ["get_time", "git_status"]).option  # doctest: +SKIP
'get_time'
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any, Iterator, Sequence

from nexus.llm.base import ContextOverflow, Generation, LLMError, Prompt, Selection, in_a_loop
from nexus.llm.grammars import choice_gbnf

TIMEOUT_S = 120.0


class ServerUnreachable(LLMError):
    """No connection to the server at all (as opposed to an HTTP error answer)."""


class OpenAIHttpBackend:
    def __init__(self, base_url: str, *, model: str = "local", n_ctx: int = 8192, api_key: str | None = None,
                 grammar_field: str | None = "grammar", chat_template: str | None = None, timeout: float = TIMEOUT_S):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.model_id = f"openai:{model}@{self.base_url}"
        self.n_ctx = n_ctx
        self.chat_template = chat_template
        self.grammar_field = grammar_field
        self.timeout = timeout
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._counts: dict[str, int] = {}
        self._tokenize_route: tuple[str, str] | None = None

    # -- transport ---------------------------------------------------------------------------------
    def _request(self, url: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(url, json.dumps(body).encode("utf-8"), self._headers, method="POST")
        try:
            return urllib.request.urlopen(request, timeout=self.timeout)
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:300]
            raise LLMError(f"{url}: HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ServerUnreachable(f"cannot reach the LLM server at {url}: {reason}; is it running? (NEXUS_OPENAI_BASE_URL)") from None

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        with self._request(self.base_url + path, body) as response:
            return json.loads(response.read().decode("utf-8"))

    def _stream(self, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        with self._request(self.base_url + "/completions", {**body, "stream": True}) as response:
            for raw in response:
                line = raw.decode("utf-8").strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                yield json.loads(data)

    def _completion_body(self, prompt: Prompt, max_tokens: int, grammar: str | None, stop: Sequence[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "prompt": prompt.text, "max_tokens": max_tokens,
                                "temperature": 0.0, "top_p": 1.0}
        if stop:
            body["stop"] = list(stop)
        if grammar and self.grammar_field:
            body[self.grammar_field] = grammar
        return body

    # -- tokens --------------------------------------------------------------------------------------
    def _tokenize_count(self, text: str) -> int:
        root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        routes = [self._tokenize_route] if self._tokenize_route else [
            (self.base_url + "/extras/tokenize", "input"),   # llama-cpp-python server
            (root + "/extras/tokenize", "input"),
            (root + "/tokenize", "content"),                 # llama.cpp server
            (root + "/tokenize", "prompt"),                  # vLLM
        ]
        for url, field in routes:
            body = {field: text, "model": self.model}
            try:
                with self._request(url, body) as response:
                    data = json.loads(response.read().decode("utf-8"))
            except ServerUnreachable:
                raise
            except LLMError:  # this server has no such route: try the next dialect
                continue
            count = data.get("count", len(data.get("tokens", [])) if isinstance(data, dict) else None)
            if count is not None:
                self._tokenize_route = (url, field)
                return int(count)
        raise LLMError(f"{self.base_url}: the server offers no tokenize endpoint; token accounting needs one")

    def count_tokens(self, prompt: Prompt) -> int:
        """Sum of per-segment counts (segments are cached) plus the BOS the server adds to a prompt."""
        if "" not in self._counts:
            self._counts[""] = self._tokenize_count("")  # what the tokenizer adds to any text (BOS), if anything
        overhead = self._counts[""]
        total = max(overhead, 1)
        for segment in prompt.segments:
            if segment not in self._counts:
                self._counts[segment] = self._tokenize_count(segment)
            total += self._counts[segment] - overhead
        return total

    def _fit(self, prompt: Prompt, reserve: int) -> int:
        n = self.count_tokens(prompt)
        if n + reserve > self.n_ctx:
            raise ContextOverflow(n + reserve, self.n_ctx)
        return n

    # -- the protocol --------------------------------------------------------------------------------
    def prefill(self, prompt: Prompt) -> int:
        n = self._fit(prompt, 1)
        self._post("/completions", self._completion_body(prompt, 1, None, ()))
        return n

    def choose(self, prompt: Prompt, options: Sequence[str], prior: Sequence[float] | None = None) -> Selection:
        """The server picks under a choice grammar; `prior` cannot be fused without token logits and is unused."""
        if not options:
            raise ValueError("choose() needs at least one option")
        n = self._fit(prompt, 64)
        data = self._post("/completions", self._completion_body(prompt, 64, choice_gbnf(options), ("\n",)))
        said = data["choices"][0]["text"].strip()
        if said in options:
            option = said
        else:  # a server that ignored the grammar: take the option sharing the longest prefix
            option = max(options, key=lambda o: (len(_shared_prefix(o, said)), -len(o)))
        return Selection(option, n, n, time.perf_counter())

    def generate(self, prompt: Prompt, *, grammar: str | None = None, max_tokens: int = 256,
                 stop: Sequence[str] = ()) -> Generation:
        n = self._fit(prompt, max_tokens)
        stops = tuple(stop) or (("\n",) if grammar else ())  # grammar-shaped JSON is one line
        parts: list[str] = []
        t_first: float | None = None
        finish, produced, looped = None, 0, False
        for chunk in self._stream(self._completion_body(prompt, max_tokens, grammar, stops)):
            choice = (chunk.get("choices") or [{}])[0]
            text = choice.get("text") or ""
            if text:
                if t_first is None:
                    t_first = time.perf_counter()
                parts.append(text)
                produced += 1
                if in_a_loop(parts):  # each streamed piece is a token: the same rule as the in-process backend
                    looped = True
                    break
            finish = choice.get("finish_reason") or finish
        now = time.perf_counter()
        return Generation("".join(parts), n, n, produced, t_first or now, now,
                          finished=finish != "length" and not looped, looped=looped)

    def reset(self) -> None:
        """Nothing to do: the server's cache is not ours to empty."""

    def close(self) -> None:
        """Nothing to do: no connection is kept open."""


def _shared_prefix(a: str, b: str) -> str:
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[:i]
