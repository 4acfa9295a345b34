"""A call that may destroy data runs only with values the request states (`nexus.llm.destructive`)."""

from __future__ import annotations

from nexus.gate.decision import Action, Decision
from nexus.llm.calls import ToolCaller
from nexus.llm.destructive import unstated_change, written_values
from nexus.llm.scripted import ScriptedBackend
from nexus.registry import Registry, Tool
from nexus.slb.index import Hit

WRITES = {"readOnlyHint": False, "destructiveHint": True}
WRITE = Tool("write_file", "Create or overwrite a file.", {
    "type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"]}, "fs", annotations=WRITES)
MOVE = Tool("move_file", "Move or rename a file.", {
    "type": "object", "properties": {"source": {"type": "string"}, "destination": {"type": "string"}},
    "required": ["source", "destination"]}, "fs", annotations=WRITES)
EDIT = Tool("edit_file", "Edit a file.", {
    "type": "object", "properties": {"path": {"type": "string"}, "dryRun": {"type": "boolean"}, "edits": {
        "type": "array", "items": {"type": "object", "properties": {
            "oldText": {"type": "string"}, "newText": {"type": "string"}}}}}}, "fs", annotations=WRITES)
UNLINK = Tool("delete_relations", "Delete relations from the knowledge graph.", {
    "type": "object", "properties": {"relations": {"type": "array", "items": {"type": "object", "properties": {
        "from": {"type": "string"}, "to": {"type": "string"}, "relationType": {"type": "string"}}}}},
    "required": ["relations"]}, "memory", annotations=WRITES)
READ = Tool("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}},
                                          "required": ["path"]}, "fs", annotations={"readOnlyHint": True})


def test_the_servers_destructive_hint_is_what_counts():
    assert WRITE.destructive and not READ.destructive
    assert not Tool("x", "d", {"type": "object"}, "s").destructive  # says nothing: not counted (BFCL, OpenAI tools)
    # a read-only tool is never destructive, whatever else it says
    assert not Tool("x", "d", {"type": "object"}, "s", annotations={"readOnlyHint": True, "destructiveHint": True}).destructive


def test_stated_values_may_be_written():
    assert unstated_change(WRITE, {"path": "reminder.txt", "content": "meeting at 3"},
                           "Save the text 'meeting at 3' in a file named reminder.txt.") is None
    assert unstated_change(MOVE, {"source": "notes.txt", "destination": "backups/notes.txt"},
                           "Move notes.txt into the backups folder.") is None
    edits = {"path": "notes.txt", "dryRun": False, "edits": [{"oldText": "Alice", "newText": "Carol"}]}
    assert unstated_change(EDIT, edits, "In notes.txt replace Alice with Carol.") is None  # the switch is not looked up


def test_invented_content_is_held_back():
    why = unstated_change(WRITE, {"path": "notes.txt", "content": "This is a backup of the notes file."},
                          "Move notes.txt into the backups folder.")
    assert why and "content" in why and "write_file" in why


def test_a_file_name_the_request_writes_is_no_files_content():
    why = unstated_change(WRITE, {"path": "notes.txt", "content": "old_notes.txt"}, "Rename notes.txt to old_notes.txt.")
    assert why and "file name 'old_notes.txt'" in why


def test_the_request_itself_is_no_files_content():
    """"Stage the file notes.txt." had overwritten notes.txt with its own words (the request states them, all of them)."""
    why = unstated_change(WRITE, {"path": "notes.txt", "content": "Stage the file notes.txt"}, "Stage the file notes.txt.")
    assert why and "the request itself" in why
    assert unstated_change(WRITE, {"path": "todo.txt", "content": "water the plants"},
                           "Create a file called todo.txt containing 'water the plants'.") is None


def test_content_pieced_together_from_the_request_is_held_back():
    """"In notes.txt, replace the word milk with bread." had overwritten notes.txt with "milk bread": both words are
    the request's, but it never writes them together."""
    request = "Write milk into notes.txt, then bread into todo.txt."
    why = unstated_change(WRITE, {"path": "notes.txt", "content": "milk bread"}, request)
    assert why and "does not write together" in why
    assert unstated_change(WRITE, {"path": "todo.txt", "content": "bread"}, request) is None  # one word: a run of one
    # the request of the docstring states a replacement: no write over the whole file runs for it (session 26)
    replace = "In notes.txt, replace the word milk with bread."
    assert unstated_change(WRITE, {"path": "notes.txt", "content": "bread"}, replace)
    edits = {"path": "notes.txt", "edits": [{"oldText": "milk", "newText": "bread"}]}
    assert unstated_change(EDIT, edits, replace) is None
    assert unstated_change(WRITE, {"path": "a.txt", "content": "meeting at 5pm!"},
                           "Write 'Meeting at 5pm' into a.txt") is None  # case and punctuation aside


