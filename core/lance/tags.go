package lance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/kv0/kv0/core/store"
)

// Tag is a named version: the file _refs/tags/{Name}.json.
type Tag struct {
	Name    string
	Version uint64
}

// tagContents is the JSON lance writes for a tag (camelCase keys; lance 8
// adds createdAt, updatedAt and metadata, which kv0 ignores).
type tagContents struct {
	Branch       *string `json:"branch"`
	Version      *uint64 `json:"version"`
	ManifestSize int64   `json:"manifestSize"`
}

// readTag reads and parses one tag file.
func readTag(ctx context.Context, st store.Store, k keys, name string) (Tag, error) {
	if !validTagName(name) {
		return Tag{}, fmt.Errorf("%w: tag %q of %s (not a valid tag name)", ErrNotFound, name, k)
	}
	key := k.tag(name)
	b, err := readSmall(ctx, st, key)
	if errors.Is(err, store.ErrNotFound) {
		return Tag{}, fmt.Errorf("%w: tag %q of %s (no %s)", ErrNotFound, name, k, key)
	}
	if err != nil {
		return Tag{}, err
	}
	return parseTag(key, name, b)
}

func parseTag(key, name string, b []byte) (Tag, error) {
	var tc tagContents
	if err := json.Unmarshal(b, &tc); err != nil {
		return Tag{}, corruptErr(key, -1, "tag JSON: %v", err)
	}
	if tc.Version == nil || *tc.Version == 0 {
		return Tag{}, corruptErr(key, -1, "tag has no version")
	}
	if tc.Branch != nil && *tc.Branch != "" && *tc.Branch != "main" {
		return Tag{}, fmt.Errorf("%w: %s: tag %q points into branch %q (kv0 reads the main branch only)",
			ErrUnsupportedFeature, key, name, *tc.Branch)
	}
	return Tag{Name: name, Version: *tc.Version}, nil
}

// ListTags returns the tags of the dataset at root, sorted by name. It costs
// one List plus one read per tag, issued concurrently. On a store that
// cannot list it returns an error matching store.ErrNotSupported.
func ListTags(ctx context.Context, st store.Store, root string) ([]Tag, error) {
	k := keys{root: root}
	objs, err := st.List(ctx, store.ListOptions{Prefix: k.tags()})
	if err != nil {
		return nil, fmt.Errorf("lance: listing tags of %q: %w", root, err)
	}
	var names []string
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Key, k.tags())
		if strings.Contains(rel, "/") {
			continue
		}
		if name, ok := strings.CutSuffix(path.Base(o.Key), ".json"); ok && validTagName(name) {
			names = append(names, name)
		}
	}
	tags := make([]Tag, len(names))
	err = parallel(ctx, len(names), func(ctx context.Context, i int) error {
		key := k.tag(names[i])
		b, err := readSmall(ctx, st, key)
		if err != nil {
			return err
		}
		tags[i], err = parseTag(key, names[i], b)
		return err
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(tags, func(i, j int) bool { return tags[i].Name < tags[j].Name })
	return tags, nil
}
