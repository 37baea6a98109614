"""Megatron-LM's indexed dataset (``.bin`` / ``.idx``), written and read without numpy or torch.

A dataset is a path prefix P with two files:

- ``P.bin``: the tokens of every sequence, back to back, little-endian, in the
  element type named by the index's dtype code.
- ``P.idx``: the index (``megatron/core/datasets/indexed_dataset.py``,
  ``_IndexWriter``), little-endian:

  ======  =====================  ==========================================
  bytes   type                   content
  ======  =====================  ==========================================
  9       bytes                  ``b"MMIDIDX\\x00\\x00"``
  8       uint64                 version, always 1
  1       uint8                  dtype code (table below)
  8       uint64                 S, the number of sequences
  8       uint64                 D, the number of document indices
  4*S     int32[S]               tokens per sequence
  8*S     int64[S]               byte offset of each sequence in ``P.bin``
  8*D     int64[D]               document indices: 0, then after each
                                 document the number of sequences so far
  ======  =====================  ==========================================

Dtype codes: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64, 7 float32,
8 uint16. Megatron picks uint16 for vocabularies below 65,500 tokens, else int32
(``DType.optimal_dtype``); so does :func:`dtype_code_for_vocab`.
Here every document is one sequence (Megatron's preprocessing without
``--split-sentences``), so D = S + 1.
"""
from __future__ import annotations

import os
import struct
import sys
from array import array
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import BinaryIO

from primus_runner.records import dataclass

INDEX_HEADER = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
# dtype code -> array[int] typecode (all fixed-size on the platforms we run on).
DTYPE_TYPECODES: dict[int, str] = {1: "B", 2: "b", 3: "h", 4: "i", 5: "q", 6: "d", 7: "f", 8: "H"}
DTYPE_NAMES: dict[int, str] = {1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64",
                               6: "float64", 7: "float32", 8: "uint16"}
_FIXED_HEADER = struct.Struct("<9sQBQQ")  # 34 bytes


class IndexedDatasetError(ValueError):
    """A .bin/.idx pair that is missing, truncated or not in the format above."""


def bin_path(prefix: str) -> str:
    return prefix + ".bin"


def idx_path(prefix: str) -> str:
    return prefix + ".idx"


def dtype_code_for_vocab(vocab_size: int) -> int:
    """Megatron's choice: uint16 (8) below 65,500 tokens, else int32 (4)."""
    return 8 if vocab_size < 65500 else 4


def _itemsize(code: int) -> int:
    return array(DTYPE_TYPECODES[code]).itemsize


def _little_endian(values: array[int]) -> bytes:
    if sys.byteorder == "big":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def _from_little_endian(typecode: str, data: bytes) -> array[int]:
    values = array(typecode)
    values.frombytes(data)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def _fsync_close(stream: BinaryIO) -> None:
    stream.flush()
    os.fsync(stream.fileno())
    stream.close()


class IndexedDatasetWriter:
    """Write documents to ``bin_file`` and, on :meth:`finalize`, the index to ``idx_file``.

    The two paths are given separately so that a caller can write under
    temporary names and rename into place afterwards.
    """

    def __init__(self, bin_file: str, idx_file: str, dtype_code: int) -> None:
        if dtype_code not in DTYPE_TYPECODES:
            raise IndexedDatasetError(f"unknown dtype code {dtype_code}; accepted: {sorted(DTYPE_TYPECODES)}")
        self.bin_file = bin_file
        self.idx_file = idx_file
        self.dtype_code = dtype_code
        self.typecode = DTYPE_TYPECODES[dtype_code]
        self.sequence_lengths = array("i")
        self.document_indices = array("q", [0])
        self._stream: BinaryIO = open(bin_file, "wb")  # noqa: SIM115 (closed by finalize)

    def add_document(self, tokens: Sequence[int]) -> None:
        """Append one document made of one sequence."""
        self._stream.write(_little_endian(array(self.typecode, tokens)))
        self.sequence_lengths.append(len(tokens))
        self.document_indices.append(len(self.sequence_lengths))

    def flush(self) -> None:
        self._stream.flush()

    def finalize(self) -> None:
        """Close the data file and write the index; both are fsynced."""
        _fsync_close(self._stream)
        write_index(self.idx_file, self.dtype_code, self.sequence_lengths, self.document_indices)

    def abort(self) -> None:
        if not self._stream.closed:
            self._stream.close()


def sequence_pointers(lengths: Sequence[int], itemsize: int) -> array[int]:
    pointers = array("q")
    offset = 0
    for length in lengths:
        pointers.append(offset)
        offset += length * itemsize
    return pointers


def write_index(path: str, dtype_code: int, lengths: array[int], document_indices: array[int]) -> None:
    pointers = sequence_pointers(lengths, _itemsize(dtype_code))
    with open(path, "wb") as stream:
        stream.write(_FIXED_HEADER.pack(INDEX_HEADER, INDEX_VERSION, dtype_code,
                                        len(lengths), len(document_indices)))
        stream.write(_little_endian(array("i", lengths)))
        stream.write(_little_endian(pointers))
        stream.write(_little_endian(array("q", document_indices)))
        stream.flush()
        os.fsync(stream.fileno())


