"""Value normalisation after decoding: zones, dates, times, enum spelling; unstated optional arguments dropped."""

from __future__ import annotations

from datetime import date

import pytest

from nexus.llm.formats import is_zone_parameter, to_hh_mm, to_iso_date, to_zone, value_format
from nexus.llm.parameters import flag_in_request, mentioned
from nexus.llm.stated import is_path_parameter, request_dates, request_full_dates, request_paths, request_zones, stated
from nexus.llm.values import moved_into_folder, normalise_arguments, normalise_value, widened_globs
from nexus.llm.words import whole_quote, whole_word

ZONE = {"type": "string", "description": "IANA timezone name (e.g., 'America/New_York', 'Europe/London')."}


@pytest.mark.parametrize("value, zone", [
    ("Tokyo", "Asia/Tokyo"), ("new york", "America/New_York"), ("New_York", "America/New_York"),
    ("London time", "Europe/London"), ("America/Tokyo", "Asia/Tokyo"), ("Europe/Paris", "Europe/Paris"),
    ("PST", "America/Los_Angeles"), ("UTC", "UTC"), ("San Francisco", "America/Los_Angeles"), ("Japan", "Asia/Tokyo"),
])
def test_zones_become_iana_names(value, zone):
    assert to_zone(value) == zone


def test_an_unknown_place_is_left_for_the_validator_and_server():
    assert to_zone("Atlantis") is None
    assert normalise_value("timezone", ZONE, "Atlantis") == "Atlantis"


def test_zone_parameters_are_recognised_by_name_or_description_not_by_tool():
    assert is_zone_parameter("source_timezone", {"type": "string"})
    assert is_zone_parameter("tz", {"type": "string"})
    assert is_zone_parameter("target_zone", ZONE)
    assert not is_zone_parameter("city", {"type": "string", "description": "A city"})
    assert not is_zone_parameter("timezone", {"type": "string", "enum": ["UTC", "CET"]})  # the enum decides


@pytest.mark.parametrize("value, iso", [
    ("April 25th 2023", "2023-04-25"), ("25 April, 2023", "2023-04-25"), ("2023.11.15", "2023-11-15"),
    ("2023/1/5", "2023-01-05"), ("Dec. 10, 2022", "2022-12-10"), ("2023-02-30", None), ("next week", None),
])
def test_dates_become_iso(value, iso):
    assert to_iso_date(value) == iso


def test_a_date_without_a_year_takes_this_year():
    assert to_iso_date("March 7th", today=date(2031, 1, 1)) == "2031-03-07"


@pytest.mark.parametrize("value, hhmm", [
    ("5:30pm", "17:30"), ("5:30 PM", "17:30"), ("12 am", "00:00"), ("12pm", "12:00"), ("9 a.m.", "09:00"),
    ("17:30:00", "17:30"), ("noon", "12:00"), ("25:00", None), ("5", None), ("08:15 Tokyo", "08:15"),
    ("at 5pm sharp", "17:00"), ("route 66", None),
])
def test_times_become_24_hour(value, hhmm):
    assert to_hh_mm(value) == hhmm


def test_formats_come_from_the_schema_or_its_description():
    assert value_format({"type": "string", "format": "date"}) == "date"
    assert value_format({"type": "string", "description": "in the format of 'YYYY-MM-DD'"}) == "date"
    assert value_format({"type": "string", "description": "24-hour format (HH:MM)"}) == "time"
    assert value_format({"type": "string", "description": "'YYYY-MM-DD HH:MM:SS'"}) is None  # a timestamp: not ours
    assert value_format({"type": "integer", "description": "YYYY-MM-DD"}) is None
    assert normalise_value("show_time", {"type": "string", "description": "HH:MM"}, "5:30pm") == "17:30"
    assert normalise_value("when", {"type": "string", "description": "YYYY-MM-DD"}, "April 3rd 2023") == "2023-04-03"
    assert normalise_value("note", {"type": "string"}, "5:30pm") == "5:30pm"  # no format asked: untouched


def test_enum_values_take_the_schema_spelling():
    schema = {"type": "string", "enum": ["Family Counselor", "Psychologist"]}
    assert normalise_value("type", schema, "family counselor") == "Family Counselor"
    assert normalise_value("type", schema, "Dentist") == "Dentist"  # not an option: the validator says so


