"""The evidence that overrules a NO_TOOL (an arithmetic expression, a SQL statement written out): what counts as stated, which tools take it, and
the gate turning NO_TOOL into a SHORTLIST led by such a tool only when both hold."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nexus.gate import Action, BoundaryGate, GateModel
from nexus.gate.cross_encoder import FakePairScorer
from nexus.gate.evidence import (TurnEvidence, runs_sql, stated_expression, stated_path_list, stated_sql, takes_only_expression,
                                 takes_only_path_list, takes_only_sql)
from nexus.gate.probabilities import GateCalibration, Thresholds
from nexus.registry import Registry, Tool
from nexus.slb import HashEmbedder, SemanticLookasideBuffer

EXPR = {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}


@pytest.mark.parametrize("text, expected", [
    ("What is 12.5 * 8 + 3?", "12.5 * 8 + 3"),
    ("How much is 250 minus 75?", "250 - 75"),
    ("Divide 900 by 12.", "900 / 12"),
    ("Add 1250 and 3775.", "1250 + 3775"),
    ("Subtract 15 from 40", "40 - 15"),
    ("Calculate 15% of 240.", "15 / 100 * 240"),
    ("What is 2 raised to the 10th power?", "2 ** 10"),
    ("What's the square root of 144?", "144 ** 0.5"), ("sqrt of 81?", "81 ** 0.5"), ("sqrt 2", "2 ** 0.5"),
    ("Work out (120 - 45) / 5 for me.", "(120 - 45) / 5"),
    ("What is the sum of 2 and 3?", "2 + 3"),
    ("What's the difference between 9 and 4?", "9 - 4"),
    ("What is 2^3?", "2 ** 3"),
    ("Calculate (45*67+23)/89-34", "(45*67+23)/89-34"),  # a hyphen beside an operator subtracts
    ("Multiply 12.5 by 4 and then subtract 7.", "12.5 * 4 - 7"),  # a step after a number (probe: "12.5*4 = 7.5")
    ("Divide 1000 by 8 and add 5.", "1000 / 8 + 5"), ("Subtract 3 from 10, then add 4", "10 - 3 + 4"),
    ("What's the average of 10, 20 and 30?", "(10 + 20 + 30) / 3"), ("the mean of 4 and 8", "(4 + 8) / 2"),
    ("If I split 480 into 6 equal parts, how big is each part?", "480 / 6"), ("Share 90 between 3 people", "90 / 3"),
])
def test_an_expression_in_symbols_or_words_is_stated(text, expected):
    assert stated_expression(text) == expected


@pytest.mark.parametrize("text", [
    "Thanks, that's all for today!", "Book 2 rooms for 3 nights", "Reserve a table on 2023-10-06 at 19:30",
    "Help find a restaurant on 19/03/2024 at 12.00", "Call me at 555-1234", "Meeting from 10 to 12",
    "Add 3 to the 2nd list", "What is the meaning of life?", "", "Book 2 rooms and add 3 guests",
])
def test_dates_times_ranges_ids_and_chat_state_no_expression(text):
    assert stated_expression(text) is None


def test_a_tool_takes_only_an_expression_when_every_required_input_is_one():
    assert takes_only_expression(EXPR)
    assert takes_only_expression({"type": "object", "properties": {"formula": {"type": "string"}}})  # none required
    assert not takes_only_expression({"type": "object", "properties": {"equation": {"type": "string"},
                                      "variable": {"type": "string"}}, "required": ["equation", "variable"]})
    assert not takes_only_expression({"type": "object", "properties": {"pattern": {
        "type": "string", "description": "a regular expression"}}, "required": ["pattern"]})
    assert not takes_only_expression({"type": "object", "properties": {"expression": {"type": "string",
                                      "enum": ["a", "b"]}}, "required": ["expression"]})
    assert not takes_only_expression({"type": "object", "properties": {}})
    assert not takes_only_expression({"type": "object", "properties": "broken", "required": ["x"]})


def _gate(tools, k=10):
    reg = Registry()
    reg.set_source("t", tools)
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(reg)
    # NO_TOOL for everything: identity calibration's p_no_tool is about 0.5, the threshold 0.1
    cal = replace(GateCalibration.identity(), thresholds=Thresholds(route=2.0, no_tool=0.1, fallback=0.1, multi=2.0))
    return BoundaryGate(slb, reg, GateModel.from_scorer(FakePairScorer(), slb, cal), k=k)


OTHERS = [Tool("get_time", "Current local time in a timezone", {"type": "object", "properties": {}}, "t"),
          Tool("send_email", "Send an email message", {"type": "object", "properties": {"to": {"type": "string"}}}, "t")]


def test_a_stated_expression_overrules_no_tool_when_a_candidate_takes_only_an_expression():
    gate = _gate([*OTHERS, Tool("calculate", "Calculates the given expression.", EXPR, "t")])
    d = gate.decide("What is 12.5 * 8 + 3?")
    assert d.action is Action.SHORTLIST and d.candidates[0].key == "calculate"
    _, scored = gate.score("What is 12.5 * 8 + 3?", gate.slb.search("What is 12.5 * 8 + 3?", k=gate.k))
    # the gate's own NO_TOOL probability, reported as it was (above the NO_TOOL threshold it overruled)
    assert d.p_no_tool == pytest.approx(scored.p_no_tool) and scored.p_no_tool >= 0.1
    assert gate.decide("Thanks, that's all for today!").action is Action.NO_TOOL


def test_without_such_a_tool_an_expression_changes_nothing():
    assert _gate(OTHERS).decide("What is 12.5 * 8 + 3?").action is Action.NO_TOOL
    solver = Tool("solve", "Solve an equation for a variable", {"type": "object", "properties": {
        "equation": {"type": "string"}, "variable": {"type": "string"}}, "required": ["equation", "variable"]}, "t")
    assert _gate([*OTHERS, solver]).decide("What is 12.5 * 8 + 3?").action is Action.NO_TOOL


def _sql_tool(name, description, query_doc):
    return Tool(name, description, {"type": "object", "properties": {"query": {"type": "string", "description": query_doc}},
                                    "required": ["query"]}, "t")


# the sqlite MCP server's three statement tools, as it describes them
READ = _sql_tool("read_query", "Execute a SELECT query on the SQLite database", "SELECT SQL query to execute")
WRITE = _sql_tool("write_query", "Execute an INSERT, UPDATE, or DELETE query on the SQLite database", "SQL query to execute")
CREATE = _sql_tool("create_table", "Create a new table in the SQLite database", "CREATE TABLE SQL statement")


@pytest.mark.parametrize("text, kind", [
    ("Execute the query SELECT title FROM notes.", "read"), ("Run this SQL: DELETE FROM notes WHERE id = 3.", "write"),
    ("INSERT INTO notes (title) VALUES ('x')", "write"), ("UPDATE notes SET title = 'y'", "write"),
    ("CREATE TABLE tasks (title TEXT)", "schema"),
    ("Select all rows from the notes table.", None), ("Delete the notes from my graph", None), ("Thanks!", None),
])
def test_a_sql_statement_written_out_is_read_with_its_kind(text, kind):
    assert stated_sql(text) == kind


def test_a_tool_runs_the_sql_its_description_names():
    assert [runs_sql(t.description, t.input_schema, "read") for t in (READ, WRITE, CREATE)] == [True, False, False]
    assert [runs_sql(t.description, t.input_schema, "write") for t in (READ, WRITE, CREATE)] == [False, True, False]
    assert [runs_sql(t.description, t.input_schema, "schema") for t in (READ, WRITE, CREATE)] == [False, False, True]
    plain = _sql_tool("run_sql", "Run a statement on the database", "The SQL to run")  # names no statement: any
    assert runs_sql(plain.description, plain.input_schema, "write")
    # a SQL tool that also needs a table name, or a search "query" that is no SQL, takes more or other than a statement
    mixed = Tool("sql_execute", "Execute SQL", {"type": "object", "properties": {"sql": {"type": "string"},
                 "table": {"type": "string"}}, "required": ["sql", "table"]}, "t")
    search = _sql_tool("search_nodes", "Search for nodes in the knowledge graph", "The search query")
    assert not runs_sql(mixed.description, mixed.input_schema, "read") and not takes_only_sql(search.input_schema)


def test_a_written_sql_statement_overrules_no_tool_for_the_tool_that_runs_its_kind():
    gate = _gate([*OTHERS, READ, WRITE, CREATE])
    d = gate.decide("Execute the query SELECT title FROM notes.")
    assert d.action is Action.SHORTLIST and d.candidates[0].key == "read_query"
    assert gate.decide("Run this SQL: DELETE FROM notes WHERE id = 3.").candidates[0].key == "write_query"
    # a statement asked for in words about a named table counts too; words about no table do not
    d = gate.decide("Select all rows from the notes table, thanks")
    assert d.action is Action.SHORTLIST and d.candidates[0].key == "read_query"
    assert gate.decide("Insert a note saying hello into the notes table").candidates[0].key == "write_query"
    assert gate.decide("Select a nice place for dinner, thanks").action is Action.NO_TOOL
    assert gate.decide("What columns does the notes table have?").action is Action.NO_TOOL  # about the table itself
    # a tool that runs the statement asked for joins the candidates when the SLB did not find it
    narrow = _gate([*OTHERS, READ, WRITE, CREATE], k=1)
    turn = "Show the titles in the notes table"
    assert narrow.slb.search(turn, k=1)[0].key != "read_query"
    d = narrow.decide(turn)
    assert d.action is Action.SHORTLIST and d.candidates[0].key == "read_query"
    assert _gate(OTHERS).decide("Execute the query SELECT title FROM notes.").action is Action.NO_TOOL


PATHS = {"type": "object", "properties": {"paths": {"type": "array", "items": {"type": "string"}}}, "required": ["paths"]}
READ_ONE = Tool("read_file", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}},
                                             "required": ["path"]}, "t")
MOVE = Tool("move_file", "Move or rename a file", {"type": "object", "properties": {
    "source": {"type": "string"}, "destination": {"type": "string"}}, "required": ["source", "destination"]}, "t")


@pytest.mark.parametrize("text, expected", [
    ("Read both notes.txt and todo.txt.", ["notes.txt", "todo.txt"]),
    ("Show me notes.md, plan.md and /srv/data/c.md", ["notes.md", "plan.md", "/srv/data/c.md"]),
    ("Read notes.txt", []),                                   # one path
    ("Move notes.txt to done.txt", []),                       # written apart
    ("Copy notes.txt and todo.txt into the archive", []),     # the list goes somewhere
    ("Compare notes.txt with the one in /srv/backup/", []),
])
def test_a_list_of_paths_is_stated_only_as_one_list(text, expected):
    assert stated_path_list(text) == expected


def test_a_stated_path_list_leads_with_the_tool_that_takes_a_list_of_paths():
    many = Tool("read_multiple_files", "Read several files at once", PATHS, "t")
    assert takes_only_path_list(PATHS) and not takes_only_path_list(READ_ONE.input_schema)
    gate = _gate([*OTHERS, READ_ONE, MOVE, many])
    turn = "Read both notes.txt and todo.txt."
    hits = gate.slb.search(turn, k=gate.k)
    assert [hits[i].key for i in gate._evidence_tools(TurnEvidence.of(turn), hits)] == ["read_multiple_files"]
    d = gate.decide(turn)
    assert d.action is Action.SHORTLIST and d.candidates[0].key == "read_multiple_files"
    # two paths written apart, or one path: no list, so no evidence, and the gate's own order stands
    for turn in ("Move notes.txt to done.txt", "Read notes.txt"):
        assert gate._evidence_tools(TurnEvidence.of(turn), gate.slb.search(turn, k=gate.k)) == set()
        assert gate.decide(turn).candidates[0].key != "read_multiple_files"


def test_asking_for_the_whole_memory_is_told_from_a_file_named_memory_and_from_chat():
    from nexus.gate.memory import asks_memory

    assert asks_memory("Show me everything stored in your memory.") and asks_memory("What is in the knowledge graph?")
    for turn in ("Copy everything in my memory.txt to notes.txt", "Is that in your memory?",
                 "I have all the time in the world", "Show me all files in the folder"):
        assert not asks_memory(turn), turn


def _graph_tool(name, description):
    return Tool(name, description, {"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}}},
                                    "required": ["names"]}, "t")


GRAPH = [_graph_tool("open_nodes", "Open specific nodes in the knowledge graph by their names"),
         _graph_tool("create_entities", "Create multiple new entities in the knowledge graph"),
         _graph_tool("delete_entities", "Delete multiple entities and their associated relations from the knowledge graph")]


@pytest.mark.parametrize("turn", ["What do you know about Alice?", "Tell me what you remember about Acme.",
                                  "Show me everything stored in your memory.", "What's in your knowledge graph?",
                                  "List everything you remember."])
def test_a_question_about_the_assistants_memory_leads_with_a_tool_that_keeps_it(turn):
    gate = _gate([*OTHERS, *GRAPH])
    d = gate.decide(turn)
    assert d.action is Action.SHORTLIST and d.candidates[0].key in ("open_nodes", "create_entities")
    # a tool that deletes from the graph is never the evidence's
    hits = gate.slb.search(turn, k=gate.k)
    assert "delete_entities" not in {hits[i].key for i in gate._evidence_tools(TurnEvidence.of(turn), hits)}
    # without such a tool, or for chat about a person, the gate's own NO_TOOL stands
    assert _gate(OTHERS).decide(turn).action is Action.NO_TOOL
    assert gate.decide("I love pizza.").action is Action.NO_TOOL


def test_a_fact_to_keep_about_someone_named_leads_with_a_tool_that_adds_to_the_memory():
    """"Remember that Carol is a designer." had been NO_TOOL on the demo's registry (p_no_tool 0.998): a fact about
    someone named, for an assistant that keeps a knowledge graph, goes to a tool that adds to it, never to one that
    deletes; a fact about the user alone is the gate's own call, and a registry without a memory has no such tool."""
    gate = _gate([*OTHERS, *GRAPH])
    turn = "Remember that Carol is a software engineer."
    d = gate.decide(turn)
    assert d.action is Action.SHORTLIST and d.candidates[0].key == "create_entities"
    hits = gate.slb.search(turn, k=gate.k)
    assert {hits[i].key for i in gate._evidence_tools(TurnEvidence.of(turn), hits)} == {"create_entities"}
    assert not TurnEvidence.of("Remember that I like tea.")
    assert _gate(OTHERS).decide(turn).action is Action.NO_TOOL


