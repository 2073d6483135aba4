//go:build ignore

// Command genoneofs writes oneofs.go (see package genoneofs) in each
// sub-directory of the current directory that holds .pb.go files, and
// removes it from those whose package has no oneof wrappers. `go generate`
// runs it in core/internal/lancepb:
//
//	go run ./internal/genoneofs/main.go
package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kv0/kv0/core/internal/lancepb/internal/genoneofs"
)

func main() {
	if err := run("."); err != nil {
		fmt.Fprintln(os.Stderr, "genoneofs:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if m, _ := filepath.Glob(filepath.Join(dir, "*.pb.go")); len(m) == 0 {
			continue
		}
		p, err := genoneofs.Parse(os.DirFS(dir))
		if err != nil {
			return fmt.Errorf("%s: %v", dir, err)
		}
		out := genoneofs.Generate(p)
		path := filepath.Join(dir, genoneofs.FileName)
		old, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		switch {
		case out == nil && err == nil:
			if err := os.Remove(path); err != nil {
				return err
			}
		case out != nil && !bytes.Equal(old, out):
			if err := os.WriteFile(path, out, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
