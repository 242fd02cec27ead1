"""The offline embedder: the same vector on every machine, and texts that share words are near."""

from __future__ import annotations

import hashlib
import math
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from flows.llm.offline_embedding import DIMENSIONS, embed_offline, features

CONTRACT = "The supplier delivers the goods within 30 days of each order."


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))  # both are unit vectors


def test_a_text_has_one_vector_bit_for_bit_pinned_here():
    # The digest of the exact float64 bytes: a change of tokenisation, hashing, weights or
    # summation order — or a machine computing it differently — fails here.
    vector = embed_offline(CONTRACT)
    digest = hashlib.sha256(struct.pack(f"<{len(vector)}d", *vector)).hexdigest()
    assert digest == "4744e7f4d4da892301972467fdb44b97ac49c8471474c84168b42487e76a52e1"
    assert len(vector) == DIMENSIONS and embed_offline(CONTRACT) == vector


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=300))
def test_every_vector_is_a_unit_vector_or_zero(text):
    vector = embed_offline(text)
    norm = math.sqrt(sum(v * v for v in vector))
    assert len(vector) == DIMENSIONS
    assert math.isclose(norm, 1.0, rel_tol=1e-12) or (norm == 0 and not features(text))


def test_the_more_words_texts_share_the_nearer_they_are():
    query = embed_offline("When are the goods delivered after an order?")
    delivery = embed_offline(CONTRACT)
    payment = embed_offline("Invoices for an order are paid within 60 days; late payment carries interest.")
    lunch = embed_offline("Our cafeteria serves vegetarian lunch on Fridays.")
    assert cosine(query, delivery) > 0.25
    assert cosine(query, delivery) > cosine(query, payment) > cosine(query, lunch)
    assert abs(cosine(query, lunch)) < 0.1


def test_case_unicode_forms_and_function_words_do_not_matter():
    assert embed_offline("The Straße of GOODS") == embed_offline("strasse goods")  # casefold, "the"/"of" dropped
    assert embed_offline("ﬁnal ｒｅｐｏｒｔ") == embed_offline("final report")  # NFKC: ligature, full width
    assert features("goods delivered goods") == {"goods": 2 ** 0.5, "delivered": 1.0,
                                                "goods delivered": 0.5, "delivered goods": 0.5}


def test_word_order_counts_through_the_word_pairs():
    same_words = cosine(embed_offline("dog bites man"), embed_offline("man bites dog"))
    assert 0.5 < same_words < 0.99
    assert cosine(embed_offline("dog bites man"), embed_offline("dog bites man")) > 0.999999


def test_a_text_with_no_words_is_the_zero_vector():
    assert embed_offline("") == [0.0] * DIMENSIONS
    assert embed_offline("the of and — !!") == [0.0] * DIMENSIONS
