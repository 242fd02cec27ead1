"""Sealed secrets: the store keeps ciphertext only."""

from __future__ import annotations

from flows.store import db
from flows.store import secrets as secret_store


def test_secrets_keep_ciphertext_only(store):
    secret_store.put_secret("openai_api_key", b"S1\x02k1\x00\xffsealed", "k1")
    secret_store.put_secret("openai_api_key", b"S1\x02k2resealed", "k2")
    got = secret_store.get_secret("openai_api_key")
    assert (got.ciphertext, got.key_id) == (b"S1\x02k2resealed", "k2")
    assert got.updated_at >= got.created_at
    assert [s.name for s in secret_store.list_secrets()] == ["openai_api_key"]
    assert secret_store.delete_secret("openai_api_key") is True and secret_store.delete_secret("openai_api_key") is False
    with db.get_engine(store).connect() as conn:
        columns = [row[1] for row in conn.exec_driver_sql("PRAGMA table_info(secrets)")]
    assert "plaintext" not in columns and "value" not in columns