def test_memory_tools_join_the_candidates_when_the_lookup_found_none():
    gate = _gate([*OTHERS, *GRAPH])
    turn = "Tell me what you remember about Acme."
    unrelated = gate.slb.hits_for(turn, ["get_time", "send_email"])
    added = gate._evidence_runners(TurnEvidence.of(turn), turn, unrelated)
    assert {h.key for h in added} == {"open_nodes"}  # never a tool that changes the graph (deletes or creates)
    assert gate._evidence_runners(TurnEvidence.of(turn), turn, gate.slb.hits_for(turn, ["open_nodes"])) == []  # one is there already
    assert gate._evidence_runners(TurnEvidence.of("What time is it?"), "What time is it?", unrelated) == []  # no evidence, nothing added


_REPO = {"type": "object", "properties": {"repo_path": {"type": "string"}}, "required": ["repo_path"]}
GIT = [Tool("git_status", "Shows the working tree status", _REPO, "git"),
       Tool("git_commit", "Records changes to the repository", _REPO, "git"),
       Tool("git_log", "Shows the commit logs of the repository", _REPO, "git")]


def _shortlisting_gate(sources):
    """A gate that shortlists every turn (never ROUTE, NO_TOOL or FALLBACK), over one registry source per item."""
    reg = Registry()
    for name, tools in sources.items():
        reg.set_source(name, tools)
    slb = SemanticLookasideBuffer(HashEmbedder())
    slb.sync(reg)
    cal = replace(GateCalibration.identity(), thresholds=Thresholds(route=2.0, no_tool=2.0, fallback=2.0, multi=2.0))
    return BoundaryGate(slb, reg, GateModel.from_scorer(FakePairScorer(), slb, cal), k=2)