def test_values_inside_lists_of_objects_are_looked_up():
    args = {"relations": [{"from": "1", "to": "2", "relationType": "insert"}]}
    assert [(n, v) for n, v, _ in written_values(args, UNLINK.input_schema)] == [
        ("from", "1"), ("to", "2"), ("relationType", "insert")]
    assert unstated_change(UNLINK, args, "Delete the note with id 2 from the notes table.")
    assert unstated_change(UNLINK, {"relations": [{"from": "Alice", "to": "Acme", "relationType": "works_at"}]},
                           "Remove the relation that Alice works_at Acme.") is None


def test_tools_that_do_not_destroy_are_never_held_back():
    assert unstated_change(READ, {"path": "/etc/invented.txt"}, "Show me my notes.") is None


def _decision(*keys: str) -> Decision:
    return Decision(Action.SHORTLIST, tuple(Hit(k, 1.0 - i / 10, 0.5, 0.0) for i, k in enumerate(keys)), p_top1=0.6)


def _registry() -> Registry:
    reg = Registry()
    reg.set_source("fs", [WRITE, MOVE, READ])
    return reg


def test_a_held_back_call_lets_the_model_pick_again_without_it():
    backend = ScriptedBackend(arguments=['{"path": "notes.txt", "content": "A backup copy of my notes"}',
                                         '{"source": "notes.txt", "destination": "backups/notes.txt"}'],
                              choices=["write_file", "move_file"])
    call = ToolCaller(backend, _registry()).call("Move notes.txt into the backups folder.",
                                                 _decision("write_file", "move_file", "read_file"))
    assert (call.tool, call.arguments, call.valid) == ("move_file", {"source": "notes.txt", "destination": "backups/notes.txt"}, True)
    assert call.attempts == 2 and any("write_file may destroy data" in e for e in call.errors)
    second = [options for kind, _, options in backend.calls if kind == "choose"][1]
    assert "write_file" not in second and set(second) == {"move_file", "read_file"}


def test_when_the_second_pick_cannot_run_either_no_call_is_made():
    backend = ScriptedBackend(arguments=['{"path": "notes.txt", "content": "A backup copy of my notes"}',
                                         '{"source": "notes.txt", "destination": "archive/invented.txt"}'],
                              choices=["write_file", "move_file"])
    call = ToolCaller(backend, _registry()).call("Move notes.txt into the backups folder.",
                                                 _decision("write_file", "move_file"))
    assert (call.tool, call.arguments, call.valid) == (None, None, False)
    assert len(call.errors) == 2 and "move_file may destroy data" in call.errors[1]


def test_a_stated_write_runs_at_once():
    backend = ScriptedBackend(arguments=['{"path": "todo.txt", "content": "buy bread"}'], choices=["write_file"])
    call = ToolCaller(backend, _registry()).call("Create a file called todo.txt containing 'buy bread'.",
                                                 _decision("write_file", "read_file"))
    assert (call.tool, call.valid, call.attempts, call.errors) == ("write_file", True, 1, ())


SQL_WRITE = Tool("write_query", "Execute an INSERT, UPDATE, or DELETE query on the SQLite database", {
    "type": "object", "properties": {"query": {"type": "string", "description": "SQL query to execute"}},
    "required": ["query"]}, "sqlite")   # no annotations: mcp-server-sqlite sends none


def test_a_sql_write_runs_only_with_the_values_the_request_states():
    """"Add a note saying 'buy milk' to the notes table." had written VALUES (1000000, 1000000, …)."""
    request = "Add a note saying 'buy milk' to the notes table."
    held = unstated_change(SQL_WRITE, {"query": "INSERT INTO notes (title) VALUES (1000000)"}, request)
    assert held is not None and "'1000000'" in held
    assert unstated_change(SQL_WRITE, {"query": "INSERT INTO notes (title) VALUES ('buy milk')"}, request) is None
    assert unstated_change(SQL_WRITE, {"query": "DELETE FROM notes WHERE id = 2"}, "Delete note 2 from the notes table.") is None
    assert unstated_change(SQL_WRITE, {"query": "DELETE FROM notes WHERE id = 3"}, "Delete note 2 from the notes table.")
    # a tool that only reads is never held back, whatever its statement says
    read = Tool("read_query", "Execute a SELECT query on the SQLite database", {"type": "object", "properties": {
        "query": {"type": "string", "description": "SELECT SQL query to execute"}}, "required": ["query"]}, "sqlite")
    assert unstated_change(read, {"query": "SELECT * FROM notes WHERE id = 99"}, "Show me my notes.") is None


def test_a_replacement_is_never_written_over_the_whole_file():
    """"In notes.txt, replace 'Acme' with 'Initech'." had called write_file(notes.txt, "Initech") and overwritten the
    file (held-out set 38): a destructive tool without an old / new pair is held back for a stated replacement."""
    why = unstated_change(WRITE, {"path": "notes.txt", "content": "Initech"}, "In notes.txt, replace 'Acme' with 'Initech'.")
    assert why and "replace" in why
    edits = {"path": "notes.txt", "edits": [{"oldText": "Acme", "newText": "Initech"}]}
    assert unstated_change(EDIT, edits, "In notes.txt, replace 'Acme' with 'Initech'.") is None


