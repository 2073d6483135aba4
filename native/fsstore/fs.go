package fsstore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// FS returns the store's folder as a read-only fs.FS (and fs.StatFS), for
// serving files that are not objects, such as kv0 serve's dashboard. Its
// files are opened as ReadAt opens objects: on a store from OpenConfined a
// symbolic link never leads out of the folder, and a file that is neither
// regular nor a folder (a FIFO, a socket, a device) is fs.ErrNotExist,
// never waited on.
func (s *Store) FS() fs.FS { return storeFS{s} }

type storeFS struct{ s *Store }

// name checks an fs.FS name and returns its path in the system's form
// ("" for the root).
func (f storeFS) name(op, name string) (string, error) {
	if !fs.ValidPath(name) || runtime.GOOS == "windows" && strings.ContainsAny(name, `\:`) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return "", nil
	}
	return filepath.FromSlash(name), nil
}

// fsErr is err as an fs.FS reports it: a refused special file or a link
// out of the folder is not there.
func fsErr(op, name string, err error) error {
	if errors.Is(err, errNotRegular) || escapes(err) {
		err = fs.ErrNotExist
	} else if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

func (f storeFS) Open(name string) (fs.File, error) {
	p, err := f.name("open", name)
	if err != nil {
		return nil, err
	}
	file, err := f.s.openName(p, true)
	if err != nil {
		return nil, fsErr("open", name, err)
	}
	return file, nil
}

func (f storeFS) Stat(name string) (fs.FileInfo, error) {
	p, err := f.name("stat", name)
	if err != nil {
		return nil, err
	}
	if p == "" {
		p = "."
	}
	var fi fs.FileInfo
	if f.s.dir != nil {
		fi, err = f.s.dir.Stat(p)
	} else {
		fi, err = os.Stat(filepath.Join(f.s.root, p))
	}
	if err != nil {
		return nil, fsErr("stat", name, err)
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, fsErr("stat", name, errNotRegular)
	}
	return fi, nil
}
