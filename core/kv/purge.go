package kv

import (
	"context"
	"errors"
	"fmt"
)

// Tag is a named version of the log.
type Tag struct {
	Name    string
	Version uint64
}

// TaggedLog is implemented by operation logs that keep tags (the Lance
// binding does). Purge uses it to find versions that cleanup will not
// remove.
type TaggedLog interface {
	OpLog
	// Tags lists the tags of the log.
	Tags(ctx context.Context) ([]Tag, error)
	// DeleteTag removes a tag.
	DeleteTag(ctx context.Context, name string) error
}

// ErrTagged means Purge found a tag on an older version that still holds a
// key deleted now; the error is a *TagError naming the tag. Purge with
// force deletes such tags instead. Match with errors.Is.
var ErrTagged = errors.New("kv: a tag keeps deleted data")

// TagError names a tag that keeps a deleted key reachable.
type TagError struct {
	Tag     string
	Version uint64
	Key     []byte // one of the deleted keys the tagged version holds
}

// Error implements error.
func (e *TagError) Error() string {
	return fmt.Sprintf("kv: tag %q (version %d) still holds key %q, deleted now; delete the tag or purge with force", e.Tag, e.Version, e.Key)
}

// Is reports whether target is ErrTagged.
func (e *TagError) Is(target error) bool { return target == ErrTagged }

// Purge removes deleted data from storage: it commits the buffer, rewrites
// the log as its live view (as CompactRange, with tombstones kept for
// TombstoneGrace) and removes every untagged version but the latest. Before
// that it checks each tag on an older version: when that version holds a
// put of a key that is deleted now, Purge fails with a *TagError naming
// the tag, or with force deletes the tag and goes on.
//
// What Purge does not reach: other machines' WALs and snapshots, and
// tombstones still within their grace period. Other handles lose time
// travel to the removed versions; their reads refresh and carry on.
func (db *DB) Purge(ctx context.Context, force bool) error {
	d := db.d
	if err := d.checkWritable(); err != nil {
		return err
	}
	d.flushMu.Lock()
	defer d.flushMu.Unlock()
	if err := d.flushLocked(ctx); err != nil {
		return err
	}
	if tl, ok := d.log.(TaggedLog); ok {
		latest, err := d.log.Latest(ctx)
		if err != nil {
			return ioErr("purge", err)
		}
		tags, err := tl.Tags(ctx)
		if err != nil {
			return ioErr("list tags", err)
		}
		for _, t := range tags {
			if t.Version >= latest {
				continue
			}
			key, err := d.deletedKeyAt(ctx, t.Version)
			if err != nil {
				return err
			}
			if key == nil {
				continue
			}
			if !force {
				return &TagError{Tag: t.Name, Version: t.Version, Key: key}
			}
			if err := tl.DeleteTag(ctx, t.Name); err != nil {
				return ioErr("delete tag", err)
			}
		}
	}
	if err := d.maybeCompact(ctx, true); err != nil {
		return err
	}
	if _, err := d.log.CleanupOldVersions(ctx, 0); err != nil {
		return ioErr("cleanup", err)
	}
	return nil
}

// deletedKeyAt returns a key that has a value at version and none in the
// handle's view now, or nil when there is none.
func (d *db) deletedKeyAt(ctx context.Context, version uint64) ([]byte, error) {
	old := newViewAlloc(d.opts.Blocks)
	defer old.release()
	// Threshold 0 keeps every value as a location: only keys matter here.
	err := d.log.ScanFragments(ctx, version, nil, func(batch []Row) error {
		for i := range batch {
			old.applyRow(&batch[i], version, 0)
		}
		return nil
	})
	if err != nil {
		return nil, ioErr("scan tagged version", err)
	}
	var found []byte
	d.mu.RLock()
	old.ascend(nil, func(e entry) bool {
		if entryKind(e) == kindTombstone {
			return true
		}
		cur := d.v.lookup(entryKey(e))
		if cur == nil || entryKind(cur) == kindTombstone {
			found = clone(entryKey(e))
			return false
		}
		return true
	})
	d.mu.RUnlock()
	return found, nil
}
