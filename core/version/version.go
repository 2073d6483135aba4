// Package version holds kv0's release version: the one number that
// `kv0 version`, the Python package (kv0.__version__ and its wheel), the
// npm package @kv0/wasm and the manifests kv0 writes (their writer_version)
// carry. The Makefile reads it from this file (make python, make wasm,
// make dist), so a release changes this line, and README.md's Install
// examples, which native/cmd/kv0's TestReadmeInstallVersion holds to it.
package version

// Version is kv0's release version (semantic versioning, no "v").
const Version = "0.2.0"
