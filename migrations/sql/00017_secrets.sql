-- +goose Up
-- The read model of namespace secrets (domain.Secret): names and versions
-- only. Their values are sealed in secret_values (package secrets), never
-- here nor in the events.
CREATE TABLE secrets (
    namespace  text        NOT NULL,
    name       text        NOT NULL,
    version    int         NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (namespace, name)
);

-- The secrets a function uses (domain.FunctionConfig.Secrets, SecretFiles,
-- SecretVersions); secret_names is every secret it uses, for "used by".
ALTER TABLE functions
    ADD COLUMN secrets         jsonb,
    ADD COLUMN secret_files    text[] NOT NULL DEFAULT '{}',
    ADD COLUMN secret_versions jsonb,
    ADD COLUMN secret_names    text[] NOT NULL DEFAULT '{}';
CREATE INDEX functions_secret_names ON functions USING gin (secret_names);

-- +goose Down
DROP INDEX functions_secret_names;
ALTER TABLE functions DROP COLUMN secrets, DROP COLUMN secret_files, DROP COLUMN secret_versions, DROP COLUMN secret_names;
DROP TABLE secrets;
