package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/kv0/kv0/core/tracking"
)

// WebRecord is tracking.Record as JavaScript reads it (the HTTP API's
// /api/v1/records/{table} and the WebAssembly module's repo.records): seq,
// a 64-bit sequence number (nanoseconds of the write), is a decimal
// string, and run_id is left out for a record of no run.
type WebRecord struct {
	Table     string          `json:"table"`
	RunID     string          `json:"run_id,omitempty"`
	ItemID    string          `json:"item_id"`
	Data      json.RawMessage `json:"data"`
	Seq       StringID        `json:"seq"`
	CreatedAt time.Time       `json:"created_at"`
}

// RecordTables returns the names of the repository's records tables,
// sorted (an empty slice, not nil, when there is none). It lists the
// store, so a store that cannot list (a static HTTP host) fails matching
// store.ErrNotSupported.
func RecordTables(ctx context.Context, r *tracking.Repo) ([]string, error) {
	names, err := r.RecordTables(ctx)
	if names == nil && err == nil {
		names = []string{}
	}
	return names, err
}

// Records returns the live records of table, only those of runID when it
// is not empty, ordered by run and item id (tracking.Repo.ListRecords). A
// bad table name fails matching tracking.ErrInvalid, an unknown table
// tracking.ErrNotFound, and a record whose data is not JSON (written by
// another tool) tracking.ErrCorrupt, naming the table and the item.
func Records(ctx context.Context, r *tracking.Repo, table, runID string) ([]WebRecord, error) {
	recs, err := r.ListRecords(ctx, table, tracking.RecordQuery{RunID: runID})
	if err != nil {
		return nil, err
	}
	out := make([]WebRecord, len(recs))
	for i, x := range recs {
		if !json.Valid(x.Data) {
			return nil, fmt.Errorf("%w: records table %q, run %q, item %q: data is not JSON", tracking.ErrCorrupt, table, x.RunID, x.ItemID)
		}
		out[i] = WebRecord{Table: x.Table, RunID: x.RunID, ItemID: x.ItemID, Data: x.Data, Seq: StringID(x.Seq), CreatedAt: x.CreatedAt}
	}
	return out, nil
}
