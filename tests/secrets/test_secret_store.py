"""The encrypted secret store on a real SQLite store: sealing, name binding, wrong keys, rotation,
key sources and their permission check, references."""

from __future__ import annotations

import os
import stat

import pytest

from flows import secrets
from flows.secrets.keys import SecretKeyError, generate_key
from flows.store import secrets as secret_store

VALUE = "sk-live-7f3a9c1e-plaintext-marker"


def test_set_then_reveal_and_no_plaintext_in_the_database_file(keyed, database_bytes):
    info = secrets.set_secret("OPENAI_API_KEY", VALUE)
    assert info.name == "OPENAI_API_KEY" and info.key_id == "k1"
    assert secrets.reveal("OPENAI_API_KEY") == VALUE
    row = secret_store.get_secret("OPENAI_API_KEY")
    assert VALUE.encode() not in row.ciphertext and row.ciphertext.startswith(b"E1")
    raw = database_bytes()
    assert b"OPENAI_API_KEY" in raw, "the name is stored in clear (it is what `list` shows)"
    assert VALUE.encode() not in raw and VALUE.encode("utf-16-le") not in raw


def test_same_value_twice_gives_different_ciphertexts(keyed):
    secrets.set_secret("a", VALUE)
    first = secret_store.get_secret("a").ciphertext
    secrets.set_secret("a", VALUE)
    assert secret_store.get_secret("a").ciphertext != first  # fresh nonce per seal
    assert secrets.reveal("a") == VALUE


def test_a_ciphertext_copied_to_another_name_does_not_open(keyed):
    secrets.set_secret("prod_token", VALUE)
    secrets.set_secret("test_token", "harmless")
    stolen = secret_store.get_secret("prod_token")
    secret_store.put_secret("test_token", stolen.ciphertext, stolen.key_id)
    with pytest.raises(secrets.SecretDecryptError, match="secret `test_token` does not decrypt with key `k1`") as info:
        secrets.reveal("test_token")
    assert VALUE not in str(info.value)


def test_a_flipped_bit_fails_loudly(keyed):
    secrets.set_secret("tok", VALUE)
    row = secret_store.get_secret("tok")
    tampered = bytearray(row.ciphertext)
    tampered[-1] ^= 1
    secret_store.put_secret("tok", bytes(tampered), row.key_id)
    with pytest.raises(secrets.SecretDecryptError, match="altered"):
        secrets.reveal("tok")


def test_the_wrong_key_under_the_same_id_fails_loudly_never_garbage(keyed, monkeypatch):
    secrets.set_secret("tok", VALUE)
    monkeypatch.setenv("ERGON_SECRET_KEYS", f"k1:{generate_key()}")
    with pytest.raises(secrets.SecretDecryptError) as info:
        secrets.reveal("tok")
    message = str(info.value)
    assert "secret `tok` does not decrypt with key `k1` from ERGON_SECRET_KEYS" in message
    assert "ergon secrets set tok" in message and VALUE not in message


def test_a_missing_key_id_is_named(keyed, monkeypatch):
    secrets.set_secret("tok", VALUE)
    monkeypatch.setenv("ERGON_SECRET_KEYS", f"k9:{generate_key()}")
    with pytest.raises(secrets.SecretDecryptError,
                       match=r"sealed with key `k1`, which is not among the configured keys \(k9 from ERGON_SECRET_KEYS\)"):
        secrets.reveal("tok")


def test_rotation_reseals_under_the_active_key_and_old_keys_can_go(keyed, monkeypatch):
    secrets.set_secret("a", "value-a")
    secrets.set_secret("b", "value-b")
    new = f"k2:{generate_key()}"
    monkeypatch.setenv("ERGON_SECRET_KEYS", f"{new},{keyed}")
    assert secrets.reveal("a") == "value-a", "old keys still open what they sealed"
    secrets.set_secret("c", "value-c")  # new secrets use the active (first) key
    active, names = secrets.rotate()
    assert active == "k2" and names == ["a", "b"]
    assert {s.name: s.key_id for s in secrets.list_secrets()} == {"a": "k2", "b": "k2", "c": "k2"}
    assert secrets.rotate() == ("k2", [])
    monkeypatch.setenv("ERGON_SECRET_KEYS", new)  # the old key is retired
    assert [secrets.reveal(n) for n in "abc"] == ["value-a", "value-b", "value-c"]


def test_rotation_with_a_missing_key_changes_nothing(keyed, monkeypatch):
    secrets.set_secret("a", "value-a")
    before = secret_store.get_secret("a").ciphertext
    monkeypatch.setenv("ERGON_SECRET_KEYS", f"k2:{generate_key()}")
    with pytest.raises(secrets.SecretDecryptError, match="sealed with key `k1`"):
        secrets.rotate()
    assert secret_store.get_secret("a").ciphertext == before


def test_list_and_delete_show_no_values(keyed):
    secrets.set_secret("one", VALUE)
    [info] = secrets.list_secrets()
    assert VALUE not in repr(info) and info.key_id == "k1" and info.created_at
    assert secrets.delete_secret("one") is True and secrets.delete_secret("one") is False
    with pytest.raises(secrets.SecretNotFound):
        secrets.reveal("one")