def test_a_yes_no_question_is_led_by_the_status_tool_of_its_servers_first_candidate():
    """"Are there any uncommitted changes in my repository?" never listed git_status ("Shows the working tree status")."""
    gate = _shortlisting_gate({"git": GIT, "fs": OTHERS})
    turn = "Are there changes in the repository?"  # (the hashing embedder's first candidate is git_commit)
    assert "git_status" not in {h.key for h in gate.slb.search(turn, k=2)}  # the lookup alone misses it
    assert gate.decide(turn).candidates[0].key == "git_status"
    assert gate.decide("Show the changes recorded in the repository").candidates[0].key != "git_status"  # not a question
    # one source says nothing about domains (a BFCL file): the lookup's order stands
    one = _shortlisting_gate({"all": [*GIT, *OTHERS]})
    assert "git_status" not in {h.key for h in one.decide(turn).candidates}


def test_something_named_to_forget_leads_with_a_tool_that_removes_from_the_memory():
    """"Forget everything about Bob." had been NO_TOOL on the demo's registry (p_no_tool 0.998, held-out set 36)."""
    gate = _gate([*OTHERS, *GRAPH])
    turn = "Forget everything about Bob."
    d = gate.decide(turn)
    assert d.action is Action.SHORTLIST and d.candidates[0].key == "delete_entities"
    assert not TurnEvidence.of("Forget about the meeting.") and not TurnEvidence.of("Forget it.")
    assert _gate(OTHERS).decide(turn).action is Action.NO_TOOL
    # several things named ("Remove Paris and Lyon from the knowledge graph." had called delete_observations, no observations)
    assert TurnEvidence.of("Remove Paris and Lyon from the knowledge graph.").forget
    assert TurnEvidence.of("Delete Ann, Bob and Carol from my memory").forget


