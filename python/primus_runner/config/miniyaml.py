"""A standard-library reader for the YAML the configuration files use, for a Python without PyYAML.

The launch inside a container runs on the image's Python, which may hold only the
standard library and the user's own packages; it still reads runner/.primus.yaml,
~/.primus.yaml and --config. config/files.py uses PyYAML when it imports and this
reader otherwise. It reads the subset those files are written in and gives the
values PyYAML's safe loader gives (YAML 1.1 scalars: ``true``/``yes``/``on``,
``null``/``~``, decimal integers and floats), and refuses anything else by line
rather than guess: anchors, aliases, tags, block scalars (``|``, ``>``), several
documents, complex keys, and plain scalars continued on the next line.

Accepted: block mappings (``key: value``, ``key:`` then an indented block),
block sequences (``- value``, ``- key: value`` with more keys below it), flow
sequences and mappings (``[a, "b"]``, ``{a: 1}``), plain, single- and
double-quoted scalars, comments. tests/python/test_miniyaml.py compares it with
PyYAML on every YAML file of the repository.
"""
from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only
    from typing import Any


class MiniYamlError(ValueError):
    """Text outside the subset, or malformed; ``line`` is 1-based."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(f"line {line}: {problem}")
        self.line = line
        self.problem = problem


_NULL = ("", "~", "null", "Null", "NULL")
_TRUE = ("true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y")
_FALSE = ("false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N")
_INT = re.compile(r"[-+]?(0|[1-9][0-9_]*)\Z")
_FLOAT = re.compile(r"[-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)?\Z")
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
            "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85",
            "_": "\xa0", "L": "\u2028", "P": "\u2029"}
_HEX = {"x": 2, "u": 4, "U": 8}


def plain_value(text: str) -> Any:
    """The value of a plain (unquoted) scalar, as PyYAML's safe loader resolves it (pure)."""
    if text in _NULL:
        return None
    if text in ("y", "Y", "n", "N"):  # PyYAML's resolver leaves these strings
        return text
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT.match(text) and text not in ("-", "+"):
        return int(text.replace("_", ""))
    if _FLOAT.match(text) and any(c.isdigit() for c in text):
        return float(text.replace("_", ""))
    lowered = text.lower()
    if lowered in (".inf", "+.inf"):
        return float("inf")
    if lowered == "-.inf":
        return float("-inf")
    if lowered == ".nan":
        return float("nan")
    return text


def _double(text: str, line: int) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(text):
            raise MiniYamlError(line, "a double-quoted scalar ends with a lone backslash")
        e = text[i + 1]
        if e in _ESCAPES:
            out.append(_ESCAPES[e])
            i += 2
        elif e in _HEX:
            digits = text[i + 2:i + 2 + _HEX[e]]
            if len(digits) != _HEX[e] or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise MiniYamlError(line, f"bad escape '\\{e}{digits}' in a double-quoted scalar")
            out.append(chr(int(digits, 16)))
            i += 2 + _HEX[e]
        else:
            raise MiniYamlError(line, f"unknown escape '\\{e}' in a double-quoted scalar")
    return "".join(out)


