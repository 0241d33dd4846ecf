-- +goose Up
-- Namespace secrets, sealed by package secrets (envelope encryption). The
-- events of a secret name it and its version only; its value lives here,
-- and only as AES-256-GCM ciphertext.
--
-- secret_keys: a namespace's one data key (DEK), wrapped by the operator's
-- key-encryption key kek_id (a fingerprint, never the key). Deleting a secret
-- replaces the row's key (a new key_id) and re-seals the namespace's other
-- values under it (crypto-shredding); the last secret gone, the row goes.
CREATE TABLE secret_keys (
    namespace  text        PRIMARY KEY,
    key_id     uuid        NOT NULL,
    kek_id     text        NOT NULL,
    wrapped    bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- secret_values: one row per secret version, sealed under the namespace's
-- key key_id; the ciphertext is bound to (namespace, name, version, key_id)
-- so that it opens in no other row.
CREATE TABLE secret_values (
    namespace  text        NOT NULL,
    name       text        NOT NULL,
    version    int         NOT NULL,
    key_id     uuid        NOT NULL,
    sealed     bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, name, version)
);

-- +goose Down
DROP TABLE secret_values;
DROP TABLE secret_keys;