def test_a_fact_to_keep_lists_every_tool_that_adds_to_the_memory():
    """"Remember that Frank is a plumber." had listed create_relations alone of the graph's writers (held-out set 38)."""
    graph = [*GRAPH, _graph_tool("create_relations", "Create multiple new relations between entities in the knowledge graph"),
             _graph_tool("add_observations", "Add new observations to existing entities in the knowledge graph")]
    gate = _gate([*OTHERS, *graph])
    turn = "Remember that Frank is a plumber."
    only = gate.slb.hits_for(turn, ["create_relations", "get_time"])
    added = {h.key for h in gate._evidence_runners(TurnEvidence.of(turn), turn, only)}
    assert added == {"create_entities", "add_observations"}
    question = "Tell me what you remember about Acme."  # a question: one reader listed is enough, as before
    assert gate._evidence_runners(TurnEvidence.of(question), question, gate.slb.hits_for(question, ["open_nodes"])) == []


def test_a_question_about_what_a_folder_holds_brings_a_folder_listing_tool():
    """"Show me what's inside the repo folder." had listed only git tools and called git_diff_unstaged: a tool that lists
    a folder joins the candidates; a request that only names a folder (a move into it) does not."""
    listing = Tool("list_directory", "Get a detailed listing of all files and directories in a specified path",
                   {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}, "fs")
    gate = _gate([*OTHERS, *GIT, listing])
    turn = "Show me what's inside the repo folder."
    unrelated = gate.slb.hits_for(turn, ["git_status", "git_log"])
    assert [h.key for h in gate._evidence_runners(TurnEvidence.of(turn), turn, unrelated)] == ["list_directory"]
    assert not TurnEvidence.of("Move notes.txt into the repo folder.")


