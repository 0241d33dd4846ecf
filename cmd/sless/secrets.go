package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/slessio/sless/secrets"
)

// openVault returns the vault of secret values, keyed by SLESS_SECRETS_KEY;
// `sless dev` makes a key in its data dir when none is set. Without a key
// (`sless serve` with SLESS_SECRETS_KEY unset) it returns nil: secrets are
// off and their writes answer 503.
func openVault(c *config, dev bool, db *database, log *slog.Logger) (*secrets.Vault, error) {
	devDir := ""
	if dev {
		devDir = c.DataDir
	}
	keys, err := secrets.KeyringFromEnv(os.Getenv, devDir)
	if errors.Is(err, secrets.ErrNoKey) {
		log.Warn("secrets are off: set " + secrets.EnvKey + " (a key file, or the key as base64 of 32 bytes) to enable them")
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	log.Info("secrets are on", "key", keys.ID())
	return secrets.NewVault(db.Pool, keys), nil
}

// runSecrets implements `sless secrets rotate-kek`: a new key-encryption
// key in the key file, every namespace's data key re-wrapped under it
// while the servers that follow the file keep serving.
func runSecrets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("secrets", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sless secrets [flags] rotate-kek")
		fmt.Fprintln(stderr, "  rotate-kek: write a new key-encryption key to the key file and re-wrap every namespace's data key under it, online")
		fs.PrintDefaults()
	}
	c := bindConfig(fs)
	keyFile := fs.String("key-file", "", "the key file to rotate (default: "+secrets.EnvKey+" when it names a file, else <data-dir>/"+secrets.DevKeyFile+")")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "rotate-kek" {
		fs.Usage()
		return flag.ErrHelp
	}
	path := *keyFile
	if path == "" {
		path = c.path(secrets.DevKeyFile)
		if v := strings.TrimSpace(os.Getenv(secrets.EnvKey)); v != "" {
			if _, err := os.Stat(v); err != nil {
				return fmt.Errorf("%s holds the key itself, not a key file: an inline key cannot be rotated online; move it to a file (mode 0600), point %s at the file and restart, or give --key-file", secrets.EnvKey, secrets.EnvKey)
			}
			path = v
		}
	}
	db, err := openDatabase(ctx, c, false, stderr)
	if err != nil {
		return err
	}
	defer db.Close(ctx)
	r, err := secrets.RotateKeyFile(ctx, db.Pool, path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rotated the key-encryption key in %s: %s → %s; %d namespace data key(s) re-wrapped\n",
		path, strings.Join(r.Old, ", "), r.New, r.Rewrapped)
	fmt.Fprintln(stdout, "destroy every other copy of the old key (backups of the key file included): backups of the database made before now are then unreadable without it")
	return nil
}
