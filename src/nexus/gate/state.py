"""Evidence that a turn asks whether something is in some state ("Are there any uncommitted changes in my repository?",
"Is my working tree clean?", "Check whether my repo has changes."), for the tool of the same server whose description
says it shows a status.

Why the gate needs it: mcp-server-git's `git_status` says only "Shows the working tree status", and the cross-encoder
never links "uncommitted changes", "anything to commit" or "clean" to it: on the demo's registry it was not among the
six candidates of any of those turns, while `git_commit`, `git_diff_unstaged` and `git_log` were (7 of 8 such requests
in sets 6-33 missed). A yes/no question about a thing is answered by its status. The server is the domain: the status
tool joins only when the SLB's first candidate comes from the same server, and only in a registry of several servers
(one source, as a BFCL file is, says nothing about domains, so the evidence never fires there).

>>> [asks_state(t) for t in ("Are there any uncommitted changes in my repository?", "Is my working tree clean?",
...     "Check whether my repo has changes.", "Have I changed anything since the last commit?")]
[True, True, True, True]
>>> [asks_state(t) for t in ("Can you read notes.txt to me?", "Do you know anything about Acme?", "Show the status.",
...     "Is it morning in Honolulu? Also add 2 and 3.", "Add the file. Is it staged?")]
[False, False, False, True, False]
>>> shows_status("Shows the working tree status"), shows_status("Records changes to the repository")
(True, False)
"""

from __future__ import annotations

import re

# a yes/no question (not one put to the assistant: "Do you know …", "Can you …"), or an order to check whether
_STATE = re.compile(r"^\W*(?:(?:is|are|was|were|has|have|had|does|do|did)\b(?!\s+you\b)|check\s+(?:whether|if)\b)", re.I)
_STATUS = re.compile(r"\bstatus\b", re.I)


def asks_state(turn: str) -> bool:
    """Whether a turn opens by asking if something is so."""
    return bool(_STATE.match(turn or ""))


def shows_status(description: str) -> bool:
    """Whether a tool's description says it shows a status."""
    return bool(_STATUS.search(description or ""))