def write_dataset(prefix_bin: str, prefix_idx: str, documents: Iterable[Sequence[int]],
                  dtype_code: int) -> int:
    """Write ``documents`` (one sequence each); return the number of tokens."""
    writer = IndexedDatasetWriter(prefix_bin, prefix_idx, dtype_code)
    total = 0
    try:
        for doc in documents:
            writer.add_document(doc)
            total += len(doc)
    except BaseException:
        writer.abort()
        raise
    writer.finalize()
    return total


@dataclass(frozen=True)
class IndexedDataset:
    """A validated .bin/.idx pair, read fully into memory (small datasets)."""

    prefix: str
    dtype_code: int
    sequence_lengths: array[int]
    sequence_pointers: array[int]
    document_indices: array[int]
    tokens: array[int]

    def __len__(self) -> int:
        return len(self.sequence_lengths)

    def __getitem__(self, index: int) -> array[int]:
        start = self.sequence_pointers[index] // self.tokens.itemsize
        return self.tokens[start:start + self.sequence_lengths[index]]

    @property
    def num_tokens(self) -> int:
        return len(self.tokens)


def read_index(path: str) -> tuple[int, array[int], array[int], array[int]]:
    """(dtype code, sequence lengths, pointers, document indices) of an .idx file."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as exc:
        raise IndexedDatasetError(f"cannot read index {path}: {exc.strerror or exc}") from None
    if len(data) < _FIXED_HEADER.size:
        raise IndexedDatasetError(f"{path} is {len(data)} bytes, shorter than the 34-byte index header")
    magic, version, code, count, doc_count = _FIXED_HEADER.unpack_from(data)
    if magic != INDEX_HEADER:
        raise IndexedDatasetError(f"{path} does not start with {INDEX_HEADER!r} (found {magic!r}); "
                                  "not a Megatron MMIDIDX index")
    if version != INDEX_VERSION:
        raise IndexedDatasetError(f"{path} has index version {version}; only version 1 exists")
    if code not in DTYPE_TYPECODES:
        raise IndexedDatasetError(f"{path} has unknown dtype code {code}; accepted: {sorted(DTYPE_TYPECODES)}")
    expected = _FIXED_HEADER.size + 4 * count + 8 * count + 8 * doc_count
    if len(data) != expected:
        raise IndexedDatasetError(f"{path} is {len(data)} bytes; its header ({count} sequences, "
                                  f"{doc_count} document indices) needs exactly {expected}")
    offset = _FIXED_HEADER.size
    lengths = _from_little_endian("i", data[offset:offset + 4 * count])
    offset += 4 * count
    pointers = _from_little_endian("q", data[offset:offset + 8 * count])
    offset += 8 * count
    docs = _from_little_endian("q", data[offset:offset + 8 * doc_count])
    if doc_count == 0 or docs[0] != 0 or docs[-1] != count or any(a > b for a, b in pairwise(docs)):
        raise IndexedDatasetError(f"{path}: document indices must rise from 0 to the sequence count {count}")
    if pointers != sequence_pointers(lengths, _itemsize(code)):
        raise IndexedDatasetError(f"{path}: sequence pointers do not match the sequence lengths")
    return code, lengths, pointers, docs


def read_dataset(prefix: str) -> IndexedDataset:
    """Read and validate ``prefix.idx`` and ``prefix.bin``."""
    code, lengths, pointers, docs = read_index(idx_path(prefix))
    itemsize = _itemsize(code)
    total = sum(lengths)
    try:
        with open(bin_path(prefix), "rb") as stream:
            data = stream.read()
    except OSError as exc:
        raise IndexedDatasetError(f"cannot read data file {bin_path(prefix)}: {exc.strerror or exc}") from None
    if len(data) != total * itemsize:
        raise IndexedDatasetError(f"{bin_path(prefix)} is {len(data)} bytes; its index describes "
                                  f"{total} tokens of {itemsize} bytes = {total * itemsize}")
    return IndexedDataset(prefix, code, lengths, pointers, docs, _from_little_endian(DTYPE_TYPECODES[code], data))


def check_sizes(prefix: str) -> str | None:
    """Cheap consistency check (header and file sizes only): None if fine, else why not."""
    try:
        code, lengths, _, _ = read_index(idx_path(prefix))
    except IndexedDatasetError as exc:
        return str(exc)
    try:
        size = os.path.getsize(bin_path(prefix))
    except OSError as exc:
        return f"cannot stat {bin_path(prefix)}: {exc.strerror or exc}"
    want = sum(lengths) * _itemsize(code)
    if size != want:
        return f"{bin_path(prefix)} is {size} bytes; its index needs {want}"
    return None
