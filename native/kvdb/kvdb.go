// Package kvdb opens kv0 key-value databases by location: it wires the
// store a location names (native/location), the Lance operation log
// (core/kv/lancelog), the local write-ahead log and the snapshot file
// (native/wal) into a *kv.DB.
//
//	location              store               WAL and snapshot
//	/data/db.lance        local folder        yes (local, under Options.WALDir)
//	memory://name         process memory      none
//	s3://bucket/prefix    S3                  yes (always on local disk)
//	gs://bucket/prefix    Google Cloud Storage yes (always on local disk)
//	az://container/prefix Azure Blob Storage  yes (always on local disk)
//	http(s)://...         read-only HTTP      none (read-only handle)
//	kv0+signer://...      read-only, signed   none (read-only handle)
//
// Read-only handles (Options.ReadOnly, a Version to travel to, or an HTTP
// location) never create or replay a WAL. A writable Open of a database
// whose WAL holds a damaged segment fails with a *wal.CorruptError
// (matching wal.ErrCorrupt and kv.ErrCorruption) naming the segment and
// `kv0 wal salvage LOCATION`; wal.Salvage with the key URI returns keeps
// the records before the damage for the next writable Open to replay.
package kvdb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/kv/lancelog"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/location"
	"github.com/kv0/kv0/native/wal"
)

// Options configure Open. The zero value opens (creating if needed) a
// writable database with the kv defaults, a WAL in batch mode under the
// default WAL root, and snapshots.
type Options struct {
	// DB are the key-value options: ReadOnly, Version, buffer sizes,
	// intervals and so on. Open fills in WAL and Snapshots unless they are
	// already set.
	DB kv.Options
	// WALDir is the root of the WAL and snapshot directories (default:
	// $KV0_WAL_DIR, else the user cache directory + "/kv0/wal").
	WALDir string
	// WALMode is the WAL's durability (default batch).
	WALMode wal.SyncMode
	// DisableWAL opens a writable handle without a WAL: unflushed writes
	// are lost if the process dies.
	DisableWAL bool
	// DisableSnapshots neither loads nor saves the snapshot file.
	DisableSnapshots bool
	// Location configures the store (S3 credentials, HTTP options). Create
	// is set for writable handles.
	Location location.Options
	// Log configures the Lance operation log (retention, batch sizes).
	Log lancelog.Options
}

// ErrNoDatabase means a read-only open found no database at the location.
// Match with errors.Is; it also matches store.ErrNotFound.
var ErrNoDatabase = fmt.Errorf("kvdb: no database: %w", store.ErrNotFound)

// Open opens the database at location. A writable open creates the
// database (and a local folder) when there is none; a read-only one fails
// with ErrNoDatabase.
func Open(ctx context.Context, loc string, opts Options) (*kv.DB, error) {
	o := opts.DB
	if location.ReadOnly(loc, opts.Location) {
		o.ReadOnly = true
	}
	readOnly := o.ReadOnly || o.Version != 0
	log, uri, err := OpenLog(ctx, loc, !readOnly, opts)
	if readOnly && errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w at %s: %w", ErrNoDatabase, loc, err)
	}
	if err != nil {
		return nil, err
	}
	if readOnly && o.Version == 0 {
		v, err := log.Latest(ctx)
		if err != nil {
			return nil, err
		}
		if v == 0 {
			return nil, fmt.Errorf("%w at %s", ErrNoDatabase, loc)
		}
	}
	durable := uri != "" // memory:// has no local state
	wo := wal.Options{Dir: opts.WALDir, Mode: opts.WALMode}
	if durable && !opts.DisableSnapshots && o.Snapshots == nil && o.Version == 0 {
		s, err := wal.OpenSnapshots(uri, wo)
		if err != nil {
			return nil, err
		}
		o.Snapshots = s
	}
	if durable && !readOnly && !opts.DisableWAL && o.WAL == nil {
		w, err := wal.Open(uri, wo)
		if err != nil {
			return nil, err
		}
		o.WAL = w
	}
	if o.Blocks == nil {
		o.Blocks = defaultBlocks()
	}
	db, err := kv.Open(ctx, log, &o)
	if err != nil {
		return nil, fmt.Errorf("kvdb: open %s: %w", loc, err)
	}
	return db, nil
}

// OpenLog resolves location into its Lance operation log, creating the
// dataset when create is set. It also returns the URI that keys the
// database's WAL and snapshot directory ("" for memory://).
func OpenLog(ctx context.Context, loc string, create bool, opts Options) (*lancelog.Log, string, error) {
	lo := opts.Location
	lo.Create = create
	st, root, err := location.Open(ctx, loc, lo)
	if err != nil {
		return nil, "", err
	}
	logOpts := opts.Log
	logOpts.Create = create
	log, err := lancelog.Open(ctx, st, root, logOpts)
	if err != nil {
		return nil, "", fmt.Errorf("kvdb: open %s: %w", loc, err)
	}
	uri, err := URI(loc)
	if err != nil {
		return nil, "", err
	}
	if lo.Signer != "" && !strings.Contains(loc, "://") {
		// A key of the sign server's repository, not a local path.
		uri = "kv0+signer:" + strings.TrimRight(lo.Signer, "/") + "/" + root
	}
	return log, uri, nil
}

// URI returns the canonical form of location that keys its WAL and
// snapshot directory (location.Canonical: file://<absolute path> for local
// folders, the cleaned URI otherwise) and "" for memory://, which keeps no
// local state.
func URI(loc string) (string, error) {
	c, err := location.Canonical(loc)
	if err != nil {
		return "", fmt.Errorf("kvdb: %w", err)
	}
	if strings.HasPrefix(c, "memory://") {
		return "", nil
	}
	return c, nil
}

// Tag names version of the database at location (the latest when version
// is 0). Purge refuses to drop deleted data that a tag keeps.
func Tag(ctx context.Context, loc, name string, version uint64, opts Options) error {
	log, _, err := OpenLog(ctx, loc, false, opts)
	if err != nil {
		return err
	}
	if version == 0 {
		if version, err = log.Latest(ctx); err != nil {
			return err
		}
		if version == 0 {
			return fmt.Errorf("%w at %s", ErrNoDatabase, loc)
		}
	}
	return log.CreateTag(ctx, name, version)
}
