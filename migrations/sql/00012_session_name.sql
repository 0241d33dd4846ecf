-- +goose Up
-- The name a console session shows for its user (auth.Principal.Name: the
-- token's name, preferred_username or email claim), beside the namespace's
-- hash; '' when the token had none (the console shows the subject). It
-- authorises nothing. Sessions of before keep ''.
ALTER TABLE console_sessions ADD COLUMN name text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE console_sessions DROP COLUMN name;
