"""Social turns: thanks, acknowledgements and sign-offs, however worded, that ask for nothing.

Why: a short turn is read as a follow-up of the turn before it ("And London?", "Berlin instead."), so the gate scores
the two together. An acknowledgement is short too, and it then scored as the request before it: after "Remove the
observation that Alice likes tennis.", "Cool, appreciate it." was shortlisted and called `delete_observations` again.
The patterns in `nexus.gate.gate` know a few fixed openings ("Thanks", "That's perfect"); on the 2,290 closings,
acknowledgements and greetings of `data/train/no_tool` they still let 708 through as follow-ups ("Much appreciated.",
"That works for me.", "Noted.", "Fair enough."). A turn is social here when every word of it is one of the words below
(thanks, praise, assent, pronouns and small function words): what a follow-up adds — a place, a name, a verb such as
"open", "delete" or "do", "again", "instead", "other" — is never among them. Whether the turn needs a tool is still the
gate's to decide, on the turn alone.

>>> [is_social(t) for t in ("Cool, appreciate it.", "Much obliged!", "That works for me.", "Nice one, cheers", "That would do.",
...                             "Super, talk soon!", "Morning!")]
[True, True, True, True, True, True, True]
>>> [is_social(t) for t in ("And London?", "Do it again.", "That one.", "Open it.", "Is it correct?", "")]
[False, False, False, False, False, False]
"""

from __future__ import annotations

import re

# Phrases first, so their content-looking words ("rock", "mind", "plan") count only inside them.
_PHRASES = re.compile(r"\b(?:you rock|well done|good stuff|makes? sense|fair enough|good to know|never ?mind|no worries|"
                      r"no problem|no more|my bad|talk (?:to you )?(?:soon|later)|catch you later|sounds like a plan|"
                      r"(?:thanks|thank you) a (?:million|ton|bunch|lot)|(?:that|this|it) (?:will|would|should|could) do"
                      r"(?: it)?|(?:nice|good|great) (?:one|work|job)|take care|see (?:you|ya)|"
                      r"have a (?:nice|good|great) (?:day|one|evening|night|weekend))\b", re.I)
_WORDS = frozenset("""
thanks thank thx ty ta tnx cheers appreciate appreciated appreciation grateful obliged kindly bye goodbye later
ok okay k alright right yes yeah yep yup sure fine no nope nah not now maybe perhaps please anyway
good great cool nice perfect awesome excellent wonderful brilliant lovely amazing fantastic neat sweet superb splendid
terrific helpful useful stellar glad happy ideal exactly indeed true correct noted understood gotcha got
sounds sound seems seem works work worked will would be is was are been
very so really super most truly greatly much many lot lots bunch tons all everything done enough else nothing
that this it its that's thats it's i i'm im me my we us our you your you're u for the a an to of and oh wow
hi hello hey hiya howdy greetings morning afternoon evening night yo
haha lol hmm ah interesting questions need needed want wanted help time just at today then well pretty quite easy
like love kind necessary anymore should could has have don't dont that'll it'll won't i'd that'd
""".split())
_TOKENS = re.compile(r"[a-z]+(?:'[a-z]+)?")


def is_social(turn: str) -> bool:
    """Whether every word of `turn` is thanks, praise, assent or a small function word (see the module)."""
    if "?" in turn:  # "Is it correct?", "Was that helpful?": a question about what was done may ask for more
        return False
    text = turn.lower().replace("’", "'")
    rest = _PHRASES.sub(" ", text)
    words = _TOKENS.findall(rest)
    return (bool(words) or rest != text) and all(word in _WORDS for word in words)
