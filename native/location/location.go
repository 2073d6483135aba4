// Package location resolves the locations users type (local paths,
// memory://name, s3://bucket/prefix, gs://bucket/prefix,
// az://container/prefix, http(s)://...) into a store.Store and the root key
// of the dataset or repository inside it.
//
//	/data/t.lance, ./t.lance   fsstore rooted at the folder, root ""
//	memory://name              a new in-memory store, private to the handle, root ""
//	s3://bucket/prefix         s3store rooted at the prefix, root ""
//	gs://bucket/prefix         gcsstore (Application Default Credentials, or
//	                           the emulator at $STORAGE_EMULATOR_HOST), root ""
//	az://container/prefix      azblobstore ($AZURE_STORAGE_CONNECTION_STRING,
//	                           or $AZURE_STORAGE_ACCOUNT with $AZURE_STORAGE_KEY
//	                           or azidentity's default chain), root ""
//	http(s)://host/path        httpstore static mode (read-only), root ""
//	kv0+signer://host:port/key httpstore signed mode (read-only) through the
//	                           "kv0 sign-server" at http://host:port, root "key"
//	kv0+signers://host/key     the same with the sign server at https://host
//
// A signed location reads what the sign server's repository holds under
// key ("" for the repository itself) with URLs it presigns, as the
// browser does; its bearer token comes from Options.SignerToken, else
// $KV0_SIGNER_TOKEN, else the first line of the file $KV0_SIGNER_TOKEN_FILE.
// With Options.Signer set, a location without a scheme is such a key.
package location

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/azblobstore"
	"github.com/kv0/kv0/native/fsstore"
	"github.com/kv0/kv0/native/gcsstore"
	"github.com/kv0/kv0/native/s3store"
)

// Options configure Open. The zero value opens existing local folders and
// takes S3 settings from the environment.
type Options struct {
	// Create makes a missing local folder instead of failing with
	// store.ErrNotFound.
	Create bool
	// Confine opens a local folder for reads that never follow a symbolic
	// link out of it (fsstore.OpenConfined): for servers reading keys
	// their requests name. It excludes Create.
	Confine bool
	// S3 are the options of s3:// locations; fields left zero are filled
	// from the environment (s3store.OptionsFromEnv) and then by the SDK.
	S3 s3store.Options
	// GCS are the options of gs:// locations; the endpoint defaults to
	// $STORAGE_EMULATOR_HOST (gcsstore.OptionsFromEnv).
	GCS gcsstore.Options
	// Azure are the options of az:// locations; credentials left zero come
	// from the environment (azblobstore.OptionsFromEnv).
	Azure azblobstore.Options
	// HTTP are the options of http(s):// and signed locations.
	HTTP httpstore.Options
	// Signer is the base URL of a sign server ("http://127.0.0.1:8787").
	// When set, a location without a scheme names a key in the sign
	// server's repository.
	Signer string
	// SignerToken is the sign server's bearer token (default
	// $KV0_SIGNER_TOKEN or the file $KV0_SIGNER_TOKEN_FILE).
	SignerToken string
}

// ErrNoToken means a signed location has no bearer token. Match it with
// errors.Is.
var ErrNoToken = errors.New("location: a signed location needs the sign server's token (--token-file FILE, $KV0_SIGNER_TOKEN or $KV0_SIGNER_TOKEN_FILE)")

// ReadOnly reports whether location can only be read: http(s):// and
// signed locations (and any location when opts.Signer is set).
func ReadOnly(location string, opts Options) bool {
	scheme, _, isURI := splitScheme(location)
	if !isURI {
		return opts.Signer != ""
	}
	switch scheme {
	case "http", "https", "kv0+signer", "kv0+signers":
		return true
	}
	return false
}

// ReadToken returns the token in file: its first line without surrounding
// white space.
func ReadToken(file string) (string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading the token file: %w", err)
	}
	token, _, _ := strings.Cut(strings.TrimSpace(string(raw)), "\n")
	token = strings.TrimSpace(token)
	if token == "" {
		return "", fmt.Errorf("token file %s is empty", file)
	}
	return token, nil
}

