"""Stage 6: compiled schema KV blocks — store, compiler, injector with repair, fidelity metrics, live use.

A tool line's KV is computed once behind the prompt header (`SchemaBlockCompiler`), kept on disk with a
checksummed header (`BlockStore`), and injected where the line lands in a live prompt (`BlockInjector`, its keys
re-rotated in its saved state, `nexus.llm.rope`), with a repair policy (`RepairPolicy`) for blocks that land off
their anchor.
`attach_blocks` gives a llama.cpp backend all of it; `nexus.kv.fidelity` holds the pure-numpy metrics.
"""

from nexus.kv.compiler import CompileReport, SchemaBlockCompiler, model_file_hash
from nexus.kv.injector import BlockInjector, Injection, RepairPolicy
from nexus.kv.live import KVBlocks, attach_blocks, detach_blocks
from nexus.kv.store import Block, BlockFileError, BlockKey, BlockStore

__all__ = ["Block", "BlockFileError", "BlockInjector", "BlockKey", "BlockStore", "CompileReport", "Injection", "KVBlocks",
           "RepairPolicy", "SchemaBlockCompiler", "attach_blocks", "detach_blocks", "model_file_hash"]
