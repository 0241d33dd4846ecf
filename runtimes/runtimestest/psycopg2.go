package runtimestest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// DebianPsycopg2 is where Debian's python3-psycopg2 package (.ci/run installs
// it) keeps the PostgreSQL driver, built for the CPython 3.11 ABI.
const DebianPsycopg2 = "/usr/lib/python3/dist-packages/psycopg2"

// TableReader is the prototype users' function (SPEC §8): psycopg2 against a
// PostgreSQL given by the PG* variables, returning the rows of table stock.
const TableReader = `import os

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

// TableReaderFiles returns the files of table_reader.py as a function:
// handler.py, and psycopg2 vendored as a package folder of the zip (the
// Debian package's files, built into a wheel by pip during the build) named
// in requirements.txt, so the build installs it with no network. When the
// machine cannot give psycopg2 it says why: the test fails under CI=true
// and is skipped otherwise.
func TableReaderFiles(tb testing.TB) map[string]string {
	tb.Helper()
	why := ""
	if _, err := os.Stat(DebianPsycopg2); err != nil {
		why = "Debian's python3-psycopg2 is not installed (apt-get install python3-psycopg2; .ci/run does)"
	} else if v, err := exec.Command("python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])").Output(); err != nil || strings.TrimSpace(string(v)) != "3.11" {
		why = "the machine's python3 is not 3.11, the ABI of Debian's psycopg2: " + strings.TrimSpace(string(v))
	}
	if why != "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal(why)
		}
		tb.Skip(why)
	}
	files := Prefixed("libs/psycopg2", PyPackage("psycopg2", ""))
	err := filepath.WalkDir(DebianPsycopg2, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.Contains(path, "__pycache__") {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(DebianPsycopg2, path)
		files["libs/psycopg2/psycopg2/"+filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	files["handler.py"] = TableReader
	files["requirements.txt"] = "# psycopg2 vendored in the zip: no package index needed\n--no-index\n./libs/psycopg2\n"
	return files
}
