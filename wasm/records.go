//go:build js && wasm

package main

import (
	"bytes"
	"context"
	"errors"
	"syscall/js"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// recordsOptions are repo.records' options.
type recordsOptions struct {
	Run *string `json:"run"`
}

// recordsCall answers repo.recordTables() and repo.records(table, {run}):
// the views of core/inspect the HTTP API's /api/v1/records routes give.
func (h *repoHandle) recordsCall(ctx context.Context, method string, args []js.Value) (any, error) {
	if method == "recordTables" {
		names, err := inspect.RecordTables(ctx, h.r)
		if errors.Is(err, store.ErrNotSupported) {
			return nil, &callError{code: codeUnsupported, err: errors.New(
				"the records tables cannot be listed on a static host (it has no listing): read a table by name with repo.records(table), or open the repository through a signer")}
		}
		return names, err
	}
	table, err := stringArg(args, 2, "records table")
	if err != nil {
		return nil, err
	}
	if tracking.CheckRecordTable(table) != nil {
		return nil, invalid("table: %q is not a records table name (1 to 200 letters, digits, _ and -)", table)
	}
	var o recordsOptions
	if err := options(args, 3, &o); err != nil {
		return nil, err
	}
	run := ""
	if o.Run != nil {
		if *o.Run == "" {
			return nil, invalid("run: empty run id")
		}
		run = *o.Run
	}
	recs, err := inspect.Records(ctx, h.r, table, run)
	if err != nil {
		return nil, err
	}
	// repoCall quotes every "series_id":N of its answer (the series ids of
	// the other methods); a record's data is the writer's JSON and must
	// come back as written, so its "series_id" keys are spelt with an
	// escaped letter, which JSON.parse reads as the same key.
	for i := range recs {
		recs[i].Data = bytes.ReplaceAll(recs[i].Data, []byte(`"series_id"`), []byte(`"series_i\u0064"`))
	}
	return recs, nil
}