@pytest.mark.parametrize("name, value, request_text, expected", [
    ("location", "Letterkenny, Ireland", "closest stores near Letterkenny,Ireland please", True),
    ("sort_order", "descending", "which alarms are set for user 789", False),
    ("limit", 10, "show ten results", True),
    ("rate", 0.08, "a return of 8% a year", True),
    ("page_size", 3, "10 entries per page", False),
    ("include_stats", True, "Include its statistics", True),
    ("include_disabled", False, "which alarms are set", False),
    ("recursive", True, "list all files", False),
    ("genre", "Family", "a family-friendly movie", True),
    ("cuisine", ["Thai", "Vietnamese"], "Thai food tonight", True),
])
def test_stated_values(name, value, request_text, expected):
    assert stated(name, value, request_text) is expected


def test_unstated_optional_arguments_are_dropped_required_ones_kept():
    schema = {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}, "unit": {"type": "string", "enum": ["c", "f"]},
        "include_wind": {"type": "boolean"}}, "required": ["city", "days"]}
    out = normalise_arguments({"city": "Oslo", "days": 9, "unit": "f", "include_wind": True}, schema,
                              "Forecast for Oslo for 3 days, with wind")
    assert out == {"city": "Oslo", "days": 9, "include_wind": True}  # a wrong required value stays for the validator
    kept = normalise_arguments({"city": "Oslo", "days": 3, "unit": "f"}, schema, "Forecast for Oslo", drop_unstated=False)
    assert kept["unit"] == "f"


DATE = {"type": "string", "description": "Date of the show, YYYY-MM-DD"}
TIME = {"type": "string", "description": "Show time, HH:MM (24-hour)"}


def test_dates_and_times_are_stated_in_any_spelling():
    assert request_dates("from April 3rd to the 5th of April 2023") == {"04-03", "2023-04-05"}
    assert stated("show_time", "17:30", "tickets for the 5:30pm show", TIME)
    assert not stated("show_time", "19:00", "tickets for the 5:30pm show", TIME)
    assert stated("start", "2023-04-03", "from April 3rd to April 5th 2023", DATE)  # a year-less date: any year
    assert not stated("start", "2023-04-01", "from April 3rd to April 5th 2023", DATE)
    assert not stated("start", "2023-04-03", "from April 3rd", None)  # without the schema: words only ("04" unsaid)


@pytest.mark.parametrize("name, schema, request_text, value", [
    ("standardize", {"type": "boolean"}, "Also apply standardization.", True),
    ("include_human_impact", {"type": "boolean"}, "growth for 5 years including human impact", True),
    ("smoking_allowed", {"type": "boolean"}, "I'm looking for a non-smoking room", False),
    ("avoid_tolls", {"type": "boolean"}, "the fastest route with toll roads avoided", True),
    ("has_laundry_service", {"type": "string", "enum": ["True", "False", "dontcare"]}, "with laundry service", "True"),
    ("free_entry", {"type": "string", "enum": ["True", "False"]}, "nothing that is not free", "False"),
    ("recursive", {"type": "boolean"}, "list all files", None),
    ("include_hidden", {"type": "boolean"}, "list all files, including the ones in subdirectories", None),
    ("units", {"type": "string"}, "in metric units", None),  # not a flag
])
def test_a_flag_the_request_names_takes_its_value_from_the_request(name, schema, request_text, value):
    assert flag_in_request(name, schema, request_text) == value


def test_named_flags_are_set_even_when_the_model_left_them_out():
    schema = {"type": "object", "properties": {"predictors": {"type": "array"}, "standardize": {"type": "boolean"},
                                               "verbose": {"type": "boolean"}}, "required": ["predictors"]}
    out = normalise_arguments({"predictors": ["Age"], "standardize": False}, schema, "Regress on Age, apply standardization")
    assert out == {"predictors": ["Age"], "standardize": True}
    assert normalise_arguments({"predictors": ["Age"]}, schema, "Regress on Age") == {"predictors": ["Age"]}


