import statistics

from nexus.registry import Tool, load_tools_file
from nexus.signatures import GGUFTokenCounter, compile_signature, retrieval_text
from nexus.signatures.compiler import first_sentence, short_type, split_identifier

SCHEMA = {"type": "object", "required": ["repo_path", "message"], "properties": {
    "repo_path": {"type": "string", "description": "Path to the git repository"},
    "message": {"type": "string"}, "amend": {"type": "boolean"},
    "mode": {"type": "string", "enum": ["soft", "mixed", "hard", "keep", "merge"]},
    "files": {"type": "array", "items": {"type": "string"}}}}


def test_signature_keeps_what_is_needed_to_fill_arguments():
    tool = Tool("git_commit", "Records changes to the repository. Long explanation follows here.", SCHEMA, "git")
    sig = compile_signature("git_commit", tool)
    assert sig == "git_commit(repo_path, message, amend?:bool, mode?:soft|mixed|hard|…, …) Records changes to the…"


def test_helpers():
    assert split_identifier("getUserRepos.v2_list") == "get user repos v2 list"
    assert first_sentence("One two three. Four.", 2) == "One two…"
    assert short_type({"type": ["null", "integer"]}) == "int"
    assert short_type({"type": "array", "items": {"type": "integer"}}) == "int[]"
    assert short_type({"anyOf": [{"type": "number"}, {"type": "null"}]}) == "num"


def test_retrieval_text_is_richer_than_signature():
    tool = Tool("git_commit", "Records changes to the repository.", SCHEMA, "git")
    text = retrieval_text("git_commit", tool)
    assert text.startswith("git commit: Records changes") and "repo path (Path to the git repository)" in text


def test_token_counts_with_the_bundled_gguf_vocabulary(gguf_path):
    counter = GGUFTokenCounter(gguf_path)
    assert counter.count("hello world") == 2
    tool = Tool("get_time", "Current time.", {"type": "object", "properties": {"tz": {"type": "string"}}}, "t")
    signature = compile_signature("get_time", tool)
    assert signature == "get_time(tz?) Current time"
    assert counter.count(signature) == 8  # pieces of the GGUF vocabulary (not 3 words), no BOS


def test_median_signature_tokens_on_bfcl(data_dir, gguf_path):
    from nexus.datasets.bfcl import build_dataset, write_dataset
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        write_dataset(Path(tmp), *build_dataset(data_dir / "bfcl", 250, 0))
        tools = load_tools_file(Path(tmp) / "tools.json")
    counter = GGUFTokenCounter(gguf_path)
    counts = [counter.count(compile_signature(t.name, t)) for t in tools]
    assert statistics.median(counts) <= 24
