package lance

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// autoCleanupUnverified is how old a file no manifest references must be
// before automatic cleanup presumes it abandoned rather than part of a
// commit in flight (Lance's threshold).
const autoCleanupUnverified = 7 * 24 * time.Hour

// AutoCleanupFunc receives the outcome of an automatic cleanup that a commit
// of version ran: what was removed, or why it failed. A failure never fails
// the commit.
type AutoCleanupFunc func(version uint64, stats CleanupStats, err error)

// autoCleanup runs the table's automatic cleanup after the commit of d, as
// Lance's commit hook does: when lance.auto_cleanup.interval is set and
// divides d's version, the versions older than lance.auto_cleanup.older_than
// (all older ones when unset) are removed, except the latest, tagged ones
// and the newest lance.auto_cleanup.retain_versions. Files no manifest
// references are left unless they are 7 days old. The outcome goes to
// report (when set), never to the caller of the commit.
func autoCleanup(ctx context.Context, d *Dataset, now func() time.Time, report AutoCleanupFunc) {
	cfg := d.mf.m.GetConfig()
	iv, ok := cfg[ConfigAutoCleanupInterval]
	if !ok {
		return
	}
	fail := func(err error) {
		if report != nil {
			report(d.Version(), CleanupStats{}, err)
		}
	}
	interval, err := strconv.ParseUint(iv, 10, 64)
	if err != nil || interval == 0 {
		fail(fmt.Errorf("lance: auto cleanup: %s=%q is not a positive integer", ConfigAutoCleanupInterval, iv))
		return
	}
	if d.Version()%interval != 0 {
		return
	}
	// Unset, no age limit applies (a cutoff a century ahead, so that commit
	// times from clocks running ahead of ours do not protect versions).
	olderThan := -100 * 365 * 24 * time.Hour
	if s, ok := cfg[ConfigAutoCleanupOlderThan]; ok {
		if olderThan, err = ParseDuration(s); err != nil {
			fail(fmt.Errorf("lance: auto cleanup: %s=%q: %w", ConfigAutoCleanupOlderThan, s, err))
			return
		}
	}
	opts := CleanupOptions{UnverifiedOlderThan: autoCleanupUnverified, Now: now}
	if s, ok := cfg[ConfigAutoCleanupRetainVersions]; ok {
		n, err := strconv.ParseUint(s, 10, 31)
		if err != nil {
			fail(fmt.Errorf("lance: auto cleanup: %s=%q is not a count of versions", ConfigAutoCleanupRetainVersions, s))
			return
		}
		opts.RetainVersions = int(n)
	}
	stats, err := CleanupOldVersions(ctx, d.st, d.k.root, olderThan, opts)
	if report != nil {
		report(d.Version(), stats, err)
	}
}