@pytest.mark.parametrize("name, schema, request_text, expected", [
    ("number_of_adults", {"type": "integer"}, "a house for 2 adults", True),
    ("mode", {"type": "string", "enum": ["driving", "transit"]}, "Rome by transit", True),
    ("units", {"type": "string", "description": "'metric' for Celsius or 'imperial' for Fahrenheit"}, "in imperial", True),
    ("show_time", TIME, "tickets for the 5:30pm show", True),
    ("year", {"type": "integer"}, "the crime rate in 2020", True),
    ("year", {"type": "integer"}, "the crime rate in Oslo", False),
    ("sort_order", {"type": "string", "enum": ["asc", "desc"]}, "which alarms are set for user 789", False),
    # a count of what the parameter's description names (a bare count such as git_log's max_count: test_grammars)
    ("max_count", {"type": "integer", "description": "Maximum number of commits to show"}, "the last two commits", True),
    ("limit", {"type": "integer", "description": "Most hotels to return"}, "find 5 hotels", True),
    ("limit", {"type": "integer", "description": "Results to return"}, "find 5 hotels", False),
    ("num_guests", {"type": "integer", "description": "Guests staying"}, "show 3 photos of the hotel", False),
    ("retries", {"type": "integer", "description": "How often to retry"}, "the 4.5 m boat", False),
])
def test_optional_parameters_the_request_mentions(name, schema, request_text, expected):
    assert mentioned(name, schema, request_text) is expected


def test_a_value_cut_off_inside_a_quoted_span_is_completed():
    assert whole_quote("Son", "news about `Son's latest goal`") == "Son's latest goal"
    assert whole_quote("Son", "news about 'Son's latest goal' today") == "Son's latest goal"
    assert whole_quote("Paris", "trips to 'Paris in spring'") == "Paris"  # a whole word, not a cut-off
    schema = {"type": "object", "properties": {"keyword": {"type": "string"}}, "required": ["keyword"]}
    assert normalise_arguments({"keyword": "Son"}, schema, "news about `Son's latest goal`") == {"keyword": "Son's latest goal"}


@pytest.mark.parametrize("request_text, zones", [
    ("If it's 9am in New York, what time is it in Paris?", ["America/New_York", "Europe/Paris"]),
    ("time for the timezone 'America/Los_Angeles'", ["America/Los_Angeles"]),
    ("Meeting at 10 PST, what is that in Berlin?", ["America/Los_Angeles", "Europe/Berlin"]),
    ("what time is it in paris", []),        # lower case: not trusted ("wake", "easter" are zone cities too)
    ("Thanks, That's All", []),
])
def test_request_zones_in_the_order_named(request_text, zones):
    assert request_zones(request_text) == zones


def test_request_paths_and_dates_as_a_grammar_can_offer_them():
    assert request_paths("open https://x.org/a.html, C:/data/cars.csv and ./notes.md, not 3.14") == \
        ["https://x.org/a.html", "C:/data/cars.csv", "./notes.md"]
    assert request_full_dates("from the 1st of May to May 3rd, 2024") == ["2024-05-01", "2024-05-03"]
    assert request_full_dates("May 1st 2023 or June 2nd 2024, or July 4th") == []  # which year for July 4th?
    assert is_path_parameter("repo_path", {"type": "string"}) and is_path_parameter("file", {"type": "string"})
    assert not is_path_parameter("pathway", {"type": "string"}) and not is_path_parameter("path", {"type": "integer"})


def test_a_value_cut_off_inside_a_word_is_completed():
    request_text = "Analyze the sequence 'AGTCGATCGAACGTACGTACG' against 'AGTCCATCGAACGTACGTACG'"
    schema = {"type": "object", "properties": {"sequence": {"type": "string"}}, "required": ["sequence"]}
    assert normalise_arguments({"sequence": "AGTCGATCGAACGTACG"}, schema, request_text) == \
        {"sequence": "AGTCGATCGAACGTACGTACG"}
    assert whole_word("Paris", "Parisian food in Paris") == "Paris"  # the request also writes it whole
    assert whole_word("Lo", "Los Angeles") == "Lo"                    # too short to tell


