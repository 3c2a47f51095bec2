"""String functions, as cty's standard library has them: lengths, reversals and substrings
count user-perceived characters (grapheme clusters, so "é" written as e and an accent is one),
case changes map one character at a time, and patterns are Go's regular expressions."""

from __future__ import annotations

from typing import Any

import regex

from drover.jobspec.errors import FunctionError
from drover.jobspec.functions.params import Fn, string, strings, takes, whole

_GRAPHEME = regex.compile(r"\X")
# Go's regular expressions run in linear time; Python's backtrack, and a pattern such as
# (a+)+$ could hold a parse for ever, so a match is given this long.
_REGEX_SECONDS = 1.0
# Go's unicode.IsSpace: Python's str.isspace() but for the four ASCII information separators.
_SPACE = "".join(c for c in map(chr, range(0x3001)) if c.isspace() and c not in "\x1c\x1d\x1e\x1f")


def graphemes(s: str) -> list[str]:
    """`s` as its user-perceived characters."""
    return _GRAPHEME.findall(s)


def _per_char(s: str, change: str) -> str:
    # Go maps each rune to one rune: a character whose full mapping is longer ("ß" upper-cased
    # is "SS" in Python) stays as it is.
    out = []
    for c in s:
        mapped = getattr(c, change)()
        out.append(mapped if len(mapped) == 1 else c)
    return "".join(out)


def _title(s: str) -> str:
    # Go's strings.Title: a letter after a separator (anything but a letter, digit, "_"; of
    # non-ASCII characters only spaces) is title-cased.
    out, prev = [], " "
    for c in s:
        out.append(_per_char(c, "title") if _separates(prev) else c)
        prev = c
    return "".join(out)


def _separates(c: str) -> bool:
    if c.isascii():
        return not (c.isalnum() or c == "_")
    return not (c.isalpha() or c.isdigit()) and c in _SPACE


def _split(sep: Any, s: Any) -> list[str]:
    text, by = string(s, "str"), string(sep, "separator")
    if by:
        return text.split(by)
    return list(text)  # Go splits into characters where there is no separator


def _join(sep: Any, *lists: Any) -> str:
    if not lists:
        raise FunctionError("at least one list is required")
    items: list[str] = []
    for n, lst in enumerate(lists, 1):
        for i, item in enumerate(strings(lst, "lists")):
            if item is None:
                where = f"element {i} of list {n}" if len(lists) > 1 else f"element {i}"
                raise FunctionError(f"{where} is null; cannot concatenate null values")
            items.append(item)
    return string(sep, "separator").join(items)


def _indent(spaces: Any, s: Any) -> str:
    n = whole(spaces, "spaces")
    if not 0 <= n <= 1024:
        raise FunctionError(f'"spaces": {n} is out of range (0 to 1024)')
    return string(s, "str").replace("\n", "\n" + " " * n)


def _substr(s: Any, offset: Any, length: Any) -> str:
    chars, start, n = graphemes(string(s, "str")), whole(offset, "offset"), whole(length, "length")
    if start < 0:
        start += len(chars)
    elif n == 0:
        return ""
    rest = chars[start:] if start > 0 else chars
    # As cty's does, a length of 0 after a negative offset takes the rest of the string.
    return "".join(rest if n <= 0 else rest[:n])


def _regex_replace(s: Any, pattern: Any, replacement: Any) -> str:
    compiled = go_regexp(string(pattern, "pattern"))
    template = string(replacement, "replace")
    try:
        return compiled.sub(lambda m: _expand(template, m), string(s, "str"), timeout=_REGEX_SECONDS)
    except TimeoutError:
        raise FunctionError(f"the pattern took longer than {_REGEX_SECONDS} s on the text") from None


