package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/runtimes/runtimestest"
)

// debianPsycopg2 is where Debian's python3-psycopg2 package (.ci/run installs
// it) keeps the driver, built for the CPython 3.11 ABI.
const debianPsycopg2 = "/usr/lib/python3/dist-packages/psycopg2"

// tableReader is the prototype users' function (SPEC §8): psycopg2 against a
// PostgreSQL given by env_vars, returning a table's rows.
const tableReader = `import os

import psycopg2


def handle(event):
    conn = psycopg2.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"],
                            user=os.environ["PGUSER"], password=os.environ.get("PGPASSWORD", ""),
                            dbname=os.environ["PGDATABASE"])
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT name, qty FROM stock ORDER BY name")
            return [{"name": name, "qty": qty} for name, qty in cur.fetchall()]
    finally:
        conn.close()
`

// tableReaderDir writes the function's folder: table_reader.py as
// handler.py, and psycopg2 vendored as a local package (the Debian package's
// files, built into a wheel by pip during the build) named in
// requirements.txt, so the build installs it with no network. It says why
// not when the machine cannot give psycopg2 (never under CI=true).
func tableReaderDir(t *testing.T, dir string) {
	t.Helper()
	why := ""
	if _, err := os.Stat(debianPsycopg2); err != nil {
		why = "Debian's python3-psycopg2 is not installed (apt-get install python3-psycopg2; .ci/run does)"
	} else if v, err := exec.Command("python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output(); err != nil || strings.TrimSpace(string(v)) != "3.11" {
		why = "the machine's python3 is not 3.11, the ABI of Debian's psycopg2: " + strings.TrimSpace(string(v))
	}
	if why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	files := runtimestest.Prefixed("libs/psycopg2", runtimestest.PyPackage("psycopg2", ""))
	err := filepath.WalkDir(debianPsycopg2, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, "__pycache__") {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(debianPsycopg2, path)
		files["libs/psycopg2/psycopg2/"+filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	files["handler.py"] = tableReader
	files["requirements.txt"] = "# psycopg2 vendored in the zip: no package index needed\n--no-index\n./libs/psycopg2\n"
	runtimestest.WriteFiles(t, dir, files)
}

// stockTable creates the table the function reads in the database at url.
func stockTable(t *testing.T, url string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `CREATE TABLE stock (name text PRIMARY KEY, qty int);
		INSERT INTO stock VALUES ('apples', 3), ('pears', 5)`); err != nil {
		t.Fatal(err)
	}
}

// pgEnv returns the --env flags that point libpq at the database at url.
func pgEnv(t *testing.T, url string) []string {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	host := cfg.Host
	if strings.HasPrefix(host, "/") {
		t.Fatalf("the test database is on a socket (%s): the function needs TCP", host)
	}
	return []string{"--env", "PGHOST=" + host, "--env", "PGPORT=" + strconv.Itoa(int(cfg.Port)), "--env", "PGUSER=" + cfg.User,
		"--env", "PGPASSWORD=" + cfg.Password, "--env", "PGDATABASE=" + cfg.Database}
}