@pytest.mark.parametrize("text, kind", [
    ("Insert a note titled 'Call mom' with body 'Sunday evening' into notes.", "write"),  # held-out set 57: a file
    ("Insert a row into the tasks table", "write"),
    ("Insert 'hello' into notes.txt", None),          # a file, not a table
    ("Insert a line into the file", None),
    ("Insert Bob into my knowledge graph", None),
])
def test_insert_into_a_bare_name_asks_for_an_insert(text, kind):
    from nexus.gate.evidence import named_table, sql_in_words

    assert sql_in_words(text) == kind
    assert (named_table(text) is not None) == (kind is not None)


@pytest.mark.parametrize("text, kind, table", [
    ("Add a row to notes with title 'Dentist' and body 'Tuesday 3pm'.", "write", "notes"),  # held-out set 58
    ("Show me the first 5 rows of notes.", "read", "notes"),
    ("Delete the record from tasks with id 3.", "write", "tasks"),
    ("Count the records in orders", "read", "orders"),
    ("Add a row to the spreadsheet", None, None),         # a row that is not a table's
    ("Add a row to my knowledge graph", None, None),
    ("Show the rows of notes.txt", None, None),            # a file
    ("Provide me with the property records of my house", None, None),  # BFCL: records that are no table's rows
])
def test_rows_of_a_bare_name_ask_for_a_statement_on_that_table(text, kind, table):
    from nexus.gate.evidence import named_table, sql_in_words

    assert sql_in_words(text) == kind
    assert named_table(text) == table


