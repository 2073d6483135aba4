// Package location resolves the locations users type (local paths,
// memory://name, s3://bucket/prefix, http(s)://...) into a store.Store and
// the root key of the dataset or repository inside it.
//
//	/data/t.lance, ./t.lance   fsstore rooted at the folder, root ""
//	memory://name              a process-wide in-memory store, root ""
//	s3://bucket/prefix         s3store rooted at the prefix, root ""
//	http(s)://host/path        httpstore static mode (read-only), root ""
package location

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/fsstore"
	"github.com/kv0/kv0/native/s3store"
)

// Options configure Open. The zero value opens existing local folders and
// takes S3 settings from the environment.
type Options struct {
	// Create makes a missing local folder instead of failing with
	// store.ErrNotFound.
	Create bool
	// S3 are the options of s3:// locations; fields left zero are filled
	// from the environment (s3store.OptionsFromEnv) and then by the SDK.
	S3 s3store.Options
	// HTTP are the options of http(s):// locations.
	HTTP httpstore.Options
}

// Open resolves location into a store and the root key inside it.
func Open(ctx context.Context, location string, opts Options) (store.Store, string, error) {
	scheme, rest, isURI := splitScheme(location)
	if !isURI {
		return openLocal(location, opts)
	}
	switch scheme {
	case "memory":
		name := strings.Trim(rest, "/")
		if name == "" {
			return nil, "", fmt.Errorf("location %s: memory:// needs a name", location)
		}
		return Memory(name), "", nil
	case "s3":
		st, err := s3store.Open(ctx, location, s3store.OptionsFromEnv(opts.S3))
		if err != nil {
			return nil, "", fmt.Errorf("location %s: %w", location, err)
		}
		return st, "", nil
	case "http", "https":
		st, err := httpstore.OpenStatic(location, opts.HTTP)
		if err != nil {
			return nil, "", fmt.Errorf("location %s: %w", location, err)
		}
		return st, "", nil
	case "file":
		return openLocal(rest, opts)
	}
	return nil, "", fmt.Errorf("location %s: unsupported scheme %q (want a path, memory://, s3:// or http(s)://)", location, scheme)
}

// Canonical returns the one spelling of location that names the same
// dataset or repository from any working directory, for keys that must not
// depend on how a user typed it (the local WAL and snapshot directories):
//
//	./t.lance, /data/../data/t.lance, file:///data/t.lance   file:///data/t.lance (absolute, cleaned)
//	s3://bucket//prefix/                                     s3://bucket/prefix
//	memory://name/                                           memory://name
//	HTTPS://host/path/                                       https://host/path
//
// Schemes are lower-cased and trailing slashes dropped. Unknown schemes
// fail as Open does.
func Canonical(location string) (string, error) {
	scheme, rest, isURI := splitScheme(location)
	if !isURI || scheme == "file" {
		if isURI {
			location = rest
		}
		abs, err := filepath.Abs(location)
		if err != nil {
			return "", fmt.Errorf("location %s: %w", location, err)
		}
		return "file://" + filepath.ToSlash(abs), nil
	}
	switch scheme {
	case "memory":
		name := strings.Trim(rest, "/")
		if name == "" {
			return "", fmt.Errorf("location %s: memory:// needs a name", location)
		}
		return "memory://" + name, nil
	case "s3":
		bucket, prefix, err := s3store.ParseURI("s3://" + rest)
		if err != nil {
			return "", fmt.Errorf("location %s: %w", location, err)
		}
		if prefix == "" {
			return "s3://" + bucket, nil
		}
		return "s3://" + bucket + "/" + prefix, nil
	case "http", "https":
		return scheme + "://" + strings.TrimRight(rest, "/"), nil
	}
	return "", fmt.Errorf("location %s: unsupported scheme %q (want a path, memory://, s3:// or http(s)://)", location, scheme)
}

// LocalPath returns the path of a local location (a path or file://path)
// and false for any other.
func LocalPath(location string) (string, bool) {
	scheme, rest, isURI := splitScheme(location)
	switch {
	case !isURI:
		return location, true
	case scheme == "file":
		return rest, true
	}
	return "", false
}

// ReadOnly reports whether location can only be read (http(s)://).
func ReadOnly(location string) bool {
	scheme, _, isURI := splitScheme(location)
	return isURI && (scheme == "http" || scheme == "https")
}

// splitScheme recognizes "scheme://rest"; Windows drive letters and paths
// with a slash before "://" are not URIs.
func splitScheme(loc string) (scheme, rest string, ok bool) {
	i := strings.Index(loc, "://")
	if i <= 1 || strings.ContainsAny(loc[:i], `/\.`) {
		return "", "", false
	}
	return strings.ToLower(loc[:i]), loc[i+3:], true
}

func openLocal(path string, opts Options) (store.Store, string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, "", err
	}
	var st *fsstore.Store
	if opts.Create {
		st, err = fsstore.Open(abs)
	} else {
		st, err = fsstore.OpenExisting(abs)
	}
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, "", fmt.Errorf("%s: no such folder: %w", path, store.ErrNotFound)
		}
		return nil, "", err
	}
	return st, "", nil
}

var (
	memMu    sync.Mutex
	memories = map[string]*store.Memory{}
)

// Memory returns the process-wide in-memory store called name, creating it
// on first use. Every Open of memory://name returns the same store.
func Memory(name string) *store.Memory {
	memMu.Lock()
	defer memMu.Unlock()
	m, ok := memories[name]
	if !ok {
		m = store.NewMemory()
		memories[name] = m
	}
	return m
}

// ForgetMemory drops the in-memory store called name (tests use it).
func ForgetMemory(name string) {
	memMu.Lock()
	delete(memories, name)
	memMu.Unlock()
}
