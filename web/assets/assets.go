// Package assets holds the built dashboard and wasm module inside every kv0
// binary, so that `kv0 serve` and `kv0 demo --serve` show the dashboard
// wherever the binary was copied, however it was built: a plain `go build`
// and `go install github.com/kv0/kv0/native/cmd/kv0@VERSION` need neither
// node nor npm, since the built files are committed here (dist/), gzip -9
// compressed.
//
// dist/ is what `make assets` packs from the outputs of `make web wasm`:
// the dashboard's page and the files it loads (their names carry esbuild's
// content hash, so browsers may keep them for good) and the wasm module's
// kv0.mjs, kv0.wasm and wasm_exec.js. TestAssetsMatchBuild rebuilds them
// from the sources and fails on any difference, so a commit whose web/,
// wasm/ or core/ sources changed what they build must also carry the new
// dist/ (docs/architecture.md, "The dashboard inside the binary", tells what
// that costs the repository and why it is done so).
package assets

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
)

//go:embed dist
var dist embed.FS

// Manifest is dist/assets.json: what `make assets` packed and with which
// Go toolchain (the wasm module's bytes depend on it).
type Manifest struct {
	// Go is the Go version that built the wasm module (runtime.Version()).
	Go string `json:"go"`
	// Immutable lists the files (web/NAME) whose names carry their
	// content's hash: the files the page loads.
	Immutable []string `json:"immutable"`
}

var (
	manifestOnce sync.Once
	manifest     Manifest
	manifestErr  error
)

func readManifest() (Manifest, error) {
	manifestOnce.Do(func() {
		b, err := dist.ReadFile("dist/assets.json")
		if err == nil {
			err = json.Unmarshal(b, &manifest)
		}
		if err != nil {
			manifestErr = errors.New("web/assets: dist/assets.json: " + err.Error())
		}
	})
	return manifest, manifestErr
}

// BuiltWith is the Go version that built the embedded wasm module.
func BuiltWith() string {
	m, _ := readManifest()
	return m.Go
}

// Web is the dashboard: index.html and the files it loads.
func Web() *Dir { return &Dir{prefix: "web"} }

// Wasm is the wasm module: kv0.mjs, kv0.wasm and wasm_exec.js.
func Wasm() *Dir { return &Dir{prefix: "wasm"} }

// Dir is one folder of the embedded assets as an fs.FS. Each file is kept
// gzip-compressed: Open("NAME.gz") reads the stored bytes, which a server
// sends as they are to a client that accepts gzip, and Open("NAME") the
// decompressed file, for the others.
type Dir struct {
	prefix string // "web" or "wasm"
}

var _ fs.FS = (*Dir)(nil)

// Open opens NAME (decompressed), NAME.gz (as stored) or "." (the folder,
// listing the decompressed names).
func (d *Dir) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return d.openDir()
	}
	stored := d.prefix + "/" + name + ".gz"
	if gz, err := dist.ReadFile("dist/" + stored); err == nil {
		raw, err := gunzip(gz)
		if err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
		return &file{name: path.Base(name), data: raw}, nil
	}
	if base, ok := strings.CutSuffix(name, ".gz"); ok {
		if gz, err := dist.ReadFile("dist/" + d.prefix + "/" + base + ".gz"); err == nil {
			return &file{name: path.Base(name), data: gz}, nil
		}
	}
	return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
}

// Static is what a server needs besides the bytes of the file Open(name)
// returns: its ETag (one per stored file and form, so the gzip and the
// plain form of a file differ), and whether the file never changes under
// its name (its name carries its content's hash) and may be kept by
// browsers for good. ok is false for a name Open does not serve.
func (d *Dir) Static(name string) (etag string, immutable bool, ok bool) {
	base, gzipped := strings.CutSuffix(name, ".gz")
	if _, err := fs.Stat(dist, "dist/"+d.prefix+"/"+base+".gz"); err != nil || !fs.ValidPath(name) {
		return "", false, false
	}
	sum := storedHash(d.prefix + "/" + base)
	etag = `"` + sum + `"`
	if gzipped {
		etag = `"` + sum + `-gzip"`
	}
	m, err := readManifest()
	return etag, err == nil && slices.Contains(m.Immutable, d.prefix+"/"+base), true
}

var (
	hashMu sync.Mutex
	hashes = map[string]string{}
)

// storedHash is the hex SHA-256 of the stored bytes of key (its first 20
// digits), computed once.
func storedHash(key string) string {
	hashMu.Lock()
	defer hashMu.Unlock()
	if h, ok := hashes[key]; ok {
		return h
	}
	gz, _ := dist.ReadFile("dist/" + key + ".gz")
	s := sha256.Sum256(gz)
	h := hex.EncodeToString(s[:10])
	hashes[key] = h
	return h
}

func gunzip(gz []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// openDir lists the folder: the decompressed names, sorted.
func (d *Dir) openDir() (fs.File, error) {
	ents, err := dist.ReadDir("dist/" + d.prefix)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: ".", Err: err}
	}
	out := &dirFile{}
	for _, e := range ents {
		if base, ok := strings.CutSuffix(e.Name(), ".gz"); ok && !e.IsDir() {
			gz, err := dist.ReadFile("dist/" + d.prefix + "/" + e.Name())
			if err != nil {
				return nil, err
			}
			out.ents = append(out.ents, entry{name: base, size: int64(rawSize(gz))})
		}
	}
	return out, nil
}

// rawSize is the decompressed size gzip's trailer records (ISIZE: the size
// modulo 2^32, exact for files under 4 GiB).
func rawSize(gz []byte) uint32 {
	if len(gz) < 4 {
		return 0
	}
	t := gz[len(gz)-4:]
	return uint32(t[0]) | uint32(t[1])<<8 | uint32(t[2])<<16 | uint32(t[3])<<24
}

// file is an open file: its bytes in memory, readable and seekable.
type file struct {
	name string
	data []byte
	off  int64
}

func (f *file) Stat() (fs.FileInfo, error) { return entry{name: f.name, size: int64(len(f.data))}, nil }
func (f *file) Close() error               { return nil }

func (f *file) Read(p []byte) (int, error) {
	if f.off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[f.off:])
	f.off += int64(n)
	return n, nil
}

func (f *file) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += int64(len(f.data))
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	f.off = offset
	return offset, nil
}

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// entry is the FileInfo and DirEntry of a file, or of the folder (dir).
type entry struct {
	name string
	size int64
	dir  bool
}

func (e entry) Name() string { return e.name }
func (e entry) Size() int64  { return e.size }
func (e entry) Mode() fs.FileMode {
	if e.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (e entry) ModTime() time.Time            { return time.Time{} }
func (e entry) IsDir() bool                   { return e.dir }
func (e entry) Sys() any                      { return nil }
func (e entry) Type() fs.FileMode             { return e.Mode().Type() }
func (e entry) Info() (fs.FileInfo, error)    { return e, nil }
func (e entry) String() string                { return fs.FormatFileInfo(e) }
func (d *dirFile) Stat() (fs.FileInfo, error) { return entry{name: ".", dir: true}, nil }
func (d *dirFile) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: ".", Err: fs.ErrInvalid}
}
func (d *dirFile) Close() error { return nil }
func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.ents[d.read:]
	if n > 0 && len(rest) > n {
		rest = rest[:n]
	}
	d.read += len(rest)
	out := make([]fs.DirEntry, len(rest))
	for i, e := range rest {
		out[i] = e
	}
	if n > 0 && len(out) == 0 {
		return nil, io.EOF
	}
	return out, nil
}

// dirFile is the open folder.
type dirFile struct {
	ents []entry
	read int
}
