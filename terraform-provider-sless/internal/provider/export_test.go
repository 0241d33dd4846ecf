package provider

// ZipDir is zipDir for the acceptance tests: the zip's bytes.
func ZipDir(dir string) ([]byte, error) {
	c, err := zipDir(dir)
	return c.zip, err
}
