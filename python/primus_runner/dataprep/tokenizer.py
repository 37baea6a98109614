"""A small deterministic tokenizer for the embedded workload: bytes.

Token ids 0-255 are the bytes of the UTF-8 text, id 256 is the end-of-document
token (Megatron's ``--append-eod``), so the vocabulary has 257 entries and needs
no vocabulary file: every node derives the same ids from the same text, and any
reader can decode a dataset written with it.

Documents are the paragraphs of a corpus: text separated by one or more blank
lines (lines holding only spaces or tabs count as blank), with leading and
trailing whitespace removed; empty paragraphs are dropped.
"""
from __future__ import annotations

import re
from array import array
from collections.abc import Iterator

NAME = "byte"
EOD = 256
VOCAB_SIZE = 257

_PARAGRAPH_BREAK = re.compile(rb"\r?\n[ \t]*(?:\r?\n[ \t]*)+")


def split_documents(corpus: bytes) -> Iterator[bytes]:
    """The paragraphs of ``corpus``, stripped, in order, empty ones dropped."""
    for part in _PARAGRAPH_BREAK.split(corpus):
        part = part.strip()
        if part:
            yield part


def encode_document(document: bytes) -> array[int]:
    """Token ids of one document, ending with EOD."""
    tokens = array("H")
    tokens.extend(document)  # extend() takes the ints; array("H", bytes) would reinterpret the buffer
    tokens.append(EOD)
    return tokens


def decode(tokens: list[int] | array[int]) -> str:
    """Text of token ids; EOD becomes a blank line."""
    out = bytearray()
    for token in tokens:
        if token == EOD:
            out += b"\n\n"
        elif 0 <= token < 256:
            out.append(token)
        else:
            raise ValueError(f"token id {token} is outside the byte vocabulary (0-{VOCAB_SIZE - 1})")
    return out.decode("utf-8", errors="replace")
