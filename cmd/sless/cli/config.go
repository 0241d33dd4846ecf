package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// DefaultURL is the API's address when nothing says otherwise: where `sless
// dev` listens.
const DefaultURL = "http://localhost:8080"

// Environment variables of the client commands.
const (
	EnvURL   = "SLESS_URL"
	EnvToken = "SLESS_TOKEN"
)

// Config is what `sless login` keeps: the API's URL and the token.
type Config struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// ConfigPath is the file `sless login` writes: $XDG_CONFIG_HOME/sless/config.yaml,
// or ~/.config/sless/config.yaml.
func ConfigPath() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home directory for the config file (set XDG_CONFIG_HOME): %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "sless", "config.yaml"), nil
}

// loadConfig reads the config file; a missing one is an empty Config.
func loadConfig() (Config, string, error) {
	p, err := ConfigPath()
	if err != nil {
		return Config{}, "", err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, p, nil
	}
	if err != nil {
		return Config{}, p, err
	}
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return Config{}, p, fmt.Errorf("%s: %v (fix it, or run sless login again)", p, err)
	}
	return c, p, nil
}

// saveConfig writes c to the config file, readable by its owner only.
func saveConfig(c Config) (string, error) {
	p, err := ConfigPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", err
	}
	data, err := yaml.Marshal(c)
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".config-*.yaml")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return p, os.Rename(tmp.Name(), p)
}
