//go:build unix

package fsstore_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/fsstore"
)

// specialFiles makes a FIFO, a Unix socket and (when the process may) a
// character device in dir, and returns their names.
func specialFiles(t *testing.T, dir string) []string {
	t.Helper()
	names := []string{"fifo", "sock"}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	// The device of /dev/null (1, 3): needs the right to make devices.
	if err := syscall.Mknod(filepath.Join(dir, "dev"), syscall.S_IFCHR|0o644, 1<<8|3); err == nil {
		names = append(names, "dev")
	} else {
		t.Logf("no device file (%v): FIFO and socket only", err)
	}
	return names
}

// promptly runs f, failing the test when it has not returned within 5 s
// (reading a FIFO without a writer blocks forever).
func promptly(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still blocked after 5s", what)
		return nil
	}
}

// TestSpecialFilesNotRead: a FIFO, a socket or a device inside the folder
// holds no object: ReadAt, Stat and List answer at once (a FIFO's open no
// longer waits for a writer, holding an OS thread), ReadAt and Stat with
// store.ErrNotFound, List without them; FS() refuses them with
// fs.ErrNotExist. Confined or not.
func TestSpecialFilesNotRead(t *testing.T) {
	ctx := context.Background()
	for _, confined := range []bool{false, true} {
		dir := t.TempDir()
		names := specialFiles(t, dir)
		if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
		open := fsstore.OpenExisting
		if confined {
			open = fsstore.OpenConfined
		}
		st, err := open(dir)
		if err != nil {
			t.Fatal(err)
		}
		fsys := st.FS()
		for _, name := range names {
			what := name
			if confined {
				what += " (confined)"
			}
			p := make([]byte, 1)
			if err := promptly(t, "ReadAt "+what, func() error { return st.ReadAt(ctx, name, p, 0) }); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("ReadAt(%s) = %v, want ErrNotFound", what, err)
			}
			if err := promptly(t, "ReadAt of empty p "+what, func() error { return st.ReadAt(ctx, name, nil, 0) }); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("ReadAt(%s, nothing) = %v, want ErrNotFound", what, err)
			}
			if err := promptly(t, "Stat "+what, func() error { _, err := st.Stat(ctx, name); return err }); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Stat(%s) = %v, want ErrNotFound", what, err)
			}
			if err := promptly(t, "List under "+what, func() error {
				got, err := st.List(ctx, store.ListOptions{Prefix: name + "/"})
				if err == nil && len(got) > 0 {
					t.Errorf("List(%s/) = %v", what, got)
				}
				return err
			}); err != nil {
				t.Errorf("List(%s/) = %v", what, err)
			}
			if err := promptly(t, "FS Open "+what, func() error {
				f, err := fsys.Open(name)
				if err == nil {
					f.Close()
				}
				return err
			}); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("FS().Open(%s) = %v, want ErrNotExist", what, err)
			}
			if _, err := fs.Stat(fsys, name); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("fs.Stat(FS(), %s) = %v, want ErrNotExist", what, err)
			}
		}
		got, err := st.List(ctx, store.ListOptions{})
		if err != nil || len(got) != 1 || got[0].Key != "plain" {
			t.Errorf("List = %v, %v; want plain only", got, err)
		}
		p := make([]byte, 4)
		if err := st.ReadAt(ctx, "plain", p, 0); err != nil || string(p) != "data" {
			t.Errorf("ReadAt(plain) = %v, %q", err, p)
		}
		b, err := fs.ReadFile(fsys, "plain")
		if err != nil || string(b) != "data" {
			t.Errorf("FS() plain: %v, %q", err, b)
		}
		if entries, err := fs.ReadDir(fsys, "."); err != nil || len(entries) != len(names)+1 {
			t.Errorf("FS() ReadDir(.) = %d entries, %v", len(entries), err)
		}
	}
}

// TestFSConfined: FS() of a confined store never follows a symbolic link
// out of the folder (a link to a file or a folder outside is not there),
// while links that stay inside, folders and files are served.
func TestFSConfined(t *testing.T) {
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "passwd"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sub", "index.html"), []byte("<p>in</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"p": filepath.Join(outside, "passwd"), "d": outside,
		"rel": "../" + filepath.Base(outside) + "/passwd", "in": "sub/index.html", "sub/up": "../sub/index.html"} {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := fsstore.OpenConfined(root)
	if err != nil {
		t.Fatal(err)
	}
	fsys := st.FS()
	for _, name := range []string{"p", "rel", "d/passwd", "d"} {
		if f, err := fsys.Open(name); !errors.Is(err, fs.ErrNotExist) {
			var b []byte
			if err == nil {
				b, _ = io.ReadAll(f)
				f.Close()
			}
			t.Errorf("Open(%s) = %v (%q), want ErrNotExist", name, err, b)
		}
		if _, err := fs.Stat(fsys, name); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat(%s) = %v, want ErrNotExist", name, err)
		}
	}
	for _, name := range []string{"in", "sub/up", "sub/index.html"} {
		if b, err := fs.ReadFile(fsys, name); err != nil || string(b) != "<p>in</p>" {
			t.Errorf("ReadFile(%s) = %q, %v", name, b, err)
		}
	}
	if fi, err := fs.Stat(fsys, "sub"); err != nil || !fi.IsDir() {
		t.Errorf("Stat(sub) = %v, %v", fi, err)
	}
	for _, name := range []string{"../x", "/etc/passwd", "sub/../in", ""} {
		if _, err := fsys.Open(name); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Open(%q) = %v, want ErrInvalid", name, err)
		}
	}
}
