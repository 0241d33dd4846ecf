-- +goose Up
-- How a function scales (domain.ScaleConfig): 0 takes the defaults (no
-- instance kept warm, the platform's max_instances, the runtime's
-- concurrency). The invoke proxy reads them with the route.
ALTER TABLE functions
    ADD COLUMN min_instances int NOT NULL DEFAULT 0,
    ADD COLUMN max_instances int NOT NULL DEFAULT 0,
    ADD COLUMN concurrency   int NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE functions DROP COLUMN min_instances, DROP COLUMN max_instances, DROP COLUMN concurrency;
