"""Training data for the embedded workload (what ``workload/train.py`` calls).

``training_tokens(data_cfg, workspace=..., node_rank=..., local_rank=...)``
returns ``(tokens, vocab_size)``: the token ids of the training split as an
``array.array`` (documents concatenated, each ending with the end-of-document
token) and the vocabulary size. Call it once per rank before building the model;
it needs no process group. Node rank 0 / local rank 0 tokenizes the corpus once
into Megatron's indexed format (or reuses complete data from an earlier run);
every other rank waits for it through markers on shared storage
(see :mod:`primus_runner.dataprep` for the protocol and failure handling).

``data_cfg`` is the workload config's ``data`` section; every key is optional:

=============================  ==================================================
key                            meaning
=============================  ==================================================
corpus                         UTF-8 text, paragraphs separated by blank lines
                               (default: the bundled corpus). Every rank reads it.
tokenizer                      ``byte`` (the only one; vocabulary 257)
eval_fraction                  share of documents held out for validation (0)
tokenized_data_path            output prefix; env TOKENIZED_DATA_PATH wins
tokenized_train_data_path      training prefix with a held-out split; env
                               TOKENIZED_TRAIN_DATA_PATH wins
tokenized_eval_data_path       validation prefix; env TOKENIZED_EVAL_DATA_PATH wins
train_data_path                existing prefix to train from, no preparation
                               (absent: PRIMUS_TOKENIZED_DATA_PATH)
vocab_size                     vocabulary of existing data (default max id + 1)
timeout_seconds                wait limit for ranks other than node 0 / local 0;
                               env PRIMUS_DATA_PREP_TIMEOUT_SECONDS wins (3600)
=============================  ==================================================
"""
from __future__ import annotations

from array import array
from collections.abc import Mapping
from typing import Any

from primus_runner import dataprep


def training_tokens(data_cfg: Mapping[str, Any], *, workspace: str, node_rank: int,
                    local_rank: int) -> tuple[array[int], int]:
    """(token ids of the training split, vocabulary size) for this rank."""
    return dataprep.training_tokens(data_cfg, workspace=workspace, node_rank=node_rank,
                                    local_rank=local_rank)