def _quoted_end(text: str, start: int, line: int) -> int:
    """Index just past the quoted scalar that opens at text[start] (pure)."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        if quote == '"' and text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            if quote == "'" and text[i + 1:i + 2] == "'":
                i += 2
                continue
            return i + 1
        i += 1
    raise MiniYamlError(line, f"unclosed {quote} quote (a quoted scalar on several lines needs PyYAML)")


def _unquote(token: str, line: int) -> Any:
    if token[:1] == "'":
        return token[1:-1].replace("''", "'")
    if token[:1] == '"':
        return _double(token[1:-1], line)
    return plain_value(token)


def _strip_comment(text: str, line: int) -> str:
    """TEXT without its trailing comment; quotes are skipped over (pure)."""
    i = 0
    while i < len(text):
        c = text[i]
        if c in "'\"" and (i == 0 or text[i - 1] in " \t[{,:-"):
            i = _quoted_end(text, i, line)
            continue
        if c == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
        i += 1
    return text.rstrip()


def _check_plain(text: str, line: int) -> None:
    if text[:1] in ("&", "*", "!", "|", ">", "%", "@", "`", "?"):
        raise MiniYamlError(line, f"'{text[:1]}' (anchors, aliases, tags, block scalars, "
                                  "directives, complex keys) needs PyYAML")


class _Flow:
    """A flow collection on one line: ``[a, b]``, ``{k: v}``, nested."""

    def __init__(self, text: str, line: int) -> None:
        self.text = text
        self.pos = 0
        self.line = line

    def _space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def value(self) -> Any:
        self._space()
        c = self.text[self.pos:self.pos + 1]
        if c == "[":
            return self._seq()
        if c == "{":
            return self._map()
        if c in ("'", '"'):
            end = _quoted_end(self.text, self.pos, self.line)
            token = self.text[self.pos:end]
            self.pos = end
            return _unquote(token, self.line)
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ",]}":
            if self.text[self.pos] == ":" and self.text[self.pos + 1:self.pos + 2] in (" ", ",", "]", "}", ""):
                break
            self.pos += 1
        token = self.text[start:self.pos].strip()
        _check_plain(token, self.line)
        if token[:1] in ("[", "{"):
            raise MiniYamlError(self.line, f"malformed flow collection near '{token}'")
        return plain_value(token)

    def _expect(self, chars: str) -> str:
        self._space()
        c = self.text[self.pos:self.pos + 1]
        if not c or c not in chars:
            raise MiniYamlError(self.line, f"expected one of {' '.join(chars)} in '{self.text}'")
        self.pos += 1
        return c

    def _seq(self) -> list[Any]:
        self.pos += 1
        items: list[Any] = []
        self._space()
        if self.text[self.pos:self.pos + 1] == "]":
            self.pos += 1
            return items
        while True:
            items.append(self.value())
            if self._expect(",]") == "]":
                return items
            self._space()
            if self.text[self.pos:self.pos + 1] == "]":
                self.pos += 1
                return items

    def _map(self) -> dict[Any, Any]:
        self.pos += 1
        found: dict[Any, Any] = {}
        self._space()
        if self.text[self.pos:self.pos + 1] == "}":
            self.pos += 1
            return found
        while True:
            key = self.value()
            self._space()
            value: Any = None
            if self.text[self.pos:self.pos + 1] == ":":
                self.pos += 1
                self._space()
                if self.text[self.pos:self.pos + 1] not in (",", "}"):
                    value = self.value()
            found[key] = value
            if self._expect(",}") == "}":
                return found
            self._space()
            if self.text[self.pos:self.pos + 1] == "}":
                self.pos += 1
                return found


def _scalar_or_flow(text: str, line: int) -> Any:
    if text[:1] in ("[", "{"):
        flow = _Flow(text, line)
        value = flow.value()
        if flow.text[flow.pos:].strip():
            raise MiniYamlError(line, f"text after a flow collection: '{flow.text[flow.pos:].strip()}'")
        return value
    if text[:1] in ("'", '"'):
        end = _quoted_end(text, 0, line)
        if text[end:].strip():
            raise MiniYamlError(line, f"text after a quoted scalar: '{text[end:].strip()}'")
        return _unquote(text, line)
    _check_plain(text, line)
    if re.search(r":(\s|$)", text):
        raise MiniYamlError(line, f"a ': ' inside the plain scalar '{text}' (quote it)")
    return plain_value(text)


def _split_key(text: str, line: int) -> tuple[str, str] | None:
    """(key, rest) when TEXT is ``key: rest`` or ``key:``; None for a plain value (pure)."""
    if text[:1] in ("'", '"'):
        end = _quoted_end(text, 0, line)
        if text[end:end + 1] == ":" and text[end + 1:end + 2] in (" ", "\t", ""):
            return text[:end], text[end + 1:].strip()
        return None
    if text[:1] in ("[", "{"):
        return None
    match = re.search(r":(\s|$)", text)
    if not match:
        return None
    return text[:match.start()].rstrip(), text[match.end():].strip()


def _lines(text: str) -> list[tuple[int, int, str]]:
    """(line number, indent, content) of each line that holds something (pure)."""
    found: list[tuple[int, int, str]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        if "\t" in raw[:len(raw) - len(raw.lstrip(" \t"))]:
            raise MiniYamlError(number, "a tab in the indentation")
        content = _strip_comment(raw.strip(" "), number)
        if not content:
            continue
        if content in ("---", "...") or content.startswith(("--- ", "%")):
            if found or content.startswith("%"):
                raise MiniYamlError(number, "several documents or a directive need PyYAML")
            continue
        found.append((number, len(raw) - len(raw.lstrip(" ")), content))
    return found


class _Block:
    def __init__(self, lines: list[tuple[int, int, str]]) -> None:
        self.lines = lines
        self.i = 0

    def node(self, indent: int) -> Any:
        """The block node whose lines start at the current line, indented INDENT."""
        number, _, content = self.lines[self.i]
        if content == "-" or content.startswith("- "):
            return self._seq(indent)
        if _split_key(content, number) is not None:
            return self._map(indent)
        self.i += 1
        value = _scalar_or_flow(content, number)
        if self.i < len(self.lines) and self.lines[self.i][1] > indent:
            raise MiniYamlError(self.lines[self.i][0], "a plain scalar continued on the next line needs PyYAML")
        return value

    def _child(self, parent_indent: int, number: int, seq_ok: bool) -> Any:
        """The block under a ``key:`` or ``-`` with nothing after it (None if none)."""
        if self.i >= len(self.lines):
            return None
        _, indent, content = self.lines[self.i]
        is_seq = content == "-" or content.startswith("- ")
        if indent > parent_indent or (seq_ok and indent == parent_indent and is_seq):
            return self.node(indent)
        return None

    def _map(self, indent: int) -> dict[Any, Any]:
        found: dict[Any, Any] = {}
        while self.i < len(self.lines):
            number, ind, content = self.lines[self.i]
            if ind < indent:
                break
            if ind > indent:
                raise MiniYamlError(number, "unexpected indentation")
            split = _split_key(content, number)
            if split is None:
                raise MiniYamlError(number, f"expected 'key: value', found '{content}'")
            key_text, rest = split
            key = _scalar_or_flow(key_text, number) if key_text else None
            self.i += 1
            found[key] = self._child(indent, number, True) if not rest else self._inline(rest, indent, number)
        return found

    def _inline(self, rest: str, indent: int, number: int) -> Any:
        value = _scalar_or_flow(rest, number)
        if self.i < len(self.lines) and self.lines[self.i][1] > indent:
            raise MiniYamlError(self.lines[self.i][0], "unexpected indentation (a plain scalar continued "
                                                        "on the next line needs PyYAML)")
        return value

    def _seq(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while self.i < len(self.lines):
            number, ind, content = self.lines[self.i]
            if ind < indent or not (content == "-" or content.startswith("- ")):
                if ind > indent:
                    raise MiniYamlError(number, "unexpected indentation")
                break
            if ind > indent:
                raise MiniYamlError(number, "unexpected indentation")
            rest = content[1:].strip()
            if not rest:
                self.i += 1
                items.append(self._child(indent, number, False))
                continue
            # "- key: value" (a mapping item) or "- - x": the item's text, re-read as a
            # line indented where its text starts.
            inner = indent + len(content) - len(content[1:].lstrip(" "))
            self.lines[self.i] = (number, inner, rest)
            items.append(self.node(inner))
        return items


def load(text: str) -> Any:
    """The value of TEXT; raises MiniYamlError (with the line) outside the subset."""
    lines = _lines(text.lstrip("\ufeff"))
    if not lines:
        return None
    block = _Block(lines)
    value = block.node(lines[0][1])
    if block.i < len(lines):
        raise MiniYamlError(lines[block.i][0], "unexpected text after the document's top level")
    return value
