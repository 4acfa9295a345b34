"""Turns that need no tool in any registry, read against the registry at hand to set where its NO_TOOL starts.

Why: the gate's p_no_tool is calibrated on BFCL registries of 337-1,000 tools whose descriptions run to sentences. On
a registry of terse tools (the demo's six MCP servers: "Execute a SELECT query on the SQLite database", "Create
multiple new entities in the knowledge graph") every turn reads as less tool-like, requests that need a tool too:
"Remember that Carol is a software engineer." scored p_no_tool 0.98 and "What do you know about Alice?" 0.99 against
the calibrated threshold 0.87, while greetings and thanks scored 0.986-1.0 there. The turns below — greetings,
thanks, sign-offs, acknowledgements, small talk with the assistant, written for this module — need no tool whatever
the registry holds; the lowest p_no_tool any of them gets on a registry is a floor for its NO_TOOL threshold
(`no_tool_floor`): a turn is refused only when it reads at least as tool-less as every one of them. Where they score
lower than the calibrated threshold (every BFCL split: 0.76 on the test split T) the threshold stays as calibrated, so
the floor only ever raises it, and only on registries where the calibration over-reads "no tool".

The floor sits a margin below the lowest reference turn, in log-odds (`GateSettings.no_tool_reference_margin`): a turn
that reads as tool-less as a reference turn but phrased a little differently ("How are you today?" at 0.978 beside
"Hi, how are you today?" at 0.982 on the demo's tools) is refused too.

>>> no_tool_floor([0.999, 0.986, 0.998], calibrated=0.866), no_tool_floor([0.76, 0.99], calibrated=0.866)
(0.986, 0.866)
"""

from __future__ import annotations

from typing import Sequence

from nexus.gate.calibration import logit, sigmoid

REFERENCE_TURNS = (
    "Hi!", "Hello there.", "Good morning!", "Hey, how's it going?", "Hi, how are you today?", "Good evening.",
    "Thanks!", "Thank you so much.", "Thanks, that's all I needed.", "Great, thank you for your help.",
    "Perfect, thanks a lot!", "Cheers, bye!", "Goodbye.", "See you later.", "Bye for now.", "Have a nice day!",
    "That's all for today, thanks.", "No, that's everything.", "Okay.", "Got it.", "Sounds good.", "Cool, that works.",
    "Alright, makes sense.", "Nice, good to know.", "Awesome!", "Sure.", "No thanks.", "Yes please.", "Never mind.",
    "Sorry, my mistake.", "Who are you?", "What's your name?", "Are you a robot?", "How old are you?",
    "Do you have feelings?", "What can you do?", "Tell me a joke.", "Tell me something funny.", "I'm bored.",
    "I'm feeling a bit tired today.", "I had a long day at work.", "You're very helpful.", "That was fast!",
    "Do you like music?", "What's your favourite movie?", "What do you think about the weather lately?", "I love pizza.",
    "My cat is sleeping on my keyboard.", "Let me think about it.", "Hold on a second.", "Just a moment, please.",
    "I'll be right back.", "Can you say that again?", "What did you mean by that?", "Interesting.",
    "Haha, that's funny.", "Oh no.", "Wow, really?", "I don't know.", "Maybe later.", "Good night!",
    "Happy birthday to me!", "I appreciate it.", "You too!",
)


def no_tool_floor(reference_p_no_tool: Sequence[float], calibrated: float, margin: float = 0.0) -> float:
    """The NO_TOOL threshold for a registry: the calibrated one, raised to the lowest p_no_tool the reference turns get
    on it, less `margin` in log-odds, when that is higher (never lowered)."""
    lowest = min((float(p) for p in reference_p_no_tool), default=float(calibrated))
    if margin > 0.0 and 0.0 < lowest < 1.0:
        lowest = float(sigmoid(logit(lowest) - margin))
    return max(float(calibrated), lowest)