def test_not_found_is_a_lookup_error_with_the_command_to_fix_it(keyed):
    with pytest.raises(LookupError, match=r"secret `missing` is not set; store it with `ergon secrets set missing`"):
        secrets.reveal("missing")


def test_resolve_reference(keyed, monkeypatch):
    secrets.set_secret("tok", VALUE)
    monkeypatch.setenv("SOME_VAR", "from-env")
    monkeypatch.delenv("UNSET_VAR", raising=False)
    assert secrets.resolve_reference("secret:tok") == VALUE
    assert secrets.resolve_reference("env:SOME_VAR") == "from-env"
    assert secrets.resolve_reference("plain text") == "plain text"
    with pytest.raises(secrets.ReferenceNotSet, match="UNSET_VAR"):
        secrets.resolve_reference("env:UNSET_VAR")
    with pytest.raises(secrets.SecretNotFound):
        secrets.resolve_reference("secret:nope")


def test_bad_names_and_empty_values_are_refused(keyed):
    with pytest.raises(ValueError, match="not valid"):
        secrets.set_secret("has space", VALUE)
    with pytest.raises(ValueError, match="empty"):
        secrets.set_secret("ok", "")


@pytest.mark.parametrize("value, message", [
    ("k1", "each key is `ID:BASE64`"),
    ("k1:c2hvcnQ=", "is not 32 bytes of base64"),
    (f"k1:{'A' * 43}=,k1:{'A' * 43}=", "appears twice"),
])
def test_malformed_key_variables_are_explained(store, monkeypatch, value, message):
    monkeypatch.setenv("ERGON_SECRET_KEYS", value)
    with pytest.raises(SecretKeyError, match=message):
        secrets.set_secret("x", VALUE)


def _key_file(tmp_path, mode: int):
    path = tmp_path / "keys"
    path.write_text(f"# keys\nk3:{generate_key()}\nk2:{generate_key()}\n")
    path.chmod(mode)
    return path


def test_a_key_file_readable_by_others_is_refused(store, tmp_path, monkeypatch):
    monkeypatch.delenv("ERGON_SECRET_KEYS", raising=False)
    path = _key_file(tmp_path, 0o644)
    monkeypatch.setenv("ERGON_SECRET_KEY_FILE", str(path))
    with pytest.raises(SecretKeyError, match=rf"mode 0644: it must be readable by its owner only; run `chmod 600 {path}`"):
        secrets.set_secret("x", VALUE)
    assert secret_store.get_secret("x") is None
    path.chmod(0o600)
    assert secrets.set_secret("x", VALUE).key_id == "k3"  # first entry = active
    assert secrets.reveal("x") == VALUE


def test_a_named_key_file_that_does_not_exist_is_an_error(store, tmp_path, monkeypatch):
    monkeypatch.delenv("ERGON_SECRET_KEYS", raising=False)
    monkeypatch.setenv("ERGON_SECRET_KEY_FILE", str(tmp_path / "nowhere"))
    with pytest.raises(SecretKeyError, match="does not exist"):
        secrets.set_secret("x", VALUE)


def test_default_key_file_is_made_0600_on_first_set_only(store, tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("ERGON_HOME", str(home))
    monkeypatch.delenv("ERGON_SECRET_KEYS", raising=False)
    monkeypatch.delenv("ERGON_SECRET_KEY_FILE", raising=False)
    with pytest.raises(SecretKeyError, match="no secret key: set ERGON_SECRET_KEYS or ERGON_SECRET_KEY_FILE"):
        secrets.rotate()
    assert not (home / "secret.key").exists(), "reading never creates a key"
    secrets.set_secret("x", VALUE)
    key_file = home / "secret.key"
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert VALUE not in key_file.read_text()
    assert secrets.reveal("x") == VALUE
    # rotate --new-key puts a fresh key first in the file and re-seals under it
    active, names = secrets.rotate(new_key=True)
    assert active == "k2" and names == ["x"]
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    assert [line.split(":")[0] for line in key_file.read_text().splitlines() if not line.startswith("#")] == ["k2", "k1"]
    assert secrets.reveal("x") == VALUE


def test_new_key_is_refused_when_keys_come_from_the_environment(keyed):
    with pytest.raises(SecretKeyError, match="put a new `ID:BASE64` entry first there"):
        secrets.rotate(new_key=True)


def test_a_row_that_is_not_an_envelope_is_reported_not_decoded(keyed):
    secret_store.put_secret("raw", b"plain bytes someone wrote", "k1")
    with pytest.raises(secrets.SecretDecryptError, match="secret `raw` is not readable"):
        secrets.reveal("raw")


def test_the_state_folder_and_the_store_are_owner_only(tmp_path, monkeypatch):
    import stat

    from flows.settings import ergon_home, prefect_home
    from flows.store import db

    monkeypatch.setenv("ERGON_HOME", str(tmp_path / "fresh-home"))
    monkeypatch.delenv("ERGON_DATABASE_URL", raising=False)
    home = ergon_home()
    url = f"sqlite:///{home / 'ergon.db'}"
    db.init_db(url)
    try:
        for path in (home, prefect_home(), home / "ergon.db"):
            mode = stat.S_IMODE(path.stat().st_mode)
            assert mode & 0o077 == 0, f"{path.name} is {oct(mode)}: readable by others"
    finally:
        db.dispose_all()
