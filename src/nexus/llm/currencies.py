"""Currencies the request names, as ISO 4217 codes, for a parameter that takes a currency.

A small model copies the few-shot example's "USD" for "150 Euros"; the grammar then offers only the codes of
the currencies the request names (`nexus.llm.grammars.grammar_schema`). The parameter is told by its schema
(a name or description about a currency, a string without an enum), never by the tool.

>>> request_currencies("Convert 150 Euros to Canadian dollars"), request_currencies("20000 Japanese Yen in USD")
(['EUR', 'CAD'], ['JPY', 'USD'])
>>> is_currency_parameter("from_currency", {"type": "string"}), is_currency_parameter("amount", {"type": "number"})
(True, False)
"""

from __future__ import annotations

import re
from typing import Any, Mapping

# Longest names first, so "Canadian dollar" is read before "dollar"; a plural s is allowed after each.
NAMES = {
    "us dollar": "USD", "united states dollar": "USD", "american dollar": "USD", "canadian dollar": "CAD",
    "australian dollar": "AUD", "new zealand dollar": "NZD", "hong kong dollar": "HKD", "singapore dollar": "SGD",
    "japanese yen": "JPY", "british pound": "GBP", "pound sterling": "GBP", "swiss franc": "CHF", "indian rupee": "INR",
    "chinese yuan": "CNY", "mexican peso": "MXN", "brazilian real": "BRL", "south korean won": "KRW",
    "korean won": "KRW", "russian ruble": "RUB", "swedish krona": "SEK", "norwegian krone": "NOK",
    "danish krone": "DKK", "south african rand": "ZAR", "turkish lira": "TRY", "dollar": "USD", "euro": "EUR",
    "yen": "JPY", "pound": "GBP", "sterling": "GBP", "franc": "CHF", "rupee": "INR", "yuan": "CNY", "renminbi": "CNY",
    "rmb": "CNY", "peso": "MXN", "ruble": "RUB", "rouble": "RUB", "rand": "ZAR", "bitcoin": "BTC",
}
CODES = frozenset(NAMES.values()) | frozenset("AED ARS CZK EGP HUF IDR ILS MYR NGN PHP PKP PLN SAR THB TWD VND".split())
_NAME = re.compile(r"\b(" + "|".join(sorted(map(re.escape, NAMES), key=len, reverse=True)) + r")s?\b", re.I)
_CODE = re.compile(r"\b[A-Z]{3}\b")
_SYMBOL = {"$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "₹": "INR"}
_HINT = re.compile(r"currenc", re.I)


def is_currency_parameter(name: str, schema: Mapping[str, Any]) -> bool:
    return schema.get("type") in ("string", None) and "enum" not in schema and (
        bool(_HINT.search(name)) or bool(_HINT.search(str(schema.get("description", "")))) and "code" in name.lower())


def request_currencies(request: str) -> list[str]:
    """The ISO codes of the currencies the request names (names, codes, symbols), in the order it names them."""
    found: list[tuple[int, str]] = [(m.start(), NAMES[m.group(1).lower()]) for m in _NAME.finditer(request or "")]
    found += [(m.start(), m.group(0)) for m in _CODE.finditer(request or "") if m.group(0) in CODES]
    found += [(i, code) for i, ch in enumerate(request or "") if (code := _SYMBOL.get(ch))]
    return list(dict.fromkeys(code for _, code in sorted(found)))
