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

// runSecrets implements `sless secrets rotate-kek`, a new key-encryption
// key in the key file with every namespace's data key re-wrapped under it
// while the servers that follow the file keep serving, and `sless secrets
// rewrap`, which re-wraps every data key under the first key of
// SLESS_SECRETS_KEY: the middle step of a rotation by restarts, for
// servers given their keys inline (a Kubernetes Secret).
func runSecrets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("secrets", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sless secrets [flags] rotate-kek|rewrap")
		fmt.Fprintln(stderr, "  rotate-kek: write a new key-encryption key to the key file and re-wrap every namespace's data key under it, online")
		fmt.Fprintln(stderr, "  rewrap:     re-wrap every namespace's data key under the first key of "+secrets.EnvKey+" (keys inline: NEW,OLD)")
		fs.PrintDefaults()
	}
	c := bindConfig(fs)
	keyFile := fs.String("key-file", "", "the key file to rotate (default: "+secrets.EnvKey+" when it names a file, else <data-dir>/"+secrets.DevKeyFile+")")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (pos[0] != "rotate-kek" && pos[0] != "rewrap") {
		fs.Usage()
		return flag.ErrHelp
	}
	if pos[0] == "rewrap" {
		return rewrap(ctx, c, stdout, stderr)
	}
	path := *keyFile
	if path == "" {
		path = c.path(secrets.DevKeyFile)
		if v := strings.TrimSpace(os.Getenv(secrets.EnvKey)); v != "" {
			if _, err := os.Stat(v); err != nil {
				return fmt.Errorf("%s holds keys, not a key file: rotate inline keys by restarts (NEW,OLD everywhere, then sless secrets rewrap, then NEW alone), or give --key-file", secrets.EnvKey)
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

// rewrap re-wraps every namespace's data key under the first key of
// SLESS_SECRETS_KEY, opening them with any of its keys. With keys inline, a
// rotation is three steps: every server restarted with NEW,OLD (they open
// with both and wrap new data keys under NEW), `sless secrets rewrap` with
// NEW,OLD, every server restarted with NEW alone.
func rewrap(ctx context.Context, c *config, stdout, stderr io.Writer) error {
	keys, err := secrets.KeyringFromEnv(os.Getenv, "")
	if err != nil {
		return err
	}
	db, err := openDatabase(ctx, c, false, stderr)
	if err != nil {
		return err
	}
	defer db.Close(ctx)
	n, err := secrets.NewVault(db.Pool, keys).RotateKEK(ctx, keys)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d namespace data key(s) re-wrapped under %s; every data key is now wrapped by it: restart the servers with that key alone, and destroy the others\n", n, keys.ID())
	return nil
}