def go_regexp(pattern: str) -> regex.Pattern[str]:
    """`pattern`, a Go (RE2) regular expression, compiled to match as Go's does: \\d, \\w,
    \\s and \\b are ASCII, `$` is the end of the text unless (?m) is set, \\z is the end."""
    out, i, in_class = [], 0, False
    multiline = regex.search(r"\(\?[a-zA-Z]*m", pattern) is not None
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(r"\Z" if pattern[i + 1] == "z" and not in_class else pattern[i : i + 2])
            i += 2
            continue
        if c == "[" and not in_class:
            in_class = True
            # A "]" first in a class is a member of it, not its end.
            end = i + 1 + (pattern[i + 1 : i + 2] == "^")
            if pattern[end : end + 1] == "]":
                out.append(pattern[i : end + 1])
                i = end + 1
                continue
        elif c == "]" and in_class:
            in_class = False
        elif c == "$" and not in_class and not multiline:
            out.append(r"\Z")
            i += 1
            continue
        out.append(c)
        i += 1
    try:
        return regex.compile("".join(out), regex.ASCII | regex.VERSION0)
    except regex.error as e:
        raise FunctionError(f"error parsing regexp: {e}") from None


def _expand(template: str, m: regex.Match[str]) -> str:
    """Go's Regexp.Expand: $1, ${1}, $name, ${name} the group (empty when there is none), $$ a
    dollar sign; a name is as long as it can be ($1x is the group named "1x")."""
    out, i = [], 0
    while i < len(template):
        c = template[i]
        if c != "$" or i + 1 == len(template):
            out.append(c)
            i += 1
            continue
        if template[i + 1] == "$":
            out.append("$")
            i += 2
            continue
        if template[i + 1] == "{":
            close = template.find("}", i + 2)
            name = template[i + 2 : close] if close > 0 else ""
            end = close + 1
        else:
            found = regex.match(r"\w+", template[i + 1 :], regex.ASCII)
            name = found.group(0) if found else ""
            end = i + 1 + len(name)
        if not name or not regex.fullmatch(r"\w+", name, regex.ASCII):
            out.append(c)  # not a reference: the dollar sign is kept
            i += 1
            continue
        out.append(_group(m, name))
        i = end
    return "".join(out)


def _group(m: regex.Match[str], name: str) -> str:
    try:
        # A number with a leading zero is a name (that no group has), as in Go.
        key: int | str = int(name) if name.isdigit() and (name == "0" or name[0] != "0") else name
        return m.group(key) or ""
    except IndexError:
        return ""


def table() -> dict[str, Fn]:
    reverse = takes(lambda s: "".join(reversed(graphemes(string(s, "str")))), "str")
    return {
        "upper": takes(lambda s: _per_char(string(s, "str"), "upper"), "str"),
        "lower": takes(lambda s: _per_char(string(s, "str"), "lower"), "str"),
        "title": takes(lambda s: _title(string(s, "str")), "str"),
        "chomp": takes(lambda s: string(s, "str").rstrip("\r\n"), "str"),
        "trimspace": takes(lambda s: string(s, "str").strip(_SPACE), "str"),
        "trim": takes(lambda s, cut: string(s, "str").strip(string(cut, "cutset")), "str", "cutset"),
        "trimprefix": takes(lambda s, p: string(s, "str").removeprefix(string(p, "prefix")), "str", "prefix"),
        "trimsuffix": takes(lambda s, p: string(s, "str").removesuffix(string(p, "suffix")), "str", "suffix"),
        "indent": takes(_indent, "spaces", "str"),
        "split": takes(_split, "separator", "str"),
        "join": takes(_join, "separator", rest="lists"),
        "replace": takes(
            lambda s, old, new: string(s, "str").replace(string(old, "substr"), string(new, "replace")),
            "str",
            "substr",
            "replace",
        ),
        "regex_replace": takes(_regex_replace, "str", "pattern", "replace"),
        "strlen": takes(lambda s: len(graphemes(string(s, "str"))), "str"),
        "substr": takes(_substr, "str", "offset", "length"),
        # Nomad's map gives `reverse` cty's string reversal, as `strrev` is.
        "strrev": reverse,
        "reverse": reverse,
    }
