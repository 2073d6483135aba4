package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/location"
	"github.com/kv0/kv0/native/wal"
)

// crashedAfterEnv overrides tracking.DefaultCrashedAfter for every command:
// a duration such as 90s or 10m; 0 never reports a run as crashed.
const crashedAfterEnv = "KV0_CRASHED_AFTER"

// repoOpen says how openRepoWith opens a repository.
type repoOpen struct {
	writable bool
	// create makes a repository where there is none (writable only);
	// without it a missing repository fails.
	create bool
	// wal logs writes in the local WAL (native/wal), keyed by location.RepoWALKey.
	wal bool
	// opts are the tracking options; ReadOnly, WAL and CrashedAfter are
	// set by openRepoWith.
	opts tracking.RepoOptions
}

// openRepo opens the repository at loc: read-only, or writable (with
// useWAL, logging writes in the local WAL). It never creates one.
func openRepo(ctx context.Context, loc string, writable, useWAL bool) (*tracking.Repo, error) {
	return openRepoWith(ctx, loc, repoOpen{writable: writable, wal: useWAL})
}

// openRepoWith opens (or with o.create creates) the repository at loc.
// Before anything is created or logged, a writable open refuses read-only
// locations (http(s)://) and a location inside a Lance dataset; a missing
// repository fails unless o.create.
func openRepoWith(ctx context.Context, loc string, o repoOpen) (*tracking.Repo, error) {
	opts := o.opts
	opts.ReadOnly = !o.writable
	ca, err := crashedAfter()
	if err != nil {
		return nil, err
	}
	if opts.CrashedAfter == 0 {
		opts.CrashedAfter = ca
	}
	if o.writable {
		if err := checkWritable(loc); err != nil {
			return nil, err
		}
	}
	local, isLocal := location.LocalPath(loc)
	create := o.writable && o.create
	if create && isLocal {
		if err := os.MkdirAll(local, 0o755); err != nil {
			return nil, err
		}
	}
	st, root, err := location.Open(ctx, loc, locationOptions)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, noRepo(loc, o)
		}
		return nil, err
	}
	if o.writable {
		// A dataset at the location itself (a kv database, a Lance table)
		// is no repository and must not get tables written into it.
		if _, err := lance.LatestVersion(ctx, st, root); err == nil {
			return nil, fmt.Errorf("%s is a Lance dataset, not a tracking repository", loc)
		}
		if !create {
			ok, err := repoExists(ctx, st, root)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", loc, err)
			}
			if !ok {
				return nil, noRepo(loc, o)
			}
		}
	}
	if o.writable && o.wal {
		key, err := location.RepoWALKey(loc)
		if err != nil {
			return nil, err
		}
		if key != "" {
			l, err := wal.Open(key, wal.Options{})
			if err != nil {
				return nil, err // "wal: ...", naming the segment and the recovery when damaged
			}
			opts.WAL = l
		}
	}
	r, err := tracking.OpenRepo(ctx, st, root, opts)
	if err != nil {
		if errors.Is(err, tracking.ErrNotFound) {
			return nil, noRepo(loc, o)
		}
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return r, nil
}

func noRepo(loc string, o repoOpen) error {
	if o.writable {
		return fmt.Errorf("%s: not a tracking repository (--create makes one)", loc)
	}
	return fmt.Errorf("%s: not a tracking repository", loc)
}

// repoExists reports whether a repository (its runs table) exists at root.
func repoExists(ctx context.Context, st store.Store, root string) (bool, error) {
	_, err := lance.LatestVersion(ctx, st, store.Join(root, tracking.RunsTable))
	if errors.Is(err, lance.ErrNotFound) || errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// checkWritable refuses, before anything is written, read-only locations
// (http(s)://) and locations inside a Lance dataset (checkNotInDataset).
func checkWritable(loc string) error {
	if location.ReadOnly(loc, locationOptions) {
		return fmt.Errorf("%s: http(s) and signed locations are read-only; write to a local folder or s3://", loc)
	}
	return checkNotInDataset(loc)
}

// checkNotInDataset refuses a local location inside a Lance dataset's
// folder: one of its parents has a _versions folder or is named *.lance
// (a later cleanup or compaction of that dataset would destroy what is
// written there).
func checkNotInDataset(loc string) error {
	p, ok := location.LocalPath(loc)
	if !ok {
		return nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return err
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if strings.HasSuffix(filepath.Base(dir), ".lance") {
			return fmt.Errorf("%s is inside the Lance dataset %s; choose a folder outside it", loc, dir)
		}
		if fi, err := os.Stat(filepath.Join(dir, "_versions")); err == nil && fi.IsDir() {
			return fmt.Errorf("%s is inside the Lance dataset %s; choose a folder outside it", loc, dir)
		}
		if parent := filepath.Dir(dir); parent == dir {
			return nil
		}
	}
}

// crashedAfter reads KV0_CRASHED_AFTER (0 when unset: the default).
func crashedAfter() (time.Duration, error) {
	v := os.Getenv(crashedAfterEnv)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a duration such as 90s or 10m (0: never)", crashedAfterEnv, v)
	}
	if d == 0 {
		return -1, nil
	}
	return d, nil
}
