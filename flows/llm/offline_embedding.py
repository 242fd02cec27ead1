"""The built-in offline embedder ``ergon/offline-embedding``: deterministic word-overlap vectors.

With no embedding model configured, every embedding lands here, so the embedding activities, the
document index and the tests run with no key and no network. It is not a language model: it
maps a text to a bag of its words and adjacent word pairs, hashed into a fixed number of
dimensions ("feature hashing"), so texts that share words point the same way and texts that
share none are near orthogonal. It knows nothing of synonyms ("car" and "automobile" are far).

The vector of a text:

1. the text is NFKC-normalised and case-folded, split into words (runs of letters and digits),
   and a short list of English function words (``the``, ``of``, ``is``…) is dropped, so that two
   texts are not near only because both are English;
2. each word (weight 1) and each pair of adjacent remaining words (weight 0.5) is a feature;
   a feature seen ``n`` times counts ``weight · √n`` (repetition helps, with diminishing returns);
3. a feature's BLAKE2b digest picks its dimension and its sign (the sign keeps colliding features
   from always adding up);
4. the vector is scaled to length 1 (a text with no words gives the zero vector).

Only additions, multiplications, divisions and square roots are used — operations IEEE 754
rounds exactly — in a fixed order, so a text has the same vector, bit for bit, on every machine.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter

MODEL = "ergon/offline-embedding"
DIMENSIONS = 512

__all__ = ["DIMENSIONS", "MODEL", "embed_offline", "features"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
#: Function words that say nothing of what a text is about.
STOPWORDS = frozenset(
    "a an and are as at be been but by for from has have in into is it its of on or that the their "
    "this to was were will with".split()
)
UNIGRAM_WEIGHT = 1.0
BIGRAM_WEIGHT = 0.5


def features(text: str) -> dict[str, float]:
    """The weighted features of ``text``: its words and adjacent word pairs (``a b``)."""
    words = [w for w in _WORD.findall(unicodedata.normalize("NFKC", text).casefold()) if w not in STOPWORDS]
    counts = Counter(words)
    pairs = Counter(f"{a} {b}" for a, b in zip(words, words[1:], strict=False))
    out = {w: UNIGRAM_WEIGHT * math.sqrt(n) for w, n in counts.items()}
    out.update({p: BIGRAM_WEIGHT * math.sqrt(n) for p, n in pairs.items()})
    return out


def _slot(feature: str, dimensions: int) -> tuple[int, float]:
    digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest[:4], "big") % dimensions, (1.0 if digest[4] & 1 else -1.0)


def embed_offline(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """The unit vector of ``text`` (see the module docstring); the zero vector when it has no words."""
    vector = [0.0] * dimensions
    for feature, weight in sorted(features(text).items()):  # sorted: one summation order everywhere
        index, sign = _slot(feature, dimensions)
        vector[index] += sign * weight
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm > 0 else vector
