"""Retrieval beyond the evaluation grid: index binary codes, search them, hash your own images.

- :class:`HashIndex`: packed binary codes with exact Hamming top-k (ties by ascending id, the convention of
  :mod:`shc.metrics`), Hamming-ball lookups, multi-index hashing for large N, an approximate FAISS mode, and
  a checked file format (``save`` / ``load``);
- :func:`load_encoder` / :func:`encode_images`: a trained hashing network of a pipeline run, and the codes
  of a folder of image files (what ``shc encode`` runs);
- :func:`verify_provenance`: whether codes (an index's ``metadata["provenance"]``) were made by an encoder's
  exact weights (``shc search`` refuses them otherwise); :func:`arithmetic_note`: whether they were made in another
  arithmetic (device type, precision) than the encoder's (``shc search`` notes it).

Speed and memory: ``benchmarks/bench_retrieval.py`` (table in ``docs/retrieval.md``).
"""

from __future__ import annotations

from shc.retrieval.index import FORMAT_VERSION, HashIndex, RangeResult, pack_codes

__all__ = [
    "FORMAT_VERSION",
    "Encoder",
    "HashIndex",
    "RangeResult",
    "arithmetic_note",
    "encode_images",
    "find_images",
    "load_encoder",
    "pack_codes",
    "verify_provenance",
    "weights_digest",
    "write_encoder_record",
]


def __getattr__(name: str):  # the encoder half imports torch: only on demand
    if name in ("Encoder", "arithmetic_note", "encode_images", "find_images", "load_encoder", "verify_provenance", "weights_digest",
                "write_encoder_record"):
        from shc.retrieval import encoder

        return getattr(encoder, name)
    raise AttributeError(f"module 'shc.retrieval' has no attribute {name!r}")
