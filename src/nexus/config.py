"""One configuration tree, read from the environment (prefix NEXUS_) when it is built, never at import."""

from __future__ import annotations

import difflib
import logging
import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

log = logging.getLogger(__name__)
_WARNED: set[str] = set()   # unknown NEXUS_* variables already warned about (once a process)


def shipped_models_dir() -> Path:
    """`models/` of this checkout: the default embedder and gate shipped with the repository (see models/README.md)."""
    return Path(__file__).resolve().parents[2] / "models"


def _shipped_embedder() -> str | None:
    folder = shipped_models_dir() / "embedder"
    return str(folder) if (folder / "nexus-tuning.json").is_file() else None


class GateSettings(BaseSettings):
    """Example: `NEXUS_GATE_MODEL=/models/my-gate nexus gate eval ...`."""

    model_config = SettingsConfigDict(env_prefix="NEXUS_GATE_", extra="ignore")

    model: Path | None = Field(None, description="trained gate folder; default <cache_dir>/gate/default")
    base_model: Path | None = Field(None, description="Hugging Face cross-encoder/encoder folder to train from; default packaged MiniLM")
    scorer: str = Field("segment-cosine", description="how the base model scores a pair: segment-cosine (an encoder, "
                        "e.g. MiniLM, reading turn and tool jointly) | split-cosine (the same encoder with its lower "
                        "layers per segment and the tool side cached: ~4x faster a turn) | cross-encoder (a Hugging "
                        "Face one-logit reranker folder)")
    k: int = Field(10, description="SLB candidates the gate rescores")
    shortlist_k: int = Field(5, description="signatures a SHORTLIST decision hands the LLM (more for multi-call turns)")
    context_turns: int = Field(2, description="recent user turns a follow-up turn is read with")
    per_request: int = Field(3, description="SLB tools each request of a several-request turn adds to a SHORTLIST (0: off)")
    risk_route: float = Field(0.01, description="target error rate of ROUTE decisions")
    risk_no_tool: float = Field(0.05, description="target error rate of NO_TOOL decisions")
    risk_shortlist: float = Field(0.05, description="target miss rate of SHORTLIST decisions")
    no_tool_share: float = Field(0.2, description="share of turns expected to need no tool; p_no_tool and the NO_TOOL threshold are fitted for this mix")
    no_tool_reference: bool = Field(True, description="raise the NO_TOOL threshold on a registry to the lowest "
                                    "p_no_tool its reference turns that need no tool get (nexus.gate.reference)")
    # 0.25 chosen over 0 / 0.25 / 0.5 / 1.0 on the demo's 44 tools (session 34): of the 1,393 rows of the seen demo sets, 0.25
    # turns the 6 no-tool turns below the floor ("How are you today?", "See you tomorrow.") into NO_TOOL and 3 tool
    # requests that were already wrong; 0.5 also loses a right `search_nodes`; on BFCL the floor sits below the calibrated
    # threshold, so no BFCL figure can move (docs/history.md, "Session 34")
    no_tool_reference_margin: float = Field(0.25, ge=0.0, description="log-odds the registry's NO_TOOL floor sits below "
                                            "the lowest reference turn's p_no_tool (never below the calibrated threshold)")
    threads: int = Field(1, description="torch CPU threads for the cross-encoder at inference (1: beside the LLM on a 2-core machine two threads oversubscribe and run several times slower)")
    train_threads: int | None = Field(None, description="torch CPU threads for `nexus gate train` (default: every core; 2 threads train 1.7x faster than 1 on 2 idle cores)")
    decision_log: Path | None = Field(None, description="append every decision as JSON Lines here")
    # sure_top / sure_margin: chosen on dev splits D1-D3 at N=10 (90 tool + 90 no-tool turns each, tools disjoint from T;
    # docs/history.md, session 45): the pair on a 0.025 grid that skips the most turns while every split's skipped turns
    # stay >= 0.99 right (no-tool turns counted as errors), ties to the larger margin: 104 turns, all right. sure_p is
    # (104 + 1) / (104 + 2), the rule of succession (the dev precision without claiming it is exactly 1)
    sure: bool = Field(True, description="on a registry within k, ROUTE a turn the SLB is sure of without the cross-encoder "
                       "(NEXUS_GATE_SURE=off: the cross-encoder reads every turn)")
    sure_top: float = Field(0.80, description="the SLB top score a sure turn needs")
    sure_margin: float = Field(0.20, description="the SLB margin (top minus second score) a sure turn also needs")
    sure_p: float = Field(0.9906, ge=0.0, le=1.0, description="the p_top1 a sure ROUTE reports: its precision on the dev splits")
    rank: Literal["slb", "fused"] = Field("slb", description="how calibration orders the candidates: by the SLB's score "
                                          "(chosen on dev: the cross-encoder cost top-1 on registries it never saw) | "
                                          "fused with the cross-encoder's logit")

    def training_threads(self) -> int:
        """Torch threads for training: `train_threads`, else every core."""
        return self.train_threads or os.cpu_count() or 1

    def sure_route(self):
        """The gate's cascade (`nexus.gate.gate.SureRoute`), or None when it is off (`sure`)."""
        from nexus.gate.gate import SureRoute

        return SureRoute(self.sure_top, self.sure_margin, self.sure_p) if self.sure else None