def test_an_optional_argument_repeating_a_required_value_stated_once_is_dropped():
    schema = {"type": "object", "properties": {"person_id": {"type": "string"}, "years_experience": {"type": "integer"}},
              "required": ["person_id"]}
    assert normalise_arguments({"person_id": "1234", "years_experience": 1234}, schema,
                               "Adriel's professional experiences, id is 1234") == {"person_id": "1234"}
    kept = {"person_id": "5", "years_experience": 5}  # the request writes 5 twice: both may be meant
    assert normalise_arguments(kept, schema, "id 5, at least 5 years of experience") == kept


def test_punctuation_around_a_copied_value_is_trimmed():
    schema = {"type": "object", "properties": {"year": {"type": "string"}}, "required": ["year"]}
    assert normalise_arguments({"year": ": 2022"}, schema, "density of Brazil in 2022") == {"year": "2022"}
    assert normalise_arguments({"year": "(2022)"}, schema, "the (2022) report") == {"year": "(2022)"}  # as written


def test_an_optional_list_repeating_a_required_list_is_dropped():
    schema = {"type": "object", "properties": {"cash_flows": {"type": "array"}, "years": {"type": "array"}},
              "required": ["cash_flows"]}
    flows = [-50000, 10000, 15000]
    assert normalise_arguments({"cash_flows": flows, "years": flows}, schema, "flows [-50000, 10000, 15000]") == \
        {"cash_flows": flows}


def test_an_arithmetic_expression_in_words_is_written_with_operators():
    calc = {"type": "object", "properties": {"expression": {"title": "Expression", "type": "string"}}, "required": ["expression"]}
    assert normalise_arguments({"expression": "3.5 times 12"}, calc, "Calculate 3.5 times 12.") == {"expression": "3.5 * 12"}
    regex = {"type": "object", "properties": {"expression": {"type": "string", "description": "A regular expression"}}}
    assert normalise_arguments({"expression": "3 times 4"}, regex, "find 3 times 4", drop_unstated=False) == {"expression": "3 times 4"}


def test_a_piece_of_the_requests_expression_becomes_the_whole_expression():
    calc = {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}
    cases = {("3 * (4 + 5", "Evaluate 3 * (4 + 5)."): "3 * (4 + 5)", ("2 + 3", "Calculate (2 + 3) * 4"): "(2 + 3) * 4",
             ("19.99", "How much is 19.99 times 3?"): "19.99 * 3", ("12.5 * 8", "What is 12.5 * 8 + 3?"): "12.5 * 8 + 3",
             ("17%", "What's 17 percent of 350?"): "17 / 100 * 350",  # the model's own spelling of a piece of it
             # the request's numbers run together, operators dropped (probe "Add 1234 and 5678 together." -> "12345678")
             ("12345678", "Add 1234 and 5678 together."): "1234 + 5678"}
    for (value, request), whole in cases.items():
        assert normalise_arguments({"expression": value}, calc, request) == {"expression": whole}
    note = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    assert normalise_arguments({"text": "2 + 3"}, note, "Note (2 + 3) * 4") == {"text": "2 + 3"}  # only expressions
    # a date is no expression to complete: "3" had become "2023-03-17"
    assert normalise_arguments({"expression": "3"}, calc, "On 2023-03-17, what is 3?") == {"expression": "3"}


def test_a_create_table_statement_keeps_each_column_once():
    """The demo's "Set up a new table called contacts with name and email columns" wrote `name` twice; sqlite refused."""
    from nexus.llm.values import normalise_arguments

    schema = {"type": "object", "properties": {"query": {"type": "string", "description": "CREATE TABLE SQL statement"}},
              "required": ["query"]}
    out = normalise_arguments({"query": "CREATE TABLE contacts (name TEXT, email TEXT, Name TEXT)"}, schema,
                              "Set up a new table called contacts with name and email columns")
    assert out == {"query": "CREATE TABLE contacts (name TEXT, email TEXT)"}
    same = "CREATE TABLE prices (item TEXT, amount DECIMAL(10, 2))"
    assert normalise_arguments({"query": same}, schema, "a prices table with item and amount")["query"] == same


