"""Grammar construction: llama.cpp JSON-Schema grammars with a leading space; choices; odd schemas."""

from __future__ import annotations

import pytest

from nexus.llm.grammars import _arguments_gbnf, arguments_gbnf, choice_gbnf, grammar_schema, normalise_schema


def test_arguments_grammar_starts_with_one_space_and_names_the_properties():
    gbnf = arguments_gbnf({"type": "object", "properties": {"city": {"type": "string"},
                                                             "unit": {"enum": ["c", "f"]}}, "required": ["city"]})
    rules = dict(line.split(" ::= ", 1) for line in gbnf.strip().splitlines())
    assert rules["root"] == '" " arguments'
    assert '\\"city\\"' in rules["city-kv"] and '"\\"c\\"" | "\\"f\\""' in rules["unit"]
    assert "root" not in "".join(v for k, v in rules.items() if k != "root")  # no dangling self-reference


def test_parameterless_tool_gets_exactly_an_empty_object():
    assert normalise_schema({"type": "object"})["properties"] == {}
    rules = dict(line.split(" ::= ", 1) for line in arguments_gbnf({"type": "object"}).strip().splitlines())
    assert rules["arguments"].replace(" ", "") == '"{"space"}"space'


def test_required_names_missing_from_properties_do_not_break_the_converter():
    gbnf = arguments_gbnf({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a", "ghost"]})
    assert "ghost" not in gbnf and "a-kv" in gbnf


def test_unsupported_schema_falls_back_to_any_object_with_a_warning(caplog):
    _arguments_gbnf.cache_clear()  # the warning is logged when the grammar is first built
    gbnf = arguments_gbnf({"type": "object", "properties": {"child": {"$ref": "#"}}})  # the converter has no "#" refs
    # exactly the grammar of "any JSON object": every key, any value (validation and the repair judge the rest)
    assert gbnf == arguments_gbnf({"type": "object", "additionalProperties": True})
    rules = dict(line.split(" ::= ", 1) for line in gbnf.strip().splitlines())
    assert rules["root"] == '" " arguments' and rules["arguments"] == "object"
    assert rules["value"] == "object | array | string | number | boolean | null"
    assert "no exact grammar" in caplog.text


def test_choice_grammar_escapes_quotes():
    assert choice_gbnf(["a", 'b"c']) == 'root ::= " a" | " b\\"c"'


def test_request_numbers_and_city_state_formats_shape_the_grammar_not_the_schema():
    schema = {"type": "object", "properties": {
        "nights": {"type": "integer", "minimum": 1, "maximum": 30},
        "rate": {"type": "number"}, "share": {"type": "number"},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "city": {"type": "string", "description": "in the format of 'City, State', e.g. 'Austin, TX'"},
        "place": {"type": "string", "description": "'City, State' or 'City, Country'"}}, "required": ["nights", "share"]}
    rules = dict(line.split(" ::= ", 1) for line in arguments_gbnf(schema, "stay 2, at 5% off, 100 dollars").strip().splitlines())
    assert rules["nights"] == '"2" | "5"'                      # integers the request states, within min/max
    assert rules["share"] == '"0.05" | "2" | "100"'            # "5%" as 0.05 only: a number that is not a percentage
    assert "number" in rules["rate-kv"]                          # optional: free (filled, it takes a wrong stated one)
    assert rules["unit"] == '"\\"c\\"" | "\\"f\\""'           # enums from the schema
    assert '"," " " city-1 city-1' in rules["city"] and "place-kv" in rules  # a two-letter state after the comma
    assert "place-1" not in rules                              # a country may follow: no pattern there
    free = dict(line.split(" ::= ", 1) for line in arguments_gbnf(schema, "a night please").strip().splitlines())
    assert "integer" in free["nights-kv"]                      # no number in the request: any integer
    assert arguments_gbnf(schema) != arguments_gbnf(schema, "2 nights")


def test_optional_parameters_the_request_mentions_must_be_written():
    schema = {"type": "object", "properties": {
        "where_to": {"type": "string"}, "has_laundry_service": {"type": "string", "enum": ["True", "False", "dontcare"]},
        "number_of_adults": {"type": "integer"}, "mode": {"type": "string", "enum": ["driving", "transit"]},
        "show_time": {"type": "string", "description": "Time of the show, HH:MM"}, "rating": {"type": "number"}},
        "required": ["where_to"]}
    shaped = grammar_schema(schema, "A house in Austin with laundry service for 2 adults, by transit, at 5:30pm")
    assert shaped["required"] == ["where_to", "has_laundry_service", "number_of_adults", "mode", "show_time"]
    assert shaped["properties"]["number_of_adults"]["enum"] == [2]  # promoted: the number written next to its name
    assert grammar_schema(schema, "A house in Austin")["required"] == ["where_to"]
    assert schema["required"] == ["where_to"]                      # the tool's own schema is untouched


def test_a_bare_count_parameter_takes_the_count_of_what_no_other_parameter_names():
    """mcp-server-git's git_log has `max_count` with no description: "the last two commits" counts commits, which no
    other parameter names, so max_count is written, and from the request's numbers ("List the last five commits"
    had called git_log without it)."""
    schema = {"type": "object", "properties": {"max_count": {"type": "integer", "default": 10}, "start_timestamp": {
        "type": "string", "description": "Start timestamp for filtering commits"}}, "required": []}  # names no count
    shaped = grammar_schema(schema, "Show me the last two commits.")
    assert shaped["required"] == ["max_count"] and shaped["properties"]["max_count"]["enum"] == [2]
    assert grammar_schema(schema, "Show me the commits since 2024-01-01.")["required"] == ["start_timestamp"]  # nothing counted
    hotel = {"type": "object", "properties": {"limit": {"type": "integer"}, "adults": {"type": "integer"}}, "required": []}
    assert grammar_schema(hotel, "a room for 2 adults")["required"] == ["adults"]  # "2 adults" is the adults' count


def test_written_only_keeps_the_required_parameters_and_those_the_request_mentions():
    schema = {"type": "object", "properties": {
        "max_count": {"type": "integer"}, "start_timestamp": {"type": "string"}, "author": {"type": "string"}},
        "required": []}
    shaped = grammar_schema(schema, "Show the last commits by author Ann", written_only=True)
    assert list(shaped["properties"]) == ["author"] and shaped["required"] == ["author"]
    assert grammar_schema(schema, "Show the commit log", written_only=True)["properties"] == {}
    assert list(grammar_schema(schema, "Show the commit log")["properties"]) == ["max_count", "start_timestamp", "author"]


def test_a_named_thing_to_create_is_a_relative_path_when_the_request_writes_none():
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    assert grammar_schema(schema, "Create a folder named reports in the workspace.")["properties"]["path"]["enum"] == ["reports"]
    assert grammar_schema(schema, "Create a folder named reports in /data")["properties"]["path"]["enum"] == ["/data/reports"]
    # a folder the request names without creating it is the folder it talks about (`stated.unwritten_folder`)
    assert grammar_schema(schema, "Show me the folder named reports")["properties"]["path"]["enum"] == ["reports"]
    # a name with folders in it is the whole relative path (probe: "named archive/2026" had made "archive")
    assert grammar_schema(schema, "Create a directory named archive/2026 in my workspace.")["properties"]["path"]["enum"] == ["archive/2026"]
    assert grammar_schema(schema, "mkdir backups in my workspace")["properties"]["path"]["enum"] == ["backups"]  # probe: "."


def test_required_zones_times_dates_and_paths_come_from_the_request():
    schema = {"type": "object", "properties": {
        "source_timezone": {"type": "string", "description": "IANA timezone name"},
        "target_timezone": {"type": "string", "description": "IANA timezone name"},
        "time": {"type": "string", "description": "Time to convert in 24-hour format (HH:MM)"},
        "day": {"type": "string", "format": "date"}, "path": {"type": "string"}, "note": {"type": "string"}},
        "required": ["source_timezone", "target_timezone", "time", "day", "path", "note"]}
    props = grammar_schema(schema, "Convert 3pm London time to Tokyo time on April 3rd 2024, log it to out/log.txt")["properties"]
    # the two zones, each on the side the request puts it ("London ... to Tokyo"; `nexus.llm.directions`)
    assert props["source_timezone"]["enum"] == ["Europe/London"] and props["target_timezone"]["enum"] == ["Asia/Tokyo"]
    assert props["time"]["enum"] == ["15:00"] and props["day"]["enum"] == ["2024-04-03"] and "format" not in props["day"]
    assert props["path"]["enum"] == ["out/log.txt"] and "enum" not in props["note"]  # free text stays free
    free = grammar_schema(schema, "convert the time for me")["properties"]  # nothing stated: nothing narrowed
    assert not any("enum" in sub for sub in free.values()) and free["day"]["format"] == "date"


def test_values_the_request_names_for_a_written_parameter_narrow_the_grammar():
    schema = {"type": "object", "properties": {
        "interfaceType": {"type": "string", "enum": ["svi", "ethernet", "loopback"]},
        "infoType": {"type": "string", "enum": ["interfaces", "status"]},
        "meal": {"type": "string", "description": "Options include 'breakfast', 'lunch', 'dinner', or 'snack'."},
        "unit": {"type": "string", "enum": ["grams", "ounces"], "default": "grams"},
        "nodeId": {"type": "integer"}, "number_of_adults": {"type": "integer"}, "person_id": {"type": "string"},
        "limit": {"type": "integer"}},
        "required": ["interfaceType", "infoType", "meal", "nodeId", "number_of_adults", "person_id"]}
    props = grammar_schema(schema, "Status of the Ethernet interface on node 1200 for two adults at 9am, "
                                   "16 ounces as a snack, id is 77a")["properties"]
    assert props["interfaceType"]["enum"] == ["ethernet"] and props["infoType"]["enum"] == ["status"]
    assert props["meal"]["enum"] == ["snack"] and props["unit"]["enum"] == ["ounces"]  # unit: promoted, then narrowed
    assert props["nodeId"]["enum"] == [1200] and props["number_of_adults"]["enum"] == [2]  # not 9 (am), not 16
    assert props["person_id"]["enum"] == ["77a"] and "enum" not in props["limit"]           # limit: not written
    plain = grammar_schema(schema, "show me the interfaces")["properties"]
    assert plain["interfaceType"]["enum"] == ["svi", "ethernet", "loopback"] and "enum" not in plain["meal"]


def test_a_stated_percentage_is_a_fraction_unless_the_parameter_asks_for_a_percentage():
    schema = {"type": "object", "properties": {
        "annual_return": {"type": "number", "description": "The annual return rate."},
        "tax": {"type": "number", "description": "Tax in percent"}, "years": {"type": "integer"}},
        "required": ["annual_return", "tax", "years"]}
    props = grammar_schema(schema, "invest $5000 for 5 years at an annual return of 7%, tax 25%")["properties"]
    assert props["annual_return"]["enum"] == [0.07]          # next to its name: 7% as 0.07
    assert 0.25 not in props["tax"]["enum"] and 25 in props["tax"]["enum"]
    assert props["years"]["enum"] == [5]


def test_scale_words_and_listed_choices_of_a_promoted_parameter():
    schema = {"type": "object", "properties": {
        "outstanding_shares": {"type": "integer"}, "total_payout": {"type": "integer"},
        "method": {"type": "string", "description": "Choices are 'trapezoid' or 'simpson'."}},
        "required": ["outstanding_shares", "total_payout"]}
    props = grammar_schema(schema, "100 million outstanding shares, total payout of 50 million USD, simpson method")["properties"]
    assert props["outstanding_shares"]["enum"] == [100000000] and props["total_payout"]["enum"] == [50000000]
    assert props["method"]["enum"] == ["simpson"]


def test_a_list_has_at_most_as_many_items_as_the_request_separates():
    schema = {"type": "object", "properties": {"indexes": {"type": "array", "items": {"type": "string"}},
                                               "days": {"type": "integer"}}, "required": ["indexes", "days"]}
    assert grammar_schema(schema, "the S&P 500 and the Dow Jones over 5 days")["properties"]["indexes"]["maxItems"] == 2
    assert "maxItems" not in grammar_schema(schema)["properties"]["indexes"]  # no request: the plain schema
    rules = dict(line.split(" ::= ", 1) for line in arguments_gbnf(schema, "S&P 500 and Dow Jones").strip().splitlines())
    assert "indexes-kv" in rules and "*" not in rules["indexes"]  # a bounded repetition, no open-ended list


def test_the_one_stated_percentage_is_the_rate():
    schema = {"type": "object", "properties": {"cash_flows": {"type": "array", "items": {"type": "integer"}},
                                               "discount_rate": {"type": "number", "description": "The annual interest rate."}},
              "required": ["cash_flows", "discount_rate"]}
    props = grammar_schema(schema, "NPV of cash flows [-50000, 10000, 15000] discounted at 8% annually")["properties"]
    assert props["discount_rate"]["enum"] == [0.08]
    two = grammar_schema(schema, "flows [100, 200] at 8% or 9%")["properties"]["discount_rate"]["enum"]
    assert 0.08 in two and 0.09 in two and 200 in two  # two percentages: the request's numbers, as before


def test_numbers_anchored_to_several_parameters_anchor_none():
    schema = {"type": "object", "properties": {f"side{i}": {"type": "number"} for i in (1, 2, 3)},
              "required": ["side1", "side2", "side3"]}
    props = grammar_schema(schema, "the lengths of its three sides: 3, 4, and 5")["properties"]
    assert props["side1"]["enum"] == props["side3"]["enum"] == [3, 4, 5]  # the request's numbers, not [3] each


CONVERT = {"type": "object", "properties": {
    "from_currency": {"type": "string", "description": "currency code"},
    "to_currency": {"type": "string", "description": "currency code"},
    "start_time": {"type": "string", "description": "HH:MM"}, "end_time": {"type": "string", "description": "HH:MM"},
    "amount": {"type": "number"}}, "required": ["from_currency", "to_currency", "amount"]}


@pytest.mark.parametrize("request_, source, target", [
    ("Find the conversion rate from Euro to Dollar at January 1, 2022", "EUR", "USD"),
    ("Convert 150 USD into euros", "USD", "EUR"),
    ("How many euros do I get for 100 dollars? I want to go to EUR from USD", "USD", "EUR"),   # "to" before "from"
    ("How much will 20000 Japanese Yen be in United States Dollar?", "JPY", "USD"),            # "in" when no "to"
    ("I want to convert 100 from Euro to Dollar", "EUR", "USD"),                                # the "to" after "from"
])
def test_a_from_to_pair_gets_each_stated_value_on_the_side_the_request_puts_it(request_, source, target):
    props = grammar_schema(CONVERT, request_)["properties"]
    assert props["from_currency"]["enum"] == [source] and props["to_currency"]["enum"] == [target]


ZONES = {"type": "object", "properties": {
    "source_timezone": {"type": "string", "description": "Source IANA timezone name"}, "time": {"type": "string", "description": "HH:MM"},
    "target_timezone": {"type": "string", "description": "Target IANA timezone name"}},
    "required": ["source_timezone", "time", "target_timezone"]}


@pytest.mark.parametrize("request_, source, target", [
    # a clock time said in words is where the time is given, like "2:30pm in Chicago" (probe: Dubai to Dubai)
    ("When it's noon in Chicago, what time is it in Dubai?", "America/Chicago", "Asia/Dubai"),
    ("At midnight in Tokyo, what time is it in Paris?", "Asia/Tokyo", "Europe/Paris"),
])
def test_the_zone_beside_a_time_in_words_is_the_source(request_, source, target):
    props = grammar_schema(ZONES, request_)["properties"]
    assert props["source_timezone"]["enum"] == [source] and props["target_timezone"]["enum"] == [target]


def test_a_pair_the_request_does_not_place_keeps_both_values():
    for request_ in ("Compare the Euro and the Dollar over 100 units",   # no cue
                     "Euro or Dollar: from which to which? 100"):         # both values after "from", none after "to"
        props = grammar_schema(CONVERT, request_)["properties"]
        assert props["from_currency"]["enum"] == props["to_currency"]["enum"] == ["EUR", "USD"]


def test_start_and_end_times_follow_from_and_to_whatever_their_clock_order():
    schema = dict(CONVERT, required=["start_time", "end_time"])
    props = grammar_schema(schema, "Block my calendar from 9pm to 7am")["properties"]
    assert props["start_time"]["enum"] == ["21:00"] and props["end_time"]["enum"] == ["07:00"]


def test_a_list_of_choices_holds_the_ones_the_request_names_once_each():
    schema = {"type": "object", "properties": {
        "location": {"type": "string"},
        "facilities": {"type": "array", "items": {"type": "string", "enum": ["Wi-Fi", "Reading Room", "Fiction", "Children Section"]}}},
        "required": ["location", "facilities"]}
    props = grammar_schema(schema, "Locate the nearest public library in Boston with English fiction section and free Wi-Fi.")["properties"]
    assert props["facilities"]["items"]["enum"] == ["Wi-Fi", "Fiction"]
    assert (props["facilities"]["minItems"], props["facilities"]["maxItems"]) == (1, 2)
    # none named: every choice stays, and the list is capped by what the request separates
    props = grammar_schema(schema, "Find a library in Boston and Cambridge")["properties"]
    assert len(props["facilities"]["items"]["enum"]) == 4 and props["facilities"]["maxItems"] == 2


def test_a_list_of_objects_and_the_lists_inside_them_are_capped_by_what_the_request_separates():
    schema = {"type": "object", "required": ["entities"], "properties": {"entities": {"type": "array", "items": {
        "type": "object", "required": ["name", "observations"], "properties": {
            "name": {"type": "string"}, "observations": {"type": "array", "items": {"type": "string"}}}}}}}
    entities = grammar_schema(schema, "Store a new entity called Acme of type company")["properties"]["entities"]
    assert entities["maxItems"] == 1 and entities["items"]["properties"]["observations"]["maxItems"] == 1
    entities = grammar_schema(schema, "Add Bob, an engineer, and Eve, a designer")["properties"]["entities"]
    assert entities["maxItems"] == 5  # three commas and an "and", plus one
    assert "maxItems" not in grammar_schema(schema)["properties"]["entities"]  # no request: the plain schema
    # a free-text item of a list inside those objects is short (a run of one character ends as a string, not a loop),
    # unless the request quotes something longer
    notes = lambda request: grammar_schema(schema, request)["properties"]["entities"]["items"]["properties"]["observations"]
    assert notes("Store Acme")["items"]["maxLength"] == 40
    assert notes("Store Acme with the note 'founded by two engineers in a garage in 1990'")["items"]["maxLength"] == 46


# mcp-server-sqlite's write_query parameter
_WRITE_SQL = {"type": "object", "properties": {"query": {"type": "string", "description": "INSERT, UPDATE, or DELETE SQL query"}},
              "required": ["query"]}


def test_a_sql_parameter_takes_only_the_statements_its_description_names():
    """mcp-server-sqlite's create_table got `"books"` for "Create a table called books ..." and refused it."""
    create = {"type": "object", "properties": {"query": {"type": "string", "description": "CREATE TABLE SQL statement"}},
              "required": ["query"]}
    shaped = grammar_schema(create, "Create a table called books with columns title and author.")
    # a table named in the request, with at most two typed columns named in it (one name is the table's)
    assert shaped["properties"]["query"]["pattern"] == ("^CREATE TABLE (books|title|author) \\((books|title|author) "
                                                        "(TEXT|INTEGER|REAL)(, (books|title|author) (TEXT|INTEGER|REAL)){0,1}\\)$")
    assert '"CREATE TABLE" " " ("book" "s"' in arguments_gbnf(create, "Create a table called books with columns title and author.")
    write = _WRITE_SQL
    assert grammar_schema(write, "run a write")["properties"]["query"]["pattern"] == '^(INSERT|UPDATE|DELETE) [^"\\\\]*$'
    # a request that opens with one statement's verb gets that statement ("Insert a book …" had got "DELETE DUNE")
    assert grammar_schema(write, "add a row")["properties"]["query"]["pattern"] == '^INSERT INTO [^"\\\\]*$'
    # ... and, when it states its values, a statement built from its words: the table it names, those values
    # "note 2" is the row with id 2 (the model had written the columns "note" and "note_id")
    assert grammar_schema(write, "Remove note 2")["properties"]["query"]["pattern"] == (
        "^DELETE FROM (notes) WHERE id = (2)$")
    assert grammar_schema(write, "Change the title of note 1 in the notes table to 'Buy oat milk'.")["properties"]["query"][
        "pattern"] == "^UPDATE (notes) SET (title) = ('Buy oat milk') WHERE id = (1)$"
    assert grammar_schema(write, "Delete the note with id 2 from the notes table.")["properties"]["query"]["pattern"] == (
        "^DELETE FROM (notes) WHERE (id) = (2)$")
    assert grammar_schema(write, "Remove every note")["properties"]["query"]["pattern"] == '^DELETE FROM [^"\\\\]*$'
    update = grammar_schema(write, "Update the note with id 1 in the notes table so its title is 'Buy oat milk'.")
    assert update["properties"]["query"]["pattern"] == "^UPDATE (notes) SET (title) = ('Buy oat milk') WHERE (id) = (1)$"
    # every row, and the column named beside the row's kind (probe: `SET ARCHIVED = 'archived' WHERE BID = 'archived'`)
    every = grammar_schema(write, "Change every note body in the notes table to 'archived'.")
    assert every["properties"]["query"]["pattern"] == "^UPDATE (notes) SET (body) = ('archived')$"
    # a parameter that says only "SQL query" takes the statements its tool's description names
    plain = {"type": "object", "properties": {"query": {"type": "string", "description": "SQL query to execute"}},
             "required": ["query"]}
    named = grammar_schema(plain, "run a write", description="Execute an INSERT, UPDATE, or DELETE query on the SQLite database")
    assert named["properties"]["query"]["pattern"] == '^(INSERT|UPDATE|DELETE) [^"\\\\]*$'
    assert "pattern" not in grammar_schema(plain, "run a write")["properties"]["query"]
    free = {"type": "object", "properties": {"query": {"type": "string", "description": "The SQL query to run"}}}
    assert "pattern" not in grammar_schema(free, "count the rows")["properties"]["query"]


_READ = {"type": "object", "properties": {"query": {"type": "string", "description": "SELECT SQL query to execute"}},
         "required": ["query"]}


def _read_pattern(request):
    return grammar_schema(_READ, request)["properties"]["query"].get("pattern")


def test_a_read_in_words_about_a_table_that_states_nothing_more_is_every_row_or_their_count():
    """"How many rows are in the notes table?" had run "SELECT * FROM notes WHERE name = 'notes'" (no such column)."""
    assert _read_pattern("How many rows are in the notes table?") == "^SELECT COUNT\\(\\*\\) FROM notes$"
    assert _read_pattern("List every book in the books table.") == "^SELECT \\* FROM books$"
    # a value, a filter or an order it cannot build leaves the statement to the model, after its keyword
    for request in ("Show the notes in the notes table whose title contains 'x' or 'y'", "Show the 3 newest rows of the notes table",
                    "List the notes table sorted by title and then by body", "Show me the notes"):
        assert _read_pattern(request) == '^(SELECT) [^"\\\\]*$'
    # a text a column holds is a LIKE, an order an ORDER BY (the model had written `WHERE title = 'x'`)
    assert _read_pattern("Show the notes in the notes table whose title contains 'x'") == \
        "^SELECT \\* FROM notes WHERE title LIKE '%x%'$"
    assert _read_pattern("List the notes table sorted by title") == "^SELECT \\* FROM notes ORDER BY title$"
    assert 'COUNT' in arguments_gbnf(_READ, "How many rows are in the notes table?")  # llama.cpp's converter takes it


def test_a_read_of_a_table_by_one_value_in_one_column_is_that_where():
    """"Fetch the note with id 1 from the notes table." (set 74) had run "SELECT id, name, email FROM notes WHERE id = 1"
    (no such column: name)."""
    assert _read_pattern("Fetch the note with id 1 from the notes table.") == "^SELECT \\* FROM notes WHERE (id) = (1)$"
    assert _read_pattern("Show the notes in the notes table whose title is 'x'") == "^SELECT \\* FROM notes WHERE (title) = ('x')$"
    for request in ("Show notes with id 1 or 2 from the notes table", "Show the 2 rows of the notes table with id 1",
                    "Show the notes table rows with id 1, newest first"):  # another value, or an order
        assert _read_pattern(request) == '^(SELECT) [^"\\\\]*$'
    assert "notes WHERE" in arguments_gbnf(_READ, "Fetch the note with id 1 from the notes table.")


def test_a_participle_before_a_value_names_the_column_it_is_made_from():
    """"Add a note titled 'Pay rent' to the notes table." had inserted into a column named "titled"."""
    write = _WRITE_SQL
    shaped = grammar_schema(write, "Add a note titled 'Pay rent' to the notes table.")
    assert shaped["properties"]["query"]["pattern"] == "^INSERT INTO (notes) \\((title)\\) VALUES \\(('Pay rent')\\)$"


def test_a_participle_whose_stem_cannot_end_a_word_offers_only_the_noun():
    """Held-out set 62: offered "title" and "titl", the model wrote `DELETE FROM notes WHERE titl = 'Book the dentist'`."""
    write = _WRITE_SQL
    shaped = grammar_schema(write, "Delete the note titled 'Book the dentist' from the notes table.")
    assert shaped["properties"]["query"]["pattern"] == "^DELETE FROM (notes) WHERE (title) = ('Book the dentist')$"


def test_an_update_of_the_row_a_participle_names_sets_the_other_value_and_finds_the_row_by_that_column():
    """Held-out set 61: with both texts offered to both sides, the model wrote `SET name = 'Groceries' WHERE id = 'Groceries'`."""
    write = _WRITE_SQL
    pattern = grammar_schema(write, "Update the notes table so the note titled 'Groceries' has content 'eggs'.")["properties"]["query"]["pattern"]
    assert pattern == "^UPDATE (notes) SET (content) = ('eggs') WHERE (title) = ('Groceries')$"
    # a verb that opens the request is no table's name
    pattern = grammar_schema(write, "Update the note 'Buy milk' so its body says 'oat milk'.")["properties"]["query"]["pattern"]
    assert pattern.startswith("^UPDATE (notes|") and "Update" not in pattern and "bodys" not in pattern
    assert pattern.endswith("= ('oat milk') WHERE ([A-Za-z][A-Za-z0-9_]{0,30}) = ('Buy milk')$")


def test_a_required_string_whose_description_lists_its_only_values_takes_one_of_them():
    """mcp-server-git's git_branch got `branch_type: "git"` (refused) for "List the branches of the repo"."""
    branch = {"type": "object", "properties": {"branch_type": {"type": "string", "description":
              "Whether to list local branches ('local'), remote branches ('remote') or all branches('all')."}},
              "required": ["branch_type"]}
    assert grammar_schema(branch, "List the branches of the repo.")["properties"]["branch_type"]["enum"] == ["local", "remote", "all"]
    # examples are not a closed list, and an optional parameter is left alone
    unit = {"type": "object", "properties": {"unit": {"type": "string", "description": "Either system, e.g. 'metric' or 'imperial'"}},
            "required": ["unit"]}
    assert "enum" not in grammar_schema(unit, "weather in Paris")["properties"]["unit"]
    optional = {"type": "object", "properties": branch["properties"]}
    assert "enum" not in grammar_schema(optional, "List the branches of the repo.")["properties"]["branch_type"]


def test_a_folder_talked_about_but_not_written_is_the_servers_root_or_the_folder_named():
    """"What files are in the workspace folder?" had called list_directory("workspace/files"), and "Show me the
    contents of the workspace directory." a path copied from the prompt's examples: both outside the allowed folders."""
    listing = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    assert grammar_schema(listing, "What files are in the workspace folder?")["properties"]["path"]["enum"] == ["."]
    assert grammar_schema(listing, "List the reports folder, please.")["properties"]["path"]["enum"] == ["reports"]
    assert "enum" not in grammar_schema(listing, "Analyse the sales data")["properties"]["path"]
    assert grammar_schema(listing, "List /srv/data in the workspace")["properties"]["path"]["enum"] == ["/srv/data"]


def test_a_search_whose_request_names_no_place_starts_at_the_servers_root():
    """"Look for any file whose name contains notes." had searched a folder "notes" (ENOENT)."""
    search = {"type": "object", "properties": {"path": {"type": "string"}, "pattern": {"type": "string"}},
              "required": ["path", "pattern"]}
    assert grammar_schema(search, "Look for any file whose name contains notes.")["properties"]["path"]["enum"] == ["."]
    assert grammar_schema(search, "Find .txt files in /srv/data")["properties"]["path"]["enum"] == ["/srv/data"]
    read = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    assert "enum" not in grammar_schema(read, "Read notes")["properties"]["path"]  # no search: the name may be the path


def test_the_latest_commit_is_head():
    """git_show had got revision "2024-01-15T14:30:25" for "Show me the details of the latest commit." (refused)."""
    show = {"type": "object", "properties": {"repo_path": {"type": "string"}, "revision": {"type": "string"}},
            "required": ["repo_path", "revision"]}
    assert grammar_schema(show, "Show me the details of the latest commit.")["properties"]["revision"]["enum"] == ["HEAD"]
    for request in ("Show me the last 3 commits", "Show the history"):  # not one commit
        assert "enum" not in grammar_schema(show, request)["properties"]["revision"]


def test_a_revision_takes_the_one_ref_the_request_writes():
    """Probe "Show the details of commit HEAD~1 in {repo}." had looped in a free revision string and fallen back."""
    show = {"type": "object", "properties": {"repo_path": {"type": "string"}, "revision": {"type": "string"}},
            "required": ["repo_path", "revision"]}
    for request, ref in (("Show the details of commit HEAD~1 in /srv/repo.", "HEAD~1"), ("Show commit abc1234 for me", "abc1234"),
                         ("What changed in HEAD^?", "HEAD^"),
                         ("What's in commit HEAD of /srv/repo?", "HEAD")):  # probe: "41/probe5/workspace/repo", refused
        assert grammar_schema(show, request)["properties"]["revision"]["enum"] == [ref]
    for request in ("Compare abc1234 and def5678", "Show the commit defaced"):  # two refs; a word of hex letters
        assert "enum" not in grammar_schema(show, request)["properties"]["revision"]


def test_the_head_commit_is_head_and_a_commit_before_it_is_not():
    """"Show the details of the HEAD commit in {repo}." (set 72) had got revision "72/set72/workspace/repo.git", a
    piece of the repository's path: the word HEAD itself had counted as a ref other than HEAD."""
    show = {"type": "object", "properties": {"repo_path": {"type": "string"}, "revision": {"type": "string"}},
            "required": ["repo_path", "revision"]}
    for request in ("Show the details of the HEAD commit in /srv/repo.", "What is in the head commit?"):
        assert grammar_schema(show, request)["properties"]["revision"]["enum"] == ["HEAD"]
    for request in ("Show the commit before HEAD~1, not the HEAD commit", "Show HEAD^, the parent of the head commit"):  # another ref
        assert "enum" not in grammar_schema(show, request)["properties"]["revision"]


def test_a_list_of_files_takes_the_paths_the_request_writes():
    """git_add had got ["stage_notes.txt"] and ["git_commit"] for "Stage notes.txt." (session 26); a request that
    writes no path leaves the items free."""
    schema = {"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}}}, "required": ["files"]}
    assert grammar_schema(schema, "Stage notes.txt for the next commit.")["properties"]["files"]["items"]["enum"] == ["notes.txt"]
    assert "enum" not in grammar_schema(schema, "Stage all my changes.")["properties"]["files"]["items"]
    many = {"type": "object", "properties": {"paths": {"type": "array", "items": {"type": "string"}}}, "required": ["paths"]}
    assert grammar_schema(many, "Open notes.txt and repo/notes.md together.")["properties"]["paths"]["items"]["enum"] == \
        ["notes.txt", "repo/notes.md"]
    three = grammar_schema(many, "Open notes.txt, config.ini and repo/README.md from my workspace.")["properties"]["paths"]
    assert three["minItems"] == 3 and all(len(a) == 3 for a in three["enum"])  # probe: two of the three had been read


def test_a_list_of_files_names_each_stated_path_at_most_once():
    """"Read notes.txt and repo/notes.md from my workspace together." had read ["repo/notes.md", "repo/notes.md"]
    (held-out set 67): the grammar offers the stated paths' arrangements, so no path can come twice."""
    many = {"type": "object", "properties": {"paths": {"type": "array", "items": {"type": "string"}}}, "required": ["paths"]}
    request = "Read notes.txt and repo/notes.md from my workspace together."
    assert grammar_schema(many, request)["properties"]["paths"]["enum"] == [  # both: the turn lists them as one list
        ["notes.txt", "repo/notes.md"], ["repo/notes.md", "notes.txt"]]
    gbnf = arguments_gbnf(many, request)
    rule = next(line for line in gbnf.splitlines() if line.startswith("paths ::= "))
    assert rule.count(" | ") == 1 and rule.count("repo/notes.md") == 2  # two lists, the path once in each
    one = grammar_schema(many, "Move notes.txt to repo/notes.md")["properties"]["paths"]["enum"]  # no list: any of them
    assert one == [["notes.txt"], ["repo/notes.md"], ["notes.txt", "repo/notes.md"], ["repo/notes.md", "notes.txt"]]
    four = "Read a.txt, b.txt, c.txt and d.txt together."  # past MAX_ARRANGED: the items' choices alone
    assert "enum" not in grammar_schema(many, four)["properties"]["paths"]


def test_a_folder_listing_with_no_folder_stated_starts_at_the_servers_root():
    """"What files do I have?" had listed "/home/ann/notes/todo.txt", a path from the prompt's examples (set 36); a
    reader keeps a free path, and a stated folder is taken as stated."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    listing = "Get a detailed listing of all files and directories in a specified path"
    assert grammar_schema(schema, "What files do I have?", description=listing)["properties"]["path"]["enum"] == ["."]
    assert "enum" not in grammar_schema(schema, "Read my notes", description="Read the complete contents of a file")["properties"]["path"]
    assert grammar_schema(schema, "What files are in /srv/x?", description=listing)["properties"]["path"]["enum"] == ["/srv/x"]


def test_a_list_of_names_takes_the_names_the_request_writes():
    """"Delete Acme from memory." had written entityNames ["Acme", "Acme", …] to the token cap; a list of names
    holds the request's names, each at most once, and stays free when the request writes none."""
    schema = {"type": "object", "required": ["entityNames"], "properties": {
        "entityNames": {"type": "array", "items": {"type": "string"}}}}
    names = grammar_schema(schema, "Delete Acme from memory.")["properties"]["entityNames"]
    assert names["items"]["enum"] == ["Acme"] and names["maxItems"] == 1
    names = grammar_schema(schema, "Alice no longer works at Acme, forget both.")["properties"]["entityNames"]
    assert names["items"]["enum"] == ["Alice", "Acme"] and names["maxItems"] == 2
    assert names["enum"] == [["Alice"], ["Acme"], ["Alice", "Acme"], ["Acme", "Alice"]]  # each once, as file lists
    assert "enum" not in grammar_schema(schema, "delete the acme entity")["properties"]["entityNames"]["items"]
    types = {"type": "object", "properties": {"typeNames": {"type": "array", "items": {"type": "string"}}}}
    assert "enum" not in grammar_schema(types, "Delete Acme from memory.")["properties"]["typeNames"]["items"]


def test_an_insert_keeps_every_column_the_request_pairs_with_a_value():
    """Held-out set 57: "Insert a note titled 'Call mom' with body 'Sunday evening' into notes." came out as
    `INSERT INTO notes (body) VALUES ('Sunday evening')`, the title dropped."""
    import re

    from nexus.llm.grammars import sql_pattern

    request = "Insert a note titled 'Call mom' with body 'Sunday evening' into notes."
    pattern = sql_pattern("SQL query to execute", request, "Execute an INSERT, UPDATE, or DELETE query")
    assert re.fullmatch(pattern, "INSERT INTO notes (title, body) VALUES ('Call mom', 'Sunday evening')")
    assert not re.fullmatch(pattern, "INSERT INTO notes (body) VALUES ('Sunday evening')")
    # one value with its column: the one-column row, as before
    single = sql_pattern("SQL query to execute", "Insert a row with title 'Buy milk' into the notes table.", "Run an INSERT")
    assert re.fullmatch(single, "INSERT INTO notes (title) VALUES ('Buy milk')")


def test_a_file_tools_from_to_pair_takes_the_files_the_request_writes():
    """move_file(source, destination) names no parameter a path: "Rename notes.txt to notes-old.txt in my workspace."
    (set 72) had moved notes-old.txt to notes-new.txt, a file the request never wrote."""
    move = {"type": "object", "properties": {"source": {"type": "string"}, "destination": {"type": "string"}},
            "required": ["source", "destination"]}
    files = "Move or rename files and directories."
    props = grammar_schema(move, "Rename notes.txt to notes-old.txt in my workspace.", description=files)["properties"]
    assert (props["source"]["enum"], props["destination"]["enum"]) == (["notes.txt"], ["notes-old.txt"])
    # one file and a folder it goes into: the file, and the file in that folder (probe: "my_workspace", a new name)
    props = grammar_schema(move, "Move config.ini into the drafts folder in my workspace.", description=files)["properties"]
    assert (props["source"]["enum"], props["destination"]["enum"]) == (["config.ini"], ["drafts/config.ini"])
    for request, description in (("Move notes.txt into the workspace folder.", files),  # one file, no folder of its own
                                  ("Rename notes.txt to notes-old.txt.", "Rename a record."),  # not a tool about files
                                  ("Book it from 9 a.m. to 5 p.m. in Washington D.C.", files)):  # no file written
        props = grammar_schema(move, request, description=description)["properties"]
        assert "enum" not in props["source"] and "enum" not in props["destination"]


def test_a_files_content_given_unquoted_after_the_text_is_that_span():
    """"Write the text see you soon into a new file bye.txt in my workspace." (set 75) had written content "bye.txt"
    (refused as the file's own name) and "Save the text buy milk into todo.txt" (set 71) an edit to "milk"."""
    write = {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
             "required": ["path", "content"]}
    for request, text in (("Write the text see you soon into a new file bye.txt in my workspace.", "see you soon"),
                          ("Save the text buy milk into todo.txt in my workspace.", "buy milk"),
                          ("Create ideas.txt with the text learn rust.", "learn rust")):
        assert grammar_schema(write, request)["properties"]["content"]["enum"] == [text]
    for request in ("Save the text 'buy milk' to todo.txt", "Create todo.txt containing buy milk"):  # quoted, or no "the text"
        assert "enum" not in grammar_schema(write, request)["properties"]["content"]


def test_one_count_the_request_gives_is_written_to_the_end_it_names():
    """Probe "Show me the first 3 lines of notes.txt": read_text_file got head 3 and tail 3; the server refused both."""
    schema = {"type": "object", "properties": {
        "path": {"type": "string"},
        "tail": {"description": "If provided, returns only the last N lines of the file", "type": "number"},
        "head": {"description": "If provided, returns only the first N lines of the file", "type": "number"}},
        "required": ["path"]}
    first, last = grammar_schema(schema, "Show me the first 3 lines of notes.txt"), grammar_schema(schema, "Print the last 5 lines of log.txt")
    assert first["required"] == ["path", "head"] and "tail" not in first["properties"]  # the model may not write it
    assert last["required"] == ["path", "tail"] and "head" not in last["properties"]
    assert grammar_schema(schema, "Show 3 lines of notes.txt")["required"] == ["path", "tail", "head"]  # no end named


GIT_LOG = {"type": "object", "properties": {
    "max_count": {"default": 10, "title": "Max Count", "type": "integer"},
    "start_timestamp": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None,
                        "description": "Start timestamp for filtering commits. Accepts: ISO 8601 format, relative dates"},
    "end_timestamp": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None,
                      "description": "End timestamp for filtering commits. Accepts: ISO 8601 format, relative dates"}},
    "required": []}


@pytest.mark.parametrize("request_, start, end", [
    # probe rows: end_timestamp 2026-01-01 with max_count 1; {}; max_count 2
    ("Show the commit log since 2026-01-01.", "2026-01-01", None),
    ("Which commits were made since yesterday?", "yesterday", None),
    ("List commits from the last 2 weeks.", "2 weeks ago", None),
    ("Show commits made before June 5th 2026.", None, "2026-06-05"),
    ("Commits between 2026-01-01 and 2026-02-01, please: from 2026-01-01 until 2026-02-01", "2026-01-01", "2026-02-01"),
])
def test_a_span_of_time_the_request_bounds_goes_to_the_end_it_names(request_, start, end):
    shaped = grammar_schema(GIT_LOG, request_)
    for name, value in (("start_timestamp", start), ("end_timestamp", end)):
        if value is None:
            assert name not in shaped["properties"]  # the end it does not state is not offered
        else:
            assert shaped["properties"][name]["enum"] == [value] and name in shaped["required"]
    assert "max_count" not in shaped["required"]  # "2 weeks" counts no commits


def test_a_request_with_no_span_of_time_leaves_both_ends_free():
    shaped = grammar_schema(GIT_LOG, "Show the last 5 commits.")
    assert shaped["required"] == ["max_count"] and "enum" not in shaped["properties"]["start_timestamp"]


def test_an_end_written_in_a_layout_or_with_no_parameter_for_the_stated_end_is_left_alone():
    # an end written in a layout ("YYYY-MM-DD HH:MM:SS") takes no "60 minutes ago", and a span whose end no parameter
    # takes changes nothing (T: "the snapshot ... for the last 60 minutes" had kept its `to`)
    laid = {"type": "object", "properties": {"to": {"type": "string", "description": "The end time in the format of 'YYYY-MM-DD HH:MM:SS'."},
                                             "until": {"type": "string", "description": "The end time"}}}
    assert list(grammar_schema(laid, "the snapshot for the last 60 minutes")["properties"]) == ["to", "until"]


def test_rows_named_by_a_table_their_server_holds_get_its_statement():
    """"How many notes are there?" names no table; with the tables the server holds (`Tool.tables`) the grammar counts
    the rows of notes, as it does for "... in the notes table"; without them it stays free after SELECT."""
    from nexus.llm.grammars import sql_pattern

    read, write = "Execute a SELECT query on the SQLite database", "Execute an INSERT, UPDATE, or DELETE query"
    assert sql_pattern("SQL query to execute", "How many notes are there?", read, {"notes": {}}) == \
        r"^SELECT COUNT\(\*\) FROM notes$"
    assert sql_pattern("SQL query to execute", "How many notes are there?", read) == '^(SELECT) [^"\\\\]*$'
    assert sql_pattern("SQL query to execute", "Delete every note whose title is 'Old'.", write, {"notes": {}}) == \
        "^DELETE FROM (notes) WHERE (title) = ('Old')$"
    schema = {"type": "object", "properties": {"query": {"type": "string", "description": "SQL query to execute"}},
              "required": ["query"]}
    shaped = grammar_schema(schema, "Show me the note with the title 'Buy milk'.", description=read, tables={"notes": {}})
    assert shaped["properties"]["query"]["pattern"] == r"^SELECT \* FROM notes WHERE (title) = ('Buy milk')$"


def test_a_row_statement_names_only_the_columns_its_table_has_when_the_server_said():
    """"Change the title of the note 'Buy bread' to ..." finds the row by a column the request does not name; free, the
    model had written `WHERE price = 'Buy bread'` (no such column). The server's describe_table gives notes' columns."""
    from nexus.llm.grammars import sql_pattern

    request, write = "Change the title of the note 'Buy bread' to 'Buy rye bread'.", "Execute an UPDATE query"
    columns = {"id": "INTEGER", "title": "TEXT", "body": "TEXT"}
    learnt = sql_pattern("SQL query to execute", request, write, {"notes": columns})
    # a text finds the row by a text column (offered `id` too, the model wrote `WHERE id = 'Buy bread'`: no row)
    assert learnt == "^UPDATE (notes) SET (title) = ('Buy rye bread') WHERE (title|body) = ('Buy bread')$"
    number = sql_pattern("SQL query to execute", "Delete the note whose id is 3.", "Execute a DELETE query", {"notes": columns})
    assert number == "^DELETE FROM (notes) WHERE (id) = (3)$"
    unknown = sql_pattern("SQL query to execute", request, write, {"notes": {}})
    assert unknown == "^UPDATE (notes) SET (title) = ('Buy rye bread') WHERE ([A-Za-z][A-Za-z0-9_]{0,30}) = ('Buy bread')$"
