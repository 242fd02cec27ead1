"""The sealed form of a secret: AES-256-GCM in a small versioned envelope.

Layout (bytes)::

    b"E1" | len(key_id) (1 byte) | key_id (ASCII) | nonce (12 random bytes) | ciphertext + 16-byte tag

* ``E1`` names the format, so a later format can be told apart from this one.
* The key id travels with the ciphertext: after a rotation, values sealed under an older key
  still open as long as that key is configured, and an error can name the key that is missing.
* The additional authenticated data (AAD) is the format tag, the key id and the secret's
  **name**. A ciphertext copied into another secret's row, or a header edited to point at
  another key, fails authentication instead of decrypting to something plausible.

AES-GCM (not Fernet) because it takes AAD; the format is this module's ~40 lines.
"""

from __future__ import annotations

from flows.errors import ErgonError

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

MAGIC = b"E1"
NONCE_BYTES = 12
KEY_BYTES = 32


class EnvelopeError(ErgonError, ValueError):
    """The bytes are not an envelope, or they do not authenticate under the given key and name."""


def _aad(key_id: str, name: str) -> bytes:
    return MAGIC + b"\x00" + key_id.encode("ascii") + b"\x00secret:" + name.encode("utf-8")


def seal(plaintext: str, *, name: str, key_id: str, key: bytes) -> bytes:
    """Encrypt ``plaintext`` for the secret ``name`` under ``key`` (32 bytes) named ``key_id``."""
    kid = key_id.encode("ascii")
    if not 0 < len(kid) < 256:
        raise EnvelopeError("a key id must be 1 to 255 ASCII characters")
    nonce = os.urandom(NONCE_BYTES)  # random 96-bit nonces: safe far beyond any secret count here
    body = AESGCM(key).encrypt(nonce, plaintext.encode("utf-8"), _aad(key_id, name))
    return MAGIC + bytes([len(kid)]) + kid + nonce + body


def key_id_of(envelope: bytes) -> str:
    """The id of the key that sealed ``envelope`` (read from its header, not authenticated yet)."""
    envelope = bytes(envelope)
    if not envelope.startswith(MAGIC) or len(envelope) < len(MAGIC) + 1:
        raise EnvelopeError("not an Ergon secret envelope (unknown format)")
    size = envelope[len(MAGIC)]
    kid = envelope[len(MAGIC) + 1: len(MAGIC) + 1 + size]
    if len(kid) != size or len(envelope) < len(MAGIC) + 1 + size + NONCE_BYTES + 16:
        raise EnvelopeError("truncated secret envelope")
    return kid.decode("ascii", errors="replace")


def open_(envelope: bytes, *, name: str, key: bytes) -> str:
    """Decrypt ``envelope`` of the secret ``name``; :class:`EnvelopeError` if it does not authenticate."""
    envelope = bytes(envelope)
    key_id = key_id_of(envelope)
    start = len(MAGIC) + 1 + len(key_id.encode("ascii"))
    nonce, body = envelope[start: start + NONCE_BYTES], envelope[start + NONCE_BYTES:]
    try:
        return AESGCM(key).decrypt(nonce, body, _aad(key_id, name)).decode("utf-8")
    except InvalidTag:
        raise EnvelopeError("authentication failed") from None