def test_a_word_of_scope_is_no_value_for_an_optional_parameter_unless_it_is_a_choice():
    """"List all local branches." had sent git_branch `contains: "all"` (a commit the branches must contain): refused."""
    from nexus.llm.values import normalise_arguments

    schema = {"type": "object", "properties": {
        "branch_type": {"type": "string", "description": "Whether to list local branches ('local'), remote branches "
                                                         "('remote') or all branches('all')."},
        "contains": {"type": "string", "description": "The commit sha that branch should contain."},
        "scope": {"type": "string", "enum": ["mine", "all"]}}, "required": ["branch_type"]}
    out = normalise_arguments({"branch_type": "local", "contains": "all", "scope": "all"}, schema, "List all local branches.")
    assert out == {"branch_type": "local", "scope": "all"}


def test_notes_the_request_does_not_state_are_left_out_of_a_list_of_objects():
    """create_entities for "Add an entity named Tokyo of type city": the model's own observation is not stored."""
    from nexus.llm.values import normalise_arguments

    schema = {"type": "object", "required": ["entities"], "properties": {"entities": {"type": "array", "items": {
        "type": "object", "required": ["name", "entityType", "observations"], "properties": {
            "name": {"type": "string"}, "entityType": {"type": "string"},
            "observations": {"type": "array", "items": {"type": "string"}}}}}}}
    made = {"entities": [{"name": "Tokyo", "entityType": "city", "observations": ["1000000000"]}]}
    assert normalise_arguments(made, schema, "Add an entity named Tokyo of type city.") == {
        "entities": [{"name": "Tokyo", "entityType": "city", "observations": []}]}
    told = {"entities": [{"name": "Marie", "entityType": "person", "observations": ["scientist"]}]}
    assert normalise_arguments(told, schema, "Add Marie, a scientist, to my knowledge graph.") == told


def test_a_sql_statement_the_request_writes_out_is_the_value_of_a_sql_parameter():
    """"Run this SQL: DELETE FROM notes WHERE id = 3." had been sent to write_query as `SELECT * FROM notes WHERE id = 3`."""
    schema = {"type": "object", "properties": {"query": {"type": "string", "description": "SQL query to execute"}},
              "required": ["query"]}
    out = normalise_arguments({"query": "SELECT * FROM notes WHERE id = 3"}, schema, "Run this SQL: DELETE FROM notes WHERE id = 3.")
    assert out == {"query": "DELETE FROM notes WHERE id = 3"}
    # no statement written out, or a search query that is no SQL: the model's value
    assert normalise_arguments({"query": "SELECT * FROM notes"}, schema, "Show every note") == {"query": "SELECT * FROM notes"}
    search = {"type": "object", "properties": {"query": {"type": "string", "description": "Words to search for"}}, "required": ["query"]}
    assert normalise_arguments({"query": "notes"}, search, "Find SELECT a FROM b in my notes") == {"query": "notes"}


def test_a_select_loses_a_where_clause_of_values_the_request_never_states():
    """"Get every row from the notes table." had run `SELECT * FROM notes WHERE name = 'John'`."""
    from nexus.llm.values import normalise_arguments

    schema = {"type": "object", "properties": {"query": {"type": "string", "description": "SELECT SQL query to execute"}},
              "required": ["query"]}
    out = normalise_arguments({"query": "SELECT * FROM notes WHERE name = 'John'"}, schema, "Get every row from the notes table.")
    assert out == {"query": "SELECT * FROM notes"}
    kept = normalise_arguments({"query": "SELECT * FROM notes WHERE id = 2"}, schema, "Show note 2 from the notes table.")
    assert kept == {"query": "SELECT * FROM notes WHERE id = 2"}


def test_an_optional_exclusion_is_dropped_unless_the_request_leaves_something_out():
    """"Find every .txt file in the workspace." had searched with `excludePatterns: ["*.txt"]` and found nothing."""
    search = {"type": "object", "required": ["path", "pattern"], "properties": {
        "path": {"type": "string"}, "pattern": {"type": "string"},
        "excludePatterns": {"type": "array", "items": {"type": "string"}, "default": []}}}
    call = {"path": ".", "pattern": "*.txt", "excludePatterns": ["*.txt"]}
    assert normalise_arguments(call, search, "Find every .txt file in the workspace.") == {"path": ".", "pattern": "*.txt"}
    kept = normalise_arguments({"path": ".", "pattern": "*.txt", "excludePatterns": ["backups"]}, search,
                               "Find the .txt files, but not the ones in backups.")
    assert kept["excludePatterns"] == ["backups"]