def test_a_replacement_in_a_named_file_fits_a_tool_with_an_old_and_new_text():
    """"Change Shopping to Groceries in list.md in my workspace." had been told NO_TOOL; a replacement stated in a file
    the turn writes overrules that for a tool with an old / new text pair (edit_file), and for no other tool."""
    edit = {"type": "object", "properties": {"path": {"type": "string"}, "edits": {"type": "array", "items": {
        "type": "object", "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}}}}}}
    write = {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}}
    evidence = TurnEvidence.of("Change Shopping to Groceries in list.md in my workspace.")
    assert evidence.edit and evidence.fits("Edit a text file.", edit) and not evidence.fits("Write a file.", write)
    assert not TurnEvidence.of("Change 100 USD to EUR").edit  # no file: a conversion, not an edit


def test_requests_held_out_set_77_missed_are_read_for_what_they_ask():
    """Set 77: "In the notes table, add a note …" had gone to append_insight (no SQL seen: the verb did not open the
    request), "Tell me when notes.txt … was first created." to read_file (no date asked), and "Take Bob out of the
    knowledge graph entirely." to create_entities (nothing to forget)."""
    from nexus.gate.evidence import asked_sql
    from nexus.gate.memory import asks_to_forget
    from nexus.gate.properties import asked_properties
    from nexus.llm.grammars import sql_pattern

    turn = "In the notes table, add a note titled 'Dentist' with the body 'Friday 10am'."
    assert asked_sql(turn) == "write" and asked_sql("In the living room, add a table lamp") is None
    assert sql_pattern("SQL query to execute", turn, "Execute an INSERT, UPDATE, or DELETE query") == (
        "^INSERT INTO (notes) \\((title), (body)\\) VALUES \\(('Dentist'), ('Friday 10am')\\)$")
    assert asked_properties("Tell me when notes.txt in my workspace was first created.") == {"created"}
    assert asks_to_forget("Take Bob out of the knowledge graph entirely.") and not asks_to_forget("Take Bob to the park.")


@pytest.mark.parametrize("text, expected", [
    ("Show all notes whose title mentions Alice.", "read"), ("Which notes have 'milk' in the title?", "read"),
    ("How many notes are there?", "read"), ("delete note 3", "write"),
    ("Change the title of note 1 to 'Weekly plan'.", "write"),
    ("Insert a note titled 'Pay rent' with body 'before Friday'.", "write"),
    # the word means something else here: a file, the knowledge graph, a verb; or the turn asks for nothing
    ("Add a note to notes.txt saying hi.", None), ("Search my knowledge graph for notes about Alice.", None),
    ("Note that Alice speaks French.", None), ("Thanks for the notes!", None),
])
def test_rows_named_by_a_learnt_table_ask_for_sql(text, expected):
    """The tables a registry's servers hold (`Tool.tables`) let a turn name rows by their table alone; without them
    the same turns ask for no SQL."""
    assert TurnEvidence.of(text, ("notes",)).sql == expected
    assert TurnEvidence.of(text).sql is None
