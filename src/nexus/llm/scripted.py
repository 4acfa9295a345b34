"""A scripted LLM backend: deterministic answers from a script, every request recorded (for tests and dry runs).

>>> from nexus.llm.base import Prompt
>>> b = ScriptedBackend(arguments=['{"city": "Paris"}'], choices=["get_weather"])
>>> b.choose(Prompt(("Tool:",)), ["send_email", "get_weather"]).option
'get_weather'
>>> b.generate(Prompt(("Arguments:",)), grammar="root ::= ...").text
'{"city": "Paris"}'
"""

from __future__ import annotations

import time
from typing import Sequence

from nexus.llm.base import ContextOverflow, Generation, Prompt, Selection


class ScriptedBackend:
    """Answers `choose` from `choices`, grammar-constrained `generate` from `arguments`, plain `generate` from
    `answers`; each script is consumed in order and its last entry repeats. A token is a whitespace-separated
    word (plus one for BOS); the prefix cache is simulated so `prefilled_tokens` behaves like a real backend's."""

    model_id = "scripted"
    chat_template = None

    def __init__(self, arguments: Sequence[str] = ("{}",), choices: Sequence[str] = (), answers: Sequence[str] = ("OK.",),
                 n_ctx: int = 8192):
        self.n_ctx = n_ctx
        self._scripts = {"arguments": list(arguments), "choices": list(choices), "answers": list(answers)}
        self._used = {name: 0 for name in self._scripts}
        self.calls: list[tuple[str, Prompt, object]] = []  # (kind, prompt, grammar or options)
        self.priors: list[tuple[float, ...] | None] = []    # the prior of each choose() call
        self._cached: list[str] = []

    def _next(self, name: str) -> str | None:
        script = self._scripts[name]
        if not script:
            return None
        value = script[min(self._used[name], len(script) - 1)]
        self._used[name] += 1
        return value

    @staticmethod
    def _tokens(prompt: Prompt) -> list[str]:
        return ["<bos>"] + prompt.text.split()

    def count_tokens(self, prompt: Prompt) -> int:
        return len(self._tokens(prompt))

    def _prefill(self, prompt: Prompt, reserve: int) -> tuple[int, int]:
        tokens = self._tokens(prompt)
        if len(tokens) + reserve > self.n_ctx:
            raise ContextOverflow(len(tokens) + reserve, self.n_ctx)
        common = 0
        while common < min(len(tokens), len(self._cached)) and tokens[common] == self._cached[common]:
            common += 1
        self._cached = tokens
        return len(tokens), len(tokens) - min(common, len(tokens) - 1)

    def prefill(self, prompt: Prompt) -> int:
        self.calls.append(("prefill", prompt, None))
        return self._prefill(prompt, 0)[1]

    def choose(self, prompt: Prompt, options: Sequence[str], prior: Sequence[float] | None = None) -> Selection:
        self.calls.append(("choose", prompt, tuple(options)))
        self.priors.append(tuple(prior) if prior is not None else None)
        total, prefilled = self._prefill(prompt, 0)
        wanted = self._next("choices")
        return Selection(wanted if wanted in options else options[0], total, prefilled, time.perf_counter())

    def generate(self, prompt: Prompt, *, grammar: str | None = None, max_tokens: int = 256,
                 stop: Sequence[str] = ()) -> Generation:
        self.calls.append(("generate", prompt, grammar))
        total, prefilled = self._prefill(prompt, max_tokens)
        text = (self._next("arguments") if grammar else self._next("answers")) or ""
        for s in stop:
            text = text.split(s, 1)[0]
        first = time.perf_counter()
        return Generation(text, total, prefilled, len(text.split()), first, time.perf_counter(), True)

    def reset(self) -> None:
        self._cached = []

    def close(self) -> None:
        pass