def test_a_glob_search_pattern_without_a_wildcard_matches_names_that_hold_it():
    """server-filesystem's search_files matches globs against whole relative paths: "txt" found nothing."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "pattern": {"type": "string"},
                                               "excludePatterns": {"type": "array", "items": {"type": "string"}}}}
    says = "Recursively search for files. The patterns should be glob-style patterns."
    assert widened_globs({"path": ".", "pattern": "notes"}, schema, says) == {"path": ".", "pattern": "**/*notes*"}
    assert widened_globs({"pattern": "**/*.txt"}, schema, says) == {"pattern": "**/*.txt"}
    assert widened_globs({"pattern": "x", "excludePatterns": "y"}, schema, says)["excludePatterns"] == "y"
    assert widened_globs({"pattern": "notes"}, schema, "Search files by a regular expression.") == {"pattern": "notes"}
    # the caller's one normalisation applies it with the tool's description
    assert normalise_arguments({"path": ".", "pattern": "notes"}, schema, "Search for files named notes",
                               description=says)["pattern"] == "**/*notes*"


def test_an_extension_the_request_writes_with_its_dot_ends_the_glob():
    """"Find every file ending in .md." had searched `**/*md*`, which also matches names holding "md" elsewhere."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}, "pattern": {"type": "string"}}}
    says = "Recursively search for files. The patterns should be glob-style patterns."
    assert normalise_arguments({"path": ".", "pattern": "md"}, schema, "Find every file ending in .md.",
                               description=says)["pattern"] == "**/*.md"
    assert widened_globs({"pattern": ".txt"}, schema, says) == {"pattern": "**/*.txt"}  # written with its dot
    # a word the request does not write as an extension still matches anywhere in a name
    assert widened_globs({"pattern": "md"}, schema, says, "Find files about md5 sums") == {"pattern": "**/*md*"}
    assert widened_globs({"pattern": "notes"}, schema, says, "Search for notes.txt") == {"pattern": "**/*notes*"}
    assert widened_globs({"pattern": "txt"}, schema, says, "Open file.txt.bak") == {"pattern": "**/*txt*"}


def test_a_move_onto_itself_goes_into_the_folder_the_request_names():
    """"Move notes.txt into the archive folder." had called move_file(notes.txt -> notes.txt), refused by the server."""
    call = {"source": "/ws/notes.txt", "destination": "/ws/notes.txt"}
    assert moved_into_folder(call, "Move notes.txt into the archive folder.")["destination"] == "archive/notes.txt"
    assert moved_into_folder(call, "Move notes.txt into the workspace folder.") == call  # where it already is
    assert moved_into_folder(call, "Move notes.txt somewhere.") == call  # no folder named: left to the server's refusal
    move = {"type": "object", "properties": {"source": {"type": "string"}, "destination": {"type": "string"}},
            "required": ["source", "destination"]}
    assert normalise_arguments({"source": "notes.txt", "destination": "notes.txt"}, move,
                               "Move notes.txt into the archive folder.")["destination"] == "archive/notes.txt"


def test_an_insert_takes_the_value_the_request_pairs_with_each_column():
    """"Add a row to the notes table with title 'Gym' and body '6pm'." had inserted ('6pm', '6pm') (held-out set 30)."""
    from nexus.llm.values import normalise_arguments

    schema = {"type": "object", "properties": {"query": {"type": "string", "description": "INSERT, UPDATE, or DELETE SQL query"}},
              "required": ["query"]}
    made = {"query": "INSERT INTO notes (title, body) VALUES ('6pm', '6pm')"}
    out = normalise_arguments(made, schema, "Add a row to the notes table with title 'Gym' and body '6pm'.")
    assert out == {"query": "INSERT INTO notes (title, body) VALUES ('Gym', '6pm')"}
    # a column the request does not pair with a value keeps the model's; other statements are left alone
    told = {"query": "INSERT INTO notes (title, body) VALUES ('Gym', 'at six')"}
    assert normalise_arguments(told, schema, "Add a note titled 'Gym' saying at six") == told
    update = {"query": "UPDATE notes SET body = 'oat milk' WHERE title = 'Buy milk'"}
    assert normalise_arguments(update, schema, "Set the body of 'Buy milk' to 'oat milk'") == update


