"""``SET TIME ZONE``, ``SET timezone = ...``, ``RESET timezone``, ``SHOW TIME ZONE``: the one
session setting sqlkv has (sqlkv/sql/timezone.py). Every other ``SET`` is refused by name.

    SET [SESSION] TIME ZONE { 'zone' | number | LOCAL | DEFAULT }
    SET [SESSION] timezone { TO | = } { 'zone' | number | DEFAULT }
    RESET { timezone | TIME ZONE }
    SHOW { TIME ZONE | timezone }

The statement becomes ``ParsedStatement("SET TIME ZONE", zone=...)`` (``zone`` None: back to
the default, UTC) or ``ParsedStatement("SHOW TIME ZONE")``.
"""

from __future__ import annotations

from sqlglot.tokens import Token, TokenType

from sqlkv.errors import NotSupportedError, SqlSyntaxError
from sqlkv.sql.parse_edits import token_word

_REFUSED = ("sqlkv has one session setting, the time zone (SET TIME ZONE 'zone'); "
            "other SET/RESET/SHOW variables are not supported")


def is_time_zone_show(words: list[str]) -> bool:
    return words[1:] in (["TIME", "ZONE"], ["TIMEZONE"])


def parse_set(toks: list[Token]) -> str | None:
    """The zone a SET/RESET statement names (None: the default). Refuses other settings."""
    words = [token_word(t) for t in toks]
    if words[0] == "RESET":
        if words[1:] in (["TIMEZONE"], ["TIME", "ZONE"]):
            return None
        raise NotSupportedError(f"RESET {' '.join(t.text for t in toks[1:])} is not supported: {_REFUSED}")
    rest = toks[1:]
    if words[1:2] == ["SESSION"]:
        rest = toks[2:]
    elif words[1:2] == ["LOCAL"]:
        raise NotSupportedError("SET LOCAL (a setting for one transaction) is not supported; use SET TIME ZONE")
    rw = [token_word(t) for t in rest]
    if rw[:2] == ["TIME", "ZONE"]:
        value = rest[2:]
    elif rw[:1] == ["TIMEZONE"] and rw[1:2] in (["TO"], ["="]) or rw[:1] == ["TIMEZONE"] and rest[1:2] and \
            rest[1].token_type == TokenType.EQ:
        value = rest[2:]
    else:
        shown = " ".join(t.text for t in toks[1:3])
        raise NotSupportedError(f"SET {shown} is not supported: {_REFUSED}")
    return _zone_value(value)


def _zone_value(value: list[Token]) -> str | None:
    words = [token_word(t) for t in value]
    if words in (["LOCAL"], ["DEFAULT"]):
        return None  # sqlkv's default zone: UTC
    if len(value) == 1 and value[0].token_type in (TokenType.STRING, TokenType.NUMBER, TokenType.VAR,
                                                     TokenType.IDENTIFIER):
        return value[0].text
    if len(value) == 2 and value[0].token_type in (TokenType.DASH, TokenType.PLUS) and \
            value[1].token_type == TokenType.NUMBER:
        return value[0].text + value[1].text
    if words[:1] == ["INTERVAL"]:
        raise NotSupportedError("SET TIME ZONE INTERVAL ... is not supported: give an offset such as '-05:00'")
    raise SqlSyntaxError("syntax error: SET TIME ZONE expects a zone name ('Europe/Paris'), an offset "
                         "('+05:30', -5), LOCAL or DEFAULT")
