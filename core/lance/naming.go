package lance

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/kv0/kv0/core/store"
)

// Dataset folder layout (keys relative to the dataset root):
//
//	_versions/{N}.manifest                    V1 manifest name (decimal, unpadded)
//	_versions/{u64max-N, 20 digits}.manifest  V2 manifest name (newest sorts first)
//	_versions/latest_version_hint.json        {"version":N}, a hint only
//	_transactions/{read_version}-{uuid}.txn   bare Transaction protobuf
//	_deletions/{frag}-{read_version}-{id}.{arrow|bin}
//	_refs/tags/{name}.json                    {"version":N, ...}
//	data/{name}.lance                         data files
const (
	versionsDir     = "_versions"
	transactionsDir = "_transactions"
	deletionsDir    = "_deletions"
	tagsDir         = "_refs/tags"
	dataDir         = "data"
	hintFile        = "latest_version_hint.json"
	manifestExt     = ".manifest"
	v2NameLen       = 20 + len(manifestExt) // 29
)

// Naming is a manifest naming scheme.
type Naming int

const (
	// NamingV1 names manifests "{version}.manifest".
	NamingV1 Naming = 1
	// NamingV2 names manifests "{u64max - version, 20 digits}.manifest", so
	// that a sorted listing yields the newest version first.
	NamingV2 Naming = 2
)

func (n Naming) String() string {
	switch n {
	case NamingV1:
		return "V1"
	case NamingV2:
		return "V2"
	}
	return fmt.Sprintf("Naming(%d)", int(n))
}

// manifestName returns the file name (within _versions/) of version v.
func manifestName(v uint64, n Naming) string {
	if n == NamingV2 {
		return fmt.Sprintf("%020d%s", math.MaxUint64-v, manifestExt)
	}
	return strconv.FormatUint(v, 10) + manifestExt
}

// parseManifestName returns the version and scheme of a manifest file name
// (the last path element). Anything else (the hint, staging files such as
// "5.manifest-{uuid}" or ".tmp_…", detached "d{N}.manifest") gives ok=false.
func parseManifestName(name string) (v uint64, n Naming, ok bool) {
	stem, found := strings.CutSuffix(name, manifestExt)
	if !found || stem == "" {
		return 0, 0, false
	}
	for i := 0; i < len(stem); i++ {
		if stem[i] < '0' || stem[i] > '9' {
			return 0, 0, false
		}
	}
	u, err := strconv.ParseUint(stem, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	if len(name) == v2NameLen {
		if u == math.MaxUint64 { // would be version 0
			return 0, 0, false
		}
		return math.MaxUint64 - u, NamingV2, true
	}
	if u == 0 || (len(stem) > 1 && stem[0] == '0') {
		return 0, 0, false
	}
	return u, NamingV1, true
}

// keys builds store keys under a dataset root, and carries the cache of
// opened data files that every Dataset derived from one Open shares.
type keys struct {
	root  string
	files *FileCache
}

// newKeys returns the keys of root with files as its cache (a new one of
// DefaultFileCacheEntries when nil).
func newKeys(root string, files *FileCache) keys {
	if files == nil {
		files = NewFileCache(DefaultFileCacheEntries)
	}
	return keys{root: root, files: files}
}

// String names the dataset in messages: `dataset "ROOT"`, or "the
// dataset" when it sits at the store's root (the caller knows where that
// is and names the location itself).
func (k keys) String() string {
	if k.root == "" {
		return "the dataset"
	}
	return fmt.Sprintf("dataset %q", k.root)
}

func (k keys) versions() string { return store.Join(k.root, versionsDir) + "/" }
func (k keys) manifest(v uint64, n Naming) string {
	return store.Join(k.root, versionsDir, manifestName(v, n))
}
func (k keys) hint() string             { return store.Join(k.root, versionsDir, hintFile) }
func (k keys) tags() string             { return store.Join(k.root, tagsDir) + "/" }
func (k keys) tag(name string) string   { return store.Join(k.root, tagsDir, name+".json") }
func (k keys) txn(file string) string   { return store.Join(k.root, transactionsDir, file) }
func (k keys) data(path string) string  { return store.Join(k.root, dataDir, path) }
func (k keys) deletion(f string) string { return store.Join(k.root, deletionsDir, f) }

// validTagName reports whether name is a tag name Lance accepts: letters,
// digits (any script), '.', '-', '_'; not starting or ending with '.', no "..", not
// ending with ".lock".
func validTagName(name string) bool {
	if name == "" || name[0] == '.' || name[len(name)-1] == '.' ||
		strings.Contains(name, "..") || strings.HasSuffix(name, ".lock") {
		return false
	}
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '.' && r != '-' && r != '_' {
			return false
		}
	}
	return true
}