class ServeSettings(BaseSettings):
    """`nexus serve openai|mcp`. Example: `NEXUS_SERVE_TOKEN=s3cret nexus serve openai --upstream http://127.0.0.1:8000/v1`."""

    model_config = SettingsConfigDict(env_prefix="NEXUS_SERVE_", extra="ignore")

    host: str = Field("127.0.0.1", description="bind address (loopback by default; another address needs a token)")
    port: int = Field(8080, description="TCP port")
    token: str | None = Field(None, description="bearer token every request must carry (Authorization: Bearer ...)")
    mode: str = Field("filter", description="serve openai: filter (forward to --upstream with tools narrowed) | route (answer with Nexus's own LLM)")
    upstream: str | None = Field(None, description="OpenAI-compatible base URL filter mode forwards to, e.g. http://127.0.0.1:8000/v1")
    upstream_key: str | None = Field(None, description="API key sent to the upstream (else the client's Authorization is not forwarded)")
    upstream_timeout_s: float = Field(300.0, description="seconds an upstream request may take")
    max_body_bytes: int = Field(8 * 1024 * 1024, description="largest request body accepted (413 above)")
    max_tools: int = Field(4096, description="most tools one request may carry (413 above)")
    max_messages: int = Field(1024, description="most messages one request may carry (413 above)")
    quarantine: bool = Field(True, description="leave out tools `nexus registry scan` flags as poisoned (serve mcp)")
    model_name: str = Field("nexus", description="model id route mode reports")


