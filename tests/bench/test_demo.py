"""`nexus bench demo`: request files read strictly, turns scored against the tools they need."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nexus.bench.demo import Expected, fill, read_requests, score
from nexus.errors import ConfigError

SETS = Path(__file__).resolve().parents[2] / "benchmarks" / "demo"


def test_tsv_and_jsonl_request_files_read_alike(tmp_path):
    tsv = tmp_path / "r.tsv"
    tsv.write_text("# a comment\nread_file|read_text_file\tShow {workspace}/notes.txt\n\n-\tThanks!\n")
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text(json.dumps({"request": "Show {workspace}/notes.txt", "expect": ["read_file", "read_text_file"]})
                     + "\n" + json.dumps({"request": "Thanks!", "expect": None}) + "\n")
    want = [Expected("Show {workspace}/notes.txt", ("read_file", "read_text_file")), Expected("Thanks!", None)]
    assert read_requests(tsv) == read_requests(jsonl) == want
    assert fill(want, Path("/ws"))[0].request == "Show /ws/notes.txt"


@pytest.mark.parametrize("name, text, said", [
    ("a.tsv", "get_time What time is it?\n", "a.tsv:1"),             # no tab
    ("b.tsv", "get_time\t\n", "b.tsv:1"),                            # no request
    ("c.jsonl", '{"request": "hi", "expect": "get_time"}\n', "c.jsonl:1"),  # expect not a list
    ("d.jsonl", '{"expect": null}\n', "d.jsonl:1"),
    ("e.jsonl", "{not json\n", "e.jsonl:1"),
    ("f.tsv", "# only a comment\n", "no requests"),
])
def test_a_malformed_request_file_is_refused_with_the_line_named(tmp_path, name, text, said):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=said):
        read_requests(path)


def test_score_counts_right_tools_no_tool_turns_and_server_errors():
    rows = [{"tool": "read_text_file", "decision": "shortlist", "error": None, "total_ms": 100.0, "ttfat_ms": 50.0},
            {"tool": "write_file", "decision": "shortlist", "error": None, "total_ms": 300.0, "ttfat_ms": 70.0},
            {"tool": "list_directory", "decision": "route", "error": "ENOENT", "total_ms": 200.0, "ttfat_ms": 60.0},
            {"tool": None, "decision": "no_tool", "error": None, "total_ms": 10.0, "ttfat_ms": None},
            {"tool": None, "decision": "no_tool", "error": None, "total_ms": 10.0, "ttfat_ms": None}]
    expected = [Expected("read it", ("read_file", "read_text_file")), Expected("rename it", ("move_file",)),
                Expected("list it", ("list_directory",)), Expected("remember it", ("create_entities",)),
                Expected("bye", None)]
    result = score(rows, expected)
    assert (result["right"], result["answered"], result["tool_right"], result["wrong_no_tool"]) == (3, 2, 2, 1)
    assert (result["no_tool_requests"], result["no_tool_right"]) == (1, 1)
    assert result["turn_ms_p50"] == 100.0 and result["ttfat_ms_p50"] == 60.0
    with pytest.raises(ValueError):
        score(rows[:2], expected)


def test_a_result_that_reports_an_error_is_not_answered():
    """The SQLite server returns its errors as plain results; a right tool whose result says so is not answered."""
    rows = [{"tool": "read_query", "decision": "shortlist", "error": None, "result": "Database error: no such table: books"},
            {"tool": "read_query", "decision": "shortlist", "error": None, "result": "[{'COUNT(*)': 3}]"},
            {"tool": "read_multiple_files", "decision": "shortlist", "error": None,
             "result": "notes.txt: Demo notes.\n---\ntodo.txt: Error - ENOENT: no such file or directory"}]
    expected = [Expected("count the books", ("read_query",)), Expected("count the notes", ("read_query",)),
                Expected("read both", ("read_multiple_files",))]
    result = score(rows, expected)
    assert (result["right"], result["answered"], result["error_texts"]) == (3, 1, 2)


# the 44 tools the six demo servers list (mcp-server-time, -calculator, -sqlite, -git; server-filesystem, server-memory)
DEMO_TOOLS = frozenset("""add_observations append_insight calculate convert_time create_directory create_entities
create_relations create_table delete_entities delete_observations delete_relations describe_table directory_tree edit_file
get_current_time get_file_info git_add git_branch git_checkout git_commit git_create_branch git_diff git_diff_staged
git_diff_unstaged git_log git_reset git_show git_status list_allowed_directories list_directory list_directory_with_sizes
list_tables move_file open_nodes read_file read_graph read_media_file read_multiple_files read_query read_text_file
search_files search_nodes write_file write_query""".split())


def test_the_committed_request_sets_parse_and_name_only_demo_tools():
    assert len(DEMO_TOOLS) == 44
    sets = sorted(SETS.glob("*.tsv"))
    assert len(sets) >= 8
    for path in sets:
        for e in read_requests(path):
            assert "/work/" not in e.request  # paths are placeholders, filled with the run's own workspace
            assert set(e.tools or ()) <= DEMO_TOOLS, (path.name, e.tools)


def test_bench_demo_writes_scored_rows_into_its_run_folder(tmp_path, monkeypatch):
    """The command's own wiring, with the servers and models replaced: placeholders filled with the fresh workspace,
    one scored row per request, the result's counts."""
    import nexus.demo as demo
    from nexus.cli import app

    seen = {}

    def fake_run(settings, workspace, requests, step, **kw):
        seen["requests"] = requests
        return [("calculate", "shortlist"), (None, "no_tool"), ("list_tables", "shortlist")], 44, {}, "fake-llm"

    monkeypatch.setattr(demo, "run_requests", fake_run)
    monkeypatch.setattr(demo, "turn_row", lambda t: {"tool": t[0], "decision": t[1], "error": None, "total_ms": 5.0,
                                                     "ttfat_ms": None})
    requests = tmp_path / "r.tsv"
    requests.write_text("calculate\tWhat is 2+2?\n-\tThanks!\nread_query\tShow the rows of {workspace}/demo.db\n")
    out = tmp_path / "result.json"
    res = CliRunner().invoke(app, ["bench", "demo", "--requests", str(requests), "--run-dir", str(tmp_path / "run"),
                                   "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert seen["requests"][2] == f"Show the rows of {tmp_path / 'run' / 'workspace'}/demo.db"
    assert (tmp_path / "run" / "workspace" / "notes.txt").is_file()  # a fresh seeded workspace in the run folder
    result = json.loads(out.read_text())
    assert (result["right"], result["requests"], result["n_tools"], result["llm"]) == (2, 3, 44, "fake-llm")
    rows = [json.loads(line) for line in (tmp_path / "run" / "rows.jsonl").read_text().splitlines()]
    assert [r["right"] for r in rows] == [True, True, False] and rows[2]["expect"] == ["read_query"]
    assert (tmp_path / "run" / "meta.json").is_file()


def test_bench_demo_refuses_a_missing_request_file(tmp_path):
    from nexus.cli import app

    res = CliRunner().invoke(app, ["bench", "demo", "--requests", str(tmp_path / "none.tsv"), "--run-dir", str(tmp_path / "r")])
    assert res.exit_code == 2 and "cannot read the request file" in res.output
