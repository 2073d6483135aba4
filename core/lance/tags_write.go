package lance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kv0/kv0/core/store"
)

// ErrTagExists means CreateTag found a tag of that name. Match it with
// errors.Is.
var ErrTagExists = errors.New("lance: tag already exists")

// tagFile is the JSON lance 8 writes for a tag.
type tagFile struct {
	Branch       *string           `json:"branch"`
	Version      uint64            `json:"version"`
	CreatedAt    string            `json:"createdAt"`
	UpdatedAt    string            `json:"updatedAt"`
	ManifestSize int64             `json:"manifestSize"`
	Metadata     map[string]string `json:"metadata"`
}

// CreateTag names version (0: d's version) with a tag, written create-only
// as _refs/tags/{name}.json in lance's format. A tagged version is never
// removed by CleanupOldVersions and can be opened with OpenOptions.Tag. It
// fails with ErrTagExists when the tag exists and ErrNotFound when the
// version does not.
func (d *Dataset) CreateTag(ctx context.Context, name string, version uint64) error {
	if !validTagName(name) {
		return fmt.Errorf("lance: %q is not a valid tag name (letters, digits, '.', '-', '_')", name)
	}
	if version == 0 {
		version = d.Version()
	}
	mf, err := readVersion(ctx, d.st, d.k, version)
	if err != nil {
		return err
	}
	now := time.Now().UTC().Format(time.RFC3339Nano)
	b, err := json.MarshalIndent(tagFile{Version: version, CreatedAt: now, UpdatedAt: now, ManifestSize: mf.size, Metadata: map[string]string{}}, "", "  ")
	if err != nil {
		return err
	}
	err = d.st.PutIfAbsent(ctx, d.k.tag(name), b)
	if errors.Is(err, store.ErrExists) {
		return fmt.Errorf("%w: %q in %s", ErrTagExists, name, d.k)
	}
	return err
}

// DeleteTag removes a tag; ErrNotFound when there is none.
func (d *Dataset) DeleteTag(ctx context.Context, name string) error {
	if _, err := readTag(ctx, d.st, d.k, name); err != nil {
		return err
	}
	return d.st.Delete(ctx, d.k.tag(name))
}

// ListTags returns the tags of d's dataset (see the package function).
func (d *Dataset) ListTags(ctx context.Context) ([]Tag, error) {
	return ListTags(ctx, d.st, d.k.root)
}