class KVSettings(BaseSettings):
    """Compiled schema KV blocks in the live path. Example: `NEXUS_KV_BLOCKS=off nexus demo`."""

    model_config = SettingsConfigDict(env_prefix="NEXUS_KV_", extra="ignore")

    # on by default since session 5: with blocks compiled in the live path's cells (`SchemaBlockCompiler.canonical`),
    # `nexus bench latency --paths nexus,nexus_kv --sizes 50 --limit 20` on dev split D1 made the same call with blocks on
    # and off on 20 of 20 turns (docs/history.md, KV blocks); `off` keeps the plain prefill
    blocks: Literal["on", "off"] = Field("on", description="inject compiled KV blocks for routed schemas and shortlist signatures (llama.cpp backend; `off`: prefill them)")
    dir: Path | None = Field(None, description="block folder; default <cache_dir>/kv")
    budget_mb: int = Field(512, description="disk budget of the block folder (least recently used blocks evicted)")
    audit: bool = Field(False, description="re-prefill every injected prompt too and log top-1 / KL against it and the batch noise floor (slow)")
    # threshold 0 (every block off its anchor re-prefilled, with what follows it: exactly the plain path) chosen on
    # dev split D1 (`nexus bench kv --tools D1/tools.json --limit 6`, docs/history.md): EPIC's first 32 tokens were 2-15x the
    # noise floor at drift 16-256 and flipped top-1 on 1 of 3 shortlists; the suffix re-decode was worse
    repair: str = Field("epic", description="repair method off the anchor: epic (re-decode the block's first r tokens) | suffix (its last r)")
    threshold: int = Field(0, description="drift (positions off the anchor) beyond which a block is re-prefilled")
    per_token: float = Field(0.0, description="repair depth r = max(min_tokens, ceil(per_token * drift))")
    min_tokens: int = Field(32, description="least tokens re-decoded off the anchor")
    # Isolated tool lines (`Prompt.isolated`): every line of a shortlist then comes from its compiled block exactly
    # (moved into place in its saved state, no repair), so nexus_kv prefills what full_warm does. On since session 8:
    # on dev split D3 (`nexus bench latency --sizes 10,25 --limit 20`) nexus_kv TTFAT p50 286 / 302 ms vs 439 / 468
    # sequential (full_warm 321 / 310), the same tool and argument accuracy and calls (docs/history.md, KV blocks); without
    # blocks each line is its own batch, so nexus's SHORTLIST turns cost more (1,267 vs 1,057 ms at N=10)
    isolated_lines: bool = Field(True, description="encode a ROUTE / SHORTLIST prompt's tool lines independently of "
                                 "each other (each behind the header alone; the request attends to all), so that each "
                                 "comes from its compiled KV block wherever it lands (with blocks on and off alike)")