def test_a_relation_of_a_thing_to_itself_is_held_back_and_the_model_picks_again():
    """"Remember that Frank is a plumber." had called create_relations(Frank -> Frank) (held-out set 38)."""
    relate = Tool("create_relations", "Create relations in the knowledge graph", UNLINK.input_schema, "memory")
    create = Tool("create_entities", "Create entities in the knowledge graph", {"type": "object", "properties": {
        "entities": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}},
        "required": ["entities"]}, "memory")
    reg = Registry()
    reg.set_source("memory", [relate, create])
    backend = ScriptedBackend(arguments=['{"relations": [{"from": "Frank", "to": "Frank", "relationType": "friend"}]}',
                                         '{"entities": [{"name": "Frank"}]}'],
                              choices=["create_relations", "create_entities"])
    turn = "Remember that Frank is a plumber."
    decision = Decision(Action.SHORTLIST, (Hit("create_relations", 0.9, 0.5, 0.0), Hit("create_entities", 0.8, 0.5, 0.0)), p_top1=0.9)
    call = ToolCaller(backend, reg).call(turn, decision)
    assert call.tool == "create_entities" and any("to itself" in e for e in call.errors)


def test_a_path_copied_from_the_prompts_examples_is_held_back_and_the_model_picks_again():
    """"Show me the two most recent notes." had called read_file("/home/ann/notes/todo.txt"), the prompt example's
    path: no file of the user's. The model picks again among the other candidates."""
    backend = ScriptedBackend(arguments=['{"path": "/home/ann/notes/todo.txt"}', '{"path": "notes.txt"}'],
                              choices=["read_file", "read_file"])
    reg = _registry()
    reg.set_source("more", [Tool("read_notes", "Read the notes.", {"type": "object", "properties": {
        "path": {"type": "string"}}, "required": ["path"]}, "more")])
    call = ToolCaller(backend, reg).call("Show me the two most recent notes.", _decision("read_file", "read_notes"))
    assert call.tool == "read_notes" and any("prompt's examples" in e for e in call.errors)
    # the same path, written by the request, is the user's
    backend = ScriptedBackend(arguments=['{"path": "/home/ann/notes/todo.txt"}'], choices=["read_file"])
    call = ToolCaller(backend, _registry()).call("Show /home/ann/notes/todo.txt", _decision("read_file", "write_file"))
    assert (call.tool, call.valid, call.errors) == ("read_file", True, ())


def test_a_fact_to_forget_never_removes_the_whole_thing():
    """"Forget that Alice speaks Spanish." had called delete_entities(["Alice", "Spanish"]), deleting Alice; a tool
    that removes statements (delete_observations) is picked instead. "Forget Alice." may remove her."""
    kill = Tool("delete_entities", "Delete multiple entities and their associated relations from the knowledge graph",
                {"type": "object", "properties": {"entityNames": {"type": "array", "items": {"type": "string"}}},
                 "required": ["entityNames"]}, "memory", annotations=WRITES)
    forget = Tool("delete_observations", "Delete specific observations from entities in the knowledge graph",
                  {"type": "object", "properties": {"deletions": {"type": "array", "items": {"type": "object", "properties": {
                      "entityName": {"type": "string"}, "observations": {"type": "array", "items": {"type": "string"}}}}}},
                   "required": ["deletions"]}, "memory", annotations=WRITES)
    reg = Registry()
    reg.set_source("memory", [kill, forget, UNLINK])
    fact = '{"deletions": [{"entityName": "Alice", "observations": ["speaks Spanish"]}]}'
    backend = ScriptedBackend(arguments=['{"entityNames": ["Alice"]}', fact], choices=["delete_entities", "delete_observations"])
    call = ToolCaller(backend, reg).call("Forget that Alice speaks Spanish.", _decision("delete_entities", "delete_observations"))
    assert call.tool == "delete_observations" and call.valid
    assert any("removes whole things" in e for e in call.errors)
    backend = ScriptedBackend(arguments=['{"entityNames": ["Alice"]}'], choices=["delete_entities"])
    call = ToolCaller(backend, reg).call("Forget Alice.", _decision("delete_entities", "delete_observations"))
    assert (call.tool, call.arguments, call.valid) == ("delete_entities", {"entityNames": ["Alice"]}, True)


def test_a_name_to_remove_is_written_as_the_request_writes_it():
    """"Delete the note with id 2." had deleted the graph entity "note 2", words the request never writes together."""
    kill = Tool("delete_entities", "Delete entities from the knowledge graph.", {"type": "object", "properties": {
        "entityNames": {"type": "array", "items": {"type": "string"}}}}, "memory", annotations=WRITES)
    why = unstated_change(kill, {"entityNames": ["note 2"]}, "Delete the note with id 2.")
    assert why and "'note 2' puts together words" in why
    assert unstated_change(kill, {"entityNames": ["Acme Corp"]}, "Delete Acme Corp from memory.") is None
