"""`python -m nexus.llm.llama_server ARGS`: llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`,
same arguments) with llama.cpp's extra weight layouts off on CPUs that report AMX, where the first decode dies with
SIGILL inside a VM that does not keep the tile state (see `native.GGUFModel`). Elsewhere it is that server unchanged.
"""

from __future__ import annotations

import runpy

from nexus.llm.native import cpu_reports_amx


def plain_weight_buffers() -> None:
    """Make every `llama_model_default_params()` the server asks for keep the weights in plain CPU buffers."""
    from llama_cpp import llama_cpp as bindings   # the module `llama_cpp.Llama` calls through

    default = bindings.llama_model_default_params

    def params():
        p = default()
        p.use_extra_bufts = False
        return p

    bindings.llama_model_default_params = params


if __name__ == "__main__":
    if cpu_reports_amx():
        plain_weight_buffers()
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
