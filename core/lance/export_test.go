package lance

import "github.com/kv0/kv0/core/store"

// WriteTestVersions writes versions 1..n of a small synthetic dataset (V2
// names, a current hint) for examples.
func WriteTestVersions(st store.Store, root string, n uint64) error {
	return writeVersions(st, root, n, NamingV2, n)
}