@pytest.mark.parametrize("request_, written, sent", [
    ("Pull the first five rows from the notes table.", "SELECT * FROM notes", "SELECT * FROM notes LIMIT 5"),
    ("Show the top 3 notes.", "SELECT * FROM notes ORDER BY id;", "SELECT * FROM notes ORDER BY id LIMIT 3;"),
    ("Show the first two notes.", "SELECT * FROM notes LIMIT 9", "SELECT * FROM notes LIMIT 9"),  # the model's own LIMIT
    ("Show note 5.", "SELECT * FROM notes WHERE id = 5", "SELECT * FROM notes WHERE id = 5"),  # no count of rows
    ("Delete the first 2 rows.", "DELETE FROM notes WHERE id <= 2", "DELETE FROM notes WHERE id <= 2"),  # no SELECT
])
def test_a_select_returns_as_many_rows_as_the_request_asks_for(request_, written, sent):
    """"Pull the first five rows from the notes table." had returned every row."""
    schema = {"type": "object", "properties": {"query": {"type": "string", "description": "SELECT SQL query to execute"}},
              "required": ["query"]}
    assert normalise_arguments({"query": written}, schema, request_) == {"query": sent}


def test_a_rename_onto_itself_takes_its_source_from_the_request():
    """Held-out set 56: "Rename notes.txt to notes-old.txt." had called move_file(notes-old.txt -> notes-old.txt)."""
    from nexus.llm.values import moved_into_folder

    request = "Rename notes.txt to notes-old.txt."
    assert moved_into_folder({"source": "notes-old.txt", "destination": "notes-old.txt"}, request) == \
        {"source": "notes.txt", "destination": "notes-old.txt"}
    # a move the model wrote with two ends is left as written, and a move into a named folder still goes there
    assert moved_into_folder({"source": "notes.txt", "destination": "notes-old.txt"}, request) == \
        {"source": "notes.txt", "destination": "notes-old.txt"}
    assert moved_into_folder({"source": "notes.txt", "destination": "notes.txt"}, "Move notes.txt into the archive folder.") \
        == {"source": "notes.txt", "destination": "archive/notes.txt"}


def test_a_number_inside_a_commit_counted_back_from_head_is_no_stated_number():
    """Probe "Show the diff between master and HEAD~1" had kept git_diff's optional context_lines 1."""
    from nexus.llm.stated import request_numbers

    assert request_numbers("Show the diff between master and HEAD~1") == set()
    assert request_numbers("What changed in HEAD^2, and what is 2^3?") == {2.0, 3.0}  # a power keeps its numbers
    schema = {"type": "object", "properties": {"target": {"type": "string"}, "context_lines": {"type": "integer"}},
              "required": ["target"]}
    assert normalise_arguments({"target": "master", "context_lines": 1}, schema,
                               "Show the diff between master and HEAD~1") == {"target": "master"}


def test_a_statement_names_its_table_as_the_servers_database_does():
    """"Which titles do the notes in the notes table have?" had run `SELECT * FROM notes_table` (held-out set 83)."""
    from nexus.llm.values import normalise_arguments

    schema = {"type": "object", "properties": {"query": {"type": "string", "description": "SELECT SQL query to execute"}},
              "required": ["query"]}
    turn = "Which titles do the notes in the notes table have?"
    fixed = normalise_arguments({"query": "SELECT * FROM notes_table"}, schema, turn, tables={"notes": {"title": "TEXT"}})
    assert fixed == {"query": "SELECT * FROM notes"}
    # a database that holds no such table, or tables unknown: the statement as written
    assert normalise_arguments({"query": "SELECT * FROM notes_table"}, schema, turn, tables={"pets": {}}) == \
        {"query": "SELECT * FROM notes_table"}
    assert normalise_arguments({"query": "SELECT * FROM notes_table"}, schema, turn)["query"] == "SELECT * FROM notes_table"
