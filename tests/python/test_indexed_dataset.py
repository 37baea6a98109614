"""Megatron indexed dataset (.bin/.idx): the writer checked by an independent
reader written here from the format (Megatron-LM
megatron/core/datasets/indexed_dataset.py, _IndexWriter), plus the byte tokenizer."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from primus_runner.dataprep import indexed_dataset as idx
from primus_runner.dataprep import tokenizer


def independent_read(prefix: str) -> dict:
    """Read a .bin/.idx pair with struct only, straight from the format:
    9-byte magic, <Q version, <B dtype code, <Q sequence count, <Q document
    count, <i lengths, <q pointers, <q document indices; tokens little-endian."""
    raw = Path(prefix + ".idx").read_bytes()
    magic = raw[:9]
    version, = struct.unpack_from("<Q", raw, 9)
    code, = struct.unpack_from("<B", raw, 17)
    seqs, = struct.unpack_from("<Q", raw, 18)
    docs, = struct.unpack_from("<Q", raw, 26)
    off = 34
    lengths = list(struct.unpack_from(f"<{seqs}i", raw, off))
    off += 4 * seqs
    pointers = list(struct.unpack_from(f"<{seqs}q", raw, off))
    off += 8 * seqs
    doc_idx = list(struct.unpack_from(f"<{docs}q", raw, off))
    off += 8 * docs
    fmt = {8: "H", 4: "i"}[code]
    data = Path(prefix + ".bin").read_bytes()
    sequences = [list(struct.unpack_from(f"<{n}{fmt}", data, p)) for n, p in zip(lengths, pointers, strict=True)]
    return {"magic": magic, "version": version, "code": code, "lengths": lengths, "pointers": pointers,
            "doc_idx": doc_idx, "trailing": len(raw) - off, "bin_size": len(data), "sequences": sequences}


def write(tmp_path: Path, docs: list[list[int]], code: int) -> str:
    prefix = str(tmp_path / "ds")
    idx.write_dataset(prefix + ".bin", prefix + ".idx", docs, code)
    return prefix


def test_uint16_dataset_matches_the_format_byte_for_byte(tmp_path: Path) -> None:
    prefix = write(tmp_path, [[1, 2, 3], [4], [5, 65535]], 8)
    got = independent_read(prefix)
    assert got["magic"] == b"MMIDIDX\x00\x00"
    assert got["version"] == 1
    assert got["code"] == 8
    assert got["lengths"] == [3, 1, 2]
    assert got["pointers"] == [0, 6, 8]
    assert got["doc_idx"] == [0, 1, 2, 3]
    assert got["trailing"] == 0
    assert got["sequences"] == [[1, 2, 3], [4], [5, 65535]]
    assert Path(prefix + ".bin").read_bytes() == bytes([1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 255, 255])
    assert Path(prefix + ".idx").stat().st_size == 34 + 3 * 4 + 3 * 8 + 4 * 8


def test_int32_dataset_for_a_large_vocabulary(tmp_path: Path) -> None:
    assert idx.dtype_code_for_vocab(65499) == 8
    assert idx.dtype_code_for_vocab(65500) == 4
    prefix = write(tmp_path, [[70000, 0], [123456]], idx.dtype_code_for_vocab(200000))
    got = independent_read(prefix)
    assert got["code"] == 4
    assert got["pointers"] == [0, 8]
    assert got["sequences"] == [[70000, 0], [123456]]


def test_own_reader_round_trip(tmp_path: Path) -> None:
    prefix = write(tmp_path, [[9, 8], [7, 6, 5]], 8)
    ds = idx.read_dataset(prefix)
    assert len(ds) == 2
    assert list(ds[1]) == [7, 6, 5]
    assert list(ds.tokens) == [9, 8, 7, 6, 5]
    assert list(ds.document_indices) == [0, 1, 2]
    assert idx.check_sizes(prefix) is None


def test_reader_rejects_a_bad_magic(tmp_path: Path) -> None:
    prefix = write(tmp_path, [[1]], 8)
    raw = bytearray(Path(prefix + ".idx").read_bytes())
    raw[0:1] = b"X"
    Path(prefix + ".idx").write_bytes(bytes(raw))
    with pytest.raises(idx.IndexedDatasetError, match="not a Megatron MMIDIDX index"):
        idx.read_dataset(prefix)


def test_reader_rejects_a_truncated_index_and_a_short_bin(tmp_path: Path) -> None:
    prefix = write(tmp_path, [[1, 2, 3], [4]], 8)
    data = Path(prefix + ".bin").read_bytes()
    Path(prefix + ".bin").write_bytes(data[:-2])
    with pytest.raises(idx.IndexedDatasetError, match=r"is 6 bytes; its index describes 4 tokens of 2 bytes = 8"):
        idx.read_dataset(prefix)
    assert "its index needs 8" in (idx.check_sizes(prefix) or "")
    raw = Path(prefix + ".idx").read_bytes()
    Path(prefix + ".idx").write_bytes(raw[:-8])
    with pytest.raises(idx.IndexedDatasetError, match="needs exactly"):
        idx.read_index(prefix + ".idx")


def test_byte_tokenizer_documents_and_ids() -> None:
    corpus = "Hello\n\n  \nworld é\r\n\r\nend\n".encode()
    docs = list(tokenizer.split_documents(corpus))
    assert docs == [b"Hello", "world é".encode(), b"end"]
    assert list(tokenizer.encode_document(docs[1])) == [119, 111, 114, 108, 100, 32, 195, 169, 256]
    assert tokenizer.VOCAB_SIZE == 257
    assert tokenizer.decode([72, 105, 256]) == "Hi\n\n"
    with pytest.raises(ValueError, match="outside the byte vocabulary"):
        tokenizer.decode([300])


def test_bundled_corpus_is_small_text() -> None:
    from primus_runner.dataprep import BUNDLED_CORPUS

    data = BUNDLED_CORPUS.read_bytes()
    assert 4_000 < len(data) < 64_000
    assert len(list(tokenizer.split_documents(data))) >= 20
    data.decode("utf-8")