class Settings(BaseSettings):
    """All knobs of Nexus. Example: `NEXUS_EMBEDDER=/models/bge-small nexus bench routing ...`."""

    model_config = SettingsConfigDict(env_prefix="NEXUS_", env_nested_delimiter="__", extra="ignore")

    cache_dir: Path = Field(Path(".nexus-cache"), description="where indexes and trained models are kept")
    embedder: str | None = Field(None, description="sentence-transformers folder; default: the tuned embedder shipped in "
                                 "models/embedder, else the packaged all-MiniLM-L6-v2 ('minilm' selects the packaged one)")
    embedder_precision: Literal["auto", "float32", "bfloat16"] = Field(
        "auto", description="the embedder's compute precision: auto = bfloat16 where the CPU has native bf16 "
        "(AVX512-BF16/AMX), else float32")
    shipped_models: bool = Field(True, description="use the embedder and gate shipped in models/ when none is given "
                                 "(false: the packaged MiniLM, and only a gate trained into the cache)")
    # Both chosen on three BFCL dev registries (seeds 1-3, tools disjoint from the seed-0 test registry) by
    # `nexus bench constants`: lexical 0.0/0.1/0.2/0.3/0.5 gave mean top-1 0.825/0.861/0.860/0.859/0.851; the name
    # bonus changed nothing there (no BFCL turn names its tool) and stays for users who do (README, issue 8).
    lexical_weight: float = Field(0.1, description="weight of the BM25 channel in the SLB's fused score")
    name_bonus: float = Field(1.0, description="score added when the turn names a tool exactly")
    data_dir: Path = Field(Path("../shared/data"), description="BFCL / MCP evaluation data (read-only)")
    servers_dir: Path = Field(Path(".servers"), description="where `make setup` installed the demo MCP servers")
    llm_model: str | None = Field(None, description="GGUF path; default: the packaged Gemma 3 270M Q4_K_M")
    llm_backend: str = Field("llama-cpp", description="llama-cpp | openai")
    openai_base_url: str = Field("http://127.0.0.1:8000/v1", description="OpenAI-compatible server for llm_backend=openai")
    openai_model: str = Field("local", description="model name sent to the OpenAI-compatible server")
    n_ctx: int = Field(8192, description="LLM context window used by the llama.cpp backend")
    n_threads: int = Field(2, description="CPU threads for llama.cpp")
    # one-prompt since session 6: on dev split D3 (`nexus bench latency --sizes 10,25 --limit 20`) the same tools,
    # arguments right 0.45 / 0.65 vs 0.40 / 0.55 with two prompts, TTFAT p50 -29..-41 % (nexus), -6..-22 % (nexus_kv);
    # showing the gate's top candidate's full schema first instead lost 10-15 points of tool accuracy (docs/history.md)
    shortlist_view: Literal["one-prompt", "two-prompts"] = Field("one-prompt", description="a SHORTLIST turn: one-prompt "
        "(the model picks from the candidates' signatures and its arguments continue that prompt, under the picked tool's "
        "full-schema grammar) | two-prompts (the arguments in a second prompt that shows the picked tool's full schema)")
    serve: ServeSettings = Field(default_factory=ServeSettings, description="the servers (env prefix NEXUS_SERVE_)")
    gate: GateSettings = Field(default_factory=GateSettings, description="the boundary gate (env prefix NEXUS_GATE_; "
                               "NEXUS_GATE_K is the SLB candidates every command hands the gate)")
    kv: KVSettings = Field(default_factory=KVSettings, description="compiled schema KV blocks (env prefix NEXUS_KV_)")

    def kv_dir(self) -> Path:
        return self.kv.dir or self.cache_dir / "kv"

    @model_validator(mode="after")
    def _default_embedder(self) -> "Settings":
        if self.embedder is None and self.shipped_models:
            self.embedder = _shipped_embedder()
        return self

    @model_validator(mode="after")
    def _warn_unknown_variables(self) -> "Settings":
        for name, near in unknown_variables(os.environ).items():
            if name in _WARNED:
                continue
            _WARNED.add(name)
            log.warning("%s is not a Nexus setting and is ignored%s", name, f" (did you mean {near}?)" if near else "")
        return self

    def index_path(self) -> Path:
        return self.cache_dir / "slb.idx"

    def default_gate_dir(self) -> Path:
        """Where `nexus gate train` saves and every command looks for a gate unless told otherwise."""
        return self.cache_dir / "gate" / "default"

    def with_gate_model(self, model: Path | None) -> "Settings":
        """These settings with `gate.model` replaced (a command's --gate-model); unchanged for None."""
        return self if model is None else self.model_copy(update={"gate": self.gate.model_copy(update={"model": Path(model)})})

    def gate_dir(self) -> Path:
        """The gate folder in force: NEXUS_GATE_MODEL, else the cache's default when one was trained, else the gate
        shipped in models/gate (trained for the shipped embedder)."""
        if self.gate.model:
            return self.gate.model
        shipped = shipped_models_dir() / "gate"
        if self.shipped_models and not self.default_gate_dir().is_dir() and (shipped / "nexus_gate.json").is_file():
            return shipped
        return self.default_gate_dir()


@lru_cache(maxsize=1)
def known_variables() -> frozenset[str]:
    """Every environment variable the settings tree reads (NEXUS_<FIELD>, NEXUS_GATE_<FIELD>, ...)."""
    names: set[str] = set()
    for cls in (Settings, GateSettings, ServeSettings, KVSettings):
        prefix = cls.model_config.get("env_prefix", "")
        names |= {f"{prefix}{field}".upper() for field, info in cls.model_fields.items()
                  if not isinstance(info.default_factory, type)}
    return frozenset(names)


def unknown_variables(environ: "os._Environ[str] | dict[str, str]") -> dict[str, str | None]:
    """NEXUS_* variables no setting reads (a typo, or one that was removed), each with the closest known name.

    >>> unknown_variables({"NEXUS_TOP_K": "5", "NEXUS_GATE_K": "5", "PATH": "/bin"})
    {'NEXUS_TOP_K': 'NEXUS_GATE_K'}
    """
    known = known_variables()
    unknown = sorted(n for n in environ if n.upper().startswith("NEXUS_") and "__" not in n and n.upper() not in known)
    return {n: next(iter(difflib.get_close_matches(n.upper(), known, n=1, cutoff=0.75)), None) for n in unknown}
