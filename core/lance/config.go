package lance

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// Table config keys kv0 understands (Manifest.config; "lance." keys are
// reserved by Lance).
const (
	// ConfigAutoCleanupInterval: after a commit whose version is a multiple
	// of it, old versions are cleaned up (a positive integer).
	ConfigAutoCleanupInterval = "lance.auto_cleanup.interval"
	// ConfigAutoCleanupOlderThan: the age past which auto cleanup removes
	// versions, a duration such as "14d", "2h30m", "1w".
	ConfigAutoCleanupOlderThan = "lance.auto_cleanup.older_than"
	// ConfigAutoCleanupRetainVersions: auto cleanup keeps at least this
	// many of the newest versions.
	ConfigAutoCleanupRetainVersions = "lance.auto_cleanup.retain_versions"
)

// UpdateConfig commits an UpdateConfig transaction that sets the upsert
// keys and removes the remove keys of the table config. The auto-cleanup
// keys are validated. The manifest's writer feature flag 8 is set whenever
// the config is non-empty. It conflicts (non-retryably) only with a
// concurrent config change of the same keys.
func (d *Dataset) UpdateConfig(ctx context.Context, upsert map[string]string, remove []string) (*Dataset, error) {
	if err := checkWritable(d); err != nil {
		return nil, err
	}
	u := &tablepb.Transaction_UpdateMap{}
	keys := make([]string, 0, len(upsert))
	for k := range upsert {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := upsert[k]
		if err := checkConfigValue(k, v); err != nil {
			return nil, err
		}
		u.UpdateEntries = append(u.UpdateEntries, &tablepb.Transaction_UpdateMapEntry{Key: k, Value: &v})
	}
	for _, k := range remove {
		u.UpdateEntries = append(u.UpdateEntries, &tablepb.Transaction_UpdateMapEntry{Key: k})
	}
	txn := newTransaction(d.Version())
	txn.Operation = &tablepb.Transaction_UpdateConfig_{UpdateConfig: &tablepb.Transaction_UpdateConfig{ConfigUpdates: u}}
	return commit(ctx, commitReq{st: d.st, k: d.k, naming: d.Naming(), base: d, txn: txn})
}

func checkConfigValue(k, v string) error {
	switch k {
	case ConfigAutoCleanupInterval, ConfigAutoCleanupRetainVersions:
		if n, err := strconv.ParseUint(v, 10, 64); err != nil || n == 0 {
			return fmt.Errorf("lance: config %s=%q: want a positive integer", k, v)
		}
	case ConfigAutoCleanupOlderThan:
		if _, err := ParseDuration(v); err != nil {
			return fmt.Errorf("lance: config %s=%q: %v", k, v, err)
		}
	}
	return nil
}

// ParseDuration parses a Go duration ("36h", "90m") or a whole number of
// days or weeks with a "d" or "w" suffix ("14d", "2w"), optionally followed
// by a Go duration ("1d12h"). A duration past about 292 years is refused.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	orig := s
	var total time.Duration
	units := false
	for _, unit := range []struct {
		suffix string
		d      time.Duration
	}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}} {
		i := strings.Index(s, unit.suffix)
		if i <= 0 {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(s[:i]), 10, 32)
		if err != nil {
			continue
		}
		if time.Duration(n) > (math.MaxInt64-total)/unit.d {
			return 0, fmt.Errorf("lance: duration %q is too long", orig)
		}
		total += time.Duration(n) * unit.d
		units = true
		s = strings.TrimSpace(s[i+1:])
	}
	if s == "" {
		if !units {
			return 0, fmt.Errorf("lance: empty duration")
		}
		return total, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("lance: bad duration %q (Go durations plus d and w suffixes)", s)
	}
	if d > 0 && total > math.MaxInt64-d {
		return 0, fmt.Errorf("lance: duration %q is too long", orig)
	}
	return total + d, nil
}