// Open resolves location into a store and the root key inside it.
func Open(ctx context.Context, location string, opts Options) (store.Store, string, error) {
	if strings.TrimSpace(location) == "" {
		// As a path it would be the current directory.
		return nil, "", fmt.Errorf("location %q is empty: give a folder, memory://NAME or a URI", location)
	}
	scheme, rest, isURI := splitScheme(location)
	if !isURI {
		if opts.Signer != "" {
			return openSigned(location, opts.Signer, location, opts)
		}
		return openLocal(location, opts)
	}
	switch scheme {
	case "memory":
		name := strings.Trim(rest, "/")
		if name == "" {
			return nil, "", fmt.Errorf("location %s: memory:// needs a name", location)
		}
		// Private to the handle that opens it (as the design has it): two
		// handles on memory://x do not share data, and it is gone with
		// its handle.
		return store.NewMemory(), "", nil
	case "s3":
		st, err := s3store.Open(ctx, location, s3store.OptionsFromEnv(opts.S3))
		if err != nil {
			return nil, "", fmt.Errorf("location %s: %w", location, err)
		}
		return st, "", nil
	case "gs":
		st, err := gcsstore.Open(ctx, location, gcsstore.OptionsFromEnv(opts.GCS))
		if err != nil {
			return nil, "", fmt.Errorf("location %s: %w", location, err)
		}
		return st, "", nil
	case "az":
		st, err := azblobstore.Open(ctx, location, opts.Azure)
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
	case "kv0+signer", "kv0+signers":
		host, key, _ := strings.Cut(rest, "/")
		if host == "" {
			return nil, "", fmt.Errorf("location %s: no sign server host", location)
		}
		base := "http://" + host
		if scheme == "kv0+signers" {
			base = "https://" + host
		}
		return openSigned(location, base, key, opts)
	}
	return nil, "", fmt.Errorf("location %s: unsupported scheme %q (want a path, memory://, s3://, gs://, az://, http(s):// or kv0+signer://)", location, scheme)
}

// openSigned opens key of the repository the sign server at base signs for.
func openSigned(location, base, key string, opts Options) (store.Store, string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
		return nil, "", fmt.Errorf("location %s: bad sign server URL %q", location, base)
	}
	key = strings.Trim(key, "/")
	if key == "." {
		key = ""
	}
	if key != "" {
		if err := store.ValidateKey(key); err != nil || strings.Contains("/"+key+"/", "/../") || strings.Contains("/"+key+"/", "/./") {
			return nil, "", fmt.Errorf("location %s: %q is not a clean key of the repository: %w", location, key, store.ErrInvalidKey)
		}
	}
	token := opts.SignerToken
	if token == "" {
		token = os.Getenv("KV0_SIGNER_TOKEN")
	}
	if token == "" {
		if f := os.Getenv("KV0_SIGNER_TOKEN_FILE"); f != "" {
			if token, err = ReadToken(f); err != nil {
				return nil, "", fmt.Errorf("location %s: %w", location, err)
			}
		}
	}
	if token == "" {
		return nil, "", fmt.Errorf("location %s: %w", location, ErrNoToken)
	}
	st, err := httpstore.OpenSigned(&httpstore.ServerSigner{URL: strings.TrimSuffix(base, "/"), Token: token, Transport: opts.HTTP.Transport}, opts.HTTP)
	if err != nil {
		return nil, "", fmt.Errorf("location %s: %w", location, err)
	}
	return st, key, nil
}

// Canonical returns the one spelling of location that names the same
// dataset or repository from any working directory, for keys that must not
// depend on how a user typed it (the local WAL and snapshot directories):
//
//	./t.lance, /data/../data/t.lance, file:///data/t.lance   file:///data/t.lance (absolute, cleaned)
//	s3://bucket//prefix/                                     s3://bucket/prefix
//	gs://bucket/prefix/, az://container//prefix              gs://bucket/prefix, az://container/prefix
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
	case "gs":
		bucket, prefix, err := gcsstore.ParseURI("gs://" + rest)
		if err != nil {
			return "", fmt.Errorf("location %s: %w", location, err)
		}
		return strings.TrimSuffix("gs://"+bucket+"/"+prefix, "/"), nil
	case "az":
		name, prefix, err := azblobstore.ParseURI("az://" + rest)
		if err != nil {
			return "", fmt.Errorf("location %s: %w", location, err)
		}
		return strings.TrimSuffix("az://"+name+"/"+prefix, "/"), nil
	case "http", "https", "kv0+signer", "kv0+signers":
		return scheme + "://" + strings.TrimRight(rest, "/"), nil
	}
	return "", fmt.Errorf("location %s: unsupported scheme %q (want a path, memory://, s3://, gs://, az:// or http(s)://)", location, scheme)
}

// RepoWALKey is the key (see native/wal) of the WAL that logs writes to
// the tracking repository at location: "repo:" and its canonical form
// (Canonical), so that every spelling of one repository, from any working
// directory and from the CLI or the Python package, finds the same WAL.
// Local folders keep the key of earlier versions ("repo:" and the absolute
// path), so their WALs still replay. memory:// has none ("").
func RepoWALKey(location string) (string, error) {
	c, err := Canonical(location)
	if err != nil {
		return "", err
	}
	switch {
	case strings.HasPrefix(c, "memory://"):
		return "", nil
	case strings.HasPrefix(c, "file://"):
		return "repo:" + filepath.FromSlash(strings.TrimPrefix(c, "file://")), nil
	}
	return "repo:" + c, nil
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
	switch {
	case opts.Confine:
		st, err = fsstore.OpenConfined(abs)
	case opts.Create:
		st, err = fsstore.Open(abs)
	default:
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
