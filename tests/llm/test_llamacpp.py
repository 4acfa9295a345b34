"""The in-process llama.cpp backend on the packaged Gemma 3 270M: grammar-constrained generation that must
be schema-valid, the prefix cache, constrained choice, overflow, and the KV sequence operations the next
stage builds on."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from nexus.errors import ModelError
from nexus.llm.base import ContextOverflow, Prompt
from nexus.llm.grammars import arguments_gbnf
from nexus.llm.prompts import PromptBuilder, schema_line

SCHEMA = {"type": "object", "properties": {
    "city": {"type": "string", "description": "City name"},
    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer", "description": "Forecast length in days"},
    "hourly": {"type": "boolean"}}, "required": ["city", "days"]}


@pytest.fixture(scope="module")
def backend(gguf_path):
    from nexus.llm.llamacpp import LlamaCppBackend

    llm = LlamaCppBackend(gguf_path, n_ctx=2048, n_threads=1)
    yield llm
    llm.close()


def forecast_prompt(turn: str) -> Prompt:
    from nexus.registry import Tool

    tool = Tool("get_forecast", "Weather forecast for a city.", SCHEMA, "t")
    builder = PromptBuilder()
    return builder.arguments_prompt(builder.call_prompt(turn, [schema_line("get_forecast", tool)]), "get_forecast")


def test_context_is_project_controlled(backend):
    ctx = backend.context
    # one prompt gets the 2048-token window; the shared cells hold a reserve for the KV-block sequences beside it
    assert backend.n_ctx == 2048 and ctx.n_ctx == 2048 + 1024 and ctx.n_seq_max >= 2
    assert backend.model.n_swa > 0  # Gemma 3: sliding-window layers, so the context keeps a full-size SWA cache


def test_grammar_constrained_generation_is_schema_valid(backend):
    generation = backend.generate(forecast_prompt("Three-day forecast for Lyon in celsius"),
                                  grammar=arguments_gbnf(SCHEMA), max_tokens=64)
    assert generation.finished
    arguments = json.loads(generation.text)
    Draft202012Validator(SCHEMA).validate(arguments)
    assert arguments["city"] == "Lyon" and arguments["days"] == 3  # greedy decoding reads the request
    assert generation.t_first_token <= generation.t_end and generation.completion_tokens > 0


def test_prefix_cache_prefills_only_the_new_suffix(backend):
    backend.reset()
    first = backend.prefill(forecast_prompt("Forecast for Oslo"))
    again = backend.prefill(forecast_prompt("Forecast for Oslo"))
    other = backend.prefill(forecast_prompt("Forecast for Rome, 5 days"))
    assert first == backend.count_tokens(forecast_prompt("Forecast for Oslo"))
    assert again == 1  # only the last token is recomputed, for its logits
    # the header and schema stay cached: exactly the tokens after the two prompts' common prefix are computed
    oslo, rome = backend.tokens(forecast_prompt("Forecast for Oslo")), backend.tokens(forecast_prompt("Forecast for Rome, 5 days"))
    common = next(i for i, (a, b) in enumerate(zip(oslo, rome)) if a != b)
    assert other == len(rome) - common and common > len(rome) - 20
    backend.reset()
    assert backend.prefill(forecast_prompt("Forecast for Oslo")) == first


def test_choose_walks_the_name_trie(backend):
    builder = PromptBuilder()
    prompt = builder.call_prompt("What is the weather in Paris?", ["get_weather(city) Current weather for a city\n",
                                                                  "send_email(to, subject) Send an email\n"])
    selection = backend.choose(prompt, ["get_weather", "send_email", "get_weather_history"])
    assert selection.option == "get_weather"  # ends where a longer option goes on: the line break wins
    assert selection.prompt_tokens == backend.count_tokens(prompt)
    assert backend.choose(prompt, ["get_weather_history", "send_email", "get_weather"]).option == "get_weather"
    # where one option ends and a longer one goes on, the prior's mass below each branch decides between them
    assert backend.choose(prompt, ["get_weather", "get_weather_history"], prior=[1e-6, 1 - 1e-6]).option == "get_weather_history"
    assert backend.choose(prompt, ["only_one"]).option == "only_one"
    # a confident prior (the gate's) wins where the model is unsure; the model's own pick when the prior is flat
    options = ["get_weather", "send_email"]
    assert backend.choose(prompt, options, prior=[1e-6, 1 - 1e-6]).option == "send_email"
    assert backend.choose(prompt, options, prior=[0.5, 0.5]).option == backend.choose(prompt, options).option
    with pytest.raises(ValueError, match="one weight per option"):
        backend.choose(prompt, options, prior=[1.0])


def test_choose_prefills_the_tokens_every_option_starts_with_with_the_prompt(backend, monkeypatch):
    builder = PromptBuilder()
    prompt = builder.call_prompt("Show me the last commits", ["git_log(repo_path) Commit history\n",
                                                              "git_status(repo_path) Working tree status\n"])
    options = ["git_log", "git_status", "git_show"]
    paths = [backend._segment(" " + option, prompt.special) for option in options]
    shared = paths[0][:next(i for i in range(len(paths[0])) if len({tuple(p[:i + 1]) for p in paths}) > 1)]
    assert len(shared) >= 1  # " git" (and "_") come before the names part
    backend.reset()
    cold = backend.choose(prompt, options)
    prompt_tokens = backend.tokens(prompt)
    assert backend.context.tokens(backend.seq)[:len(prompt_tokens) + len(shared)] == prompt_tokens + shared
    assert cold.prompt_tokens == len(prompt_tokens) and cold.prefilled_tokens >= len(prompt_tokens) + len(shared)
    # from a warm prompt, the first batch decoded is the shared tokens themselves: no pass for the prompt's last
    # token alone (whose logits would only have said what every option says)
    backend.prefill(prompt)
    batches: list[int] = []
    decode = type(backend.context).decode
    monkeypatch.setattr(type(backend.context), "decode",
                        lambda self, tokens, *rest, **kw: (batches.append(len(tokens)), decode(self, tokens, *rest, **kw))[1])
    warm = backend.choose(prompt, options[::-1])
    assert batches[0] == len(shared)
    assert warm.option == cold.option  # the same pick whatever the order, warm or cold


def test_overflow_is_refused_before_decoding(backend):
    with pytest.raises(ContextOverflow):
        backend.generate(Prompt(("word " * 3000,)), max_tokens=8)


def test_kv_sequence_copy_and_state_round_trip(backend):
    ctx, seq = backend.context, backend.seq
    backend.reset()
    backend.prefill(forecast_prompt("Forecast for Oslo"))
    held = list(ctx.tokens(seq))
    ctx.seq_cp(seq, 1)
    assert ctx.tokens(1) == held and ctx.seq_pos_max(1) == len(held) - 1
    state = ctx.seq_state(1)
    ctx.seq_rm(1)
    assert ctx.tokens(1) == [] and ctx.seq_pos_max(1) == -1
    ctx.set_seq_state(1, state, held)
    assert ctx.seq_pos_max(1) == len(held) - 1
    ctx.seq_rm(1)
    with pytest.raises(ModelError, match="cannot decode at position"):
        ctx.decode([1, 2], seq=0, pos=0 if held else 5)


def test_a_grammar_llama_cpp_refuses_raises_grammar_error(backend):
    # a regex escape (`\d`) that llama.cpp's GBNF parser does not take, as in a real catalogue tool (whois_as)
    from nexus.errors import GrammarError

    schema = {"type": "object", "properties": {"asn": {"type": "string", "pattern": "^AS\\d+$"}}, "required": ["asn"]}
    with pytest.raises(GrammarError):
        backend.generate(forecast_prompt("Who owns AS13335?"), grammar=arguments_gbnf(schema), max_tokens=8)
    # the backend stays usable afterwards
    generation = backend.generate(forecast_prompt("Forecast for Oslo, 2 days"), grammar=arguments_gbnf(SCHEMA), max_tokens=64)
    Draft202012Validator(SCHEMA).validate(json.loads(generation.text))


def test_greedy_decoding_stuck_in_a_loop_stops_early_as_unfinished(backend):
    # a grammar that only lets the model repeat itself: it used to run to the token cap (seconds of decoding per
    # rejected call); now it stops once the last LOOP_SPAN tokens repeat one short cycle, and says so
    from nexus.llm.base import LOOP_SPAN

    out = backend.generate(Prompt(("Say it again and again: ",)), grammar='root ::= "la"+', max_tokens=200)
    assert out.looped and not out.finished
    assert LOOP_SPAN <= out.completion_tokens < 200 and set(out.text) == {"l", "a"}
    normal = backend.generate(forecast_prompt("Forecast for Oslo for 3 days"), grammar=arguments_gbnf(SCHEMA))
    assert normal.finished and not normal.looped


def test_the_grammar_filter_picks_the_best_allowed_token_however_far_down_the_logits_it_is(backend):
    import numpy as np

    from nexus.llm.native import GrammarConstraint

    grammar = GrammarConstraint(backend.model, arguments_gbnf(SCHEMA))
    vocab = len(backend.context.logits())
    everything = grammar.allowed(np.arange(vocab))
    assert 0 < everything.size < 16  # an object opens: '{' and a few spellings of it
    assert set(grammar.allowed(np.concatenate([everything[::-1], np.arange(50)])).tolist()) == \
        set(everything.tolist()) | set(grammar.allowed(np.arange(50)).tolist())
    rng = np.random.default_rng(0)
    for rank in (0, 100, 5000, 100_000):  # the best allowed token at this rank: tiers 1, 256, 8192, all
        logits = rng.normal(size=vocab).astype(np.float32)
        order = np.argsort(-logits)
        target = int(everything[rng.integers(everything.size)])
        logits[everything] = logits[order[min(rank + 50, vocab - 1)]] - 1.0  # every allowed token below the cut
        logits[target] = (logits[order[rank]] + logits[order[rank + 1]]) / 2 if rank else logits[order[0]] + 1
        assert grammar.best(logits) == target
    grammar.close()
