package tracking

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

// Record is one item of a records table (evaluation samples, artifacts
// references, anything keyed by run and item id). Data is JSON.
type Record struct {
	Table     string          `json:"table"`
	RunID     string          `json:"run_id,omitempty"`
	ItemID    string          `json:"item_id"`
	Data      json.RawMessage `json:"data"`
	Seq       uint64          `json:"seq"`
	CreatedAt time.Time       `json:"created_at"`
}

// RecordQuery selects records; zero fields select everything at the latest
// version.
type RecordQuery struct {
	RunID string // only this run's records
	Tag   string // read the version of this tag (see TagRecords)
}

func recordsKey(table string) string { return RecordsDir + "/" + table + ".lance" }

// CheckRecordTable checks a records table name (1 to 200 letters, digits,
// '_' and '-'), so that a face can refuse a bad name before it touches the
// store. The error wraps ErrInvalid and quotes the name.
func CheckRecordTable(name string) error { return validTable(name) }

func validTable(t string) error {
	if t == "" || len(t) > 200 {
		return fmt.Errorf("%w: records table name %q", ErrInvalid, t)
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: records table name %q (letters, digits, _ and - only)", ErrInvalid, t)
		}
	}
	return nil
}

// PutRecord buffers the record (runID may be empty) in table; the newest
// write of a (run, item) key wins.
func (r *Repo) PutRecord(table, runID, itemID string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("%w: record data: %v", ErrInvalid, err)
	}
	s := string(b)
	return r.addRecord(table, runID, itemID, &s)
}

// DeleteRecord buffers the deletion of a (run, item) key of table.
func (r *Repo) DeleteRecord(table, runID, itemID string) error {
	return r.addRecord(table, runID, itemID, nil)
}

func (r *Repo) addRecord(table, runID, itemID string, data *string) error {
	if err := validTable(table); err != nil {
		return err
	}
	if itemID == "" {
		return fmt.Errorf("%w: empty item id", ErrInvalid)
	}
	if err := checkText("record key", runID, itemID); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkWritable(); err != nil {
		return err
	}
	now := r.opts.Now()
	seq := r.nextSeq(now)
	r.buf.records[table] = append(r.buf.records[table], recordRow{seq: seq, runID: runID, itemID: itemID, data: data, created: now.UnixMicro()})
	r.buf.maxSeq = max(r.buf.maxSeq, seq)
	return nil
}

// recordsTable returns the latest known version of a records table,
// creating it when create is set. Caller holds r.flushMu.
func (r *Repo) recordsTable(ctx context.Context, table string, create bool) (*lance.Dataset, error) {
	if d := r.tables.records[table]; d != nil {
		return d, nil
	}
	var d *lance.Dataset
	var err error
	if create {
		d, err = r.openOrCreate(ctx, recordsKey(table), RecordsSchema)
	} else {
		d, err = r.latest(ctx, recordsKey(table))
	}
	if err != nil || d == nil {
		return nil, err
	}
	r.tables.records[table] = d
	return d, nil
}

// RecordTables lists the records tables of the repository.
func (r *Repo) RecordTables(ctx context.Context) ([]string, error) {
	prefix := store.Join(r.root, RecordsDir) + "/"
	objs, err := r.st.List(ctx, store.ListOptions{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range objs {
		rest := strings.TrimPrefix(o.Key, prefix)
		name, _, ok := strings.Cut(rest, "/")
		if !ok || !strings.HasSuffix(name, ".lance") {
			continue
		}
		t := strings.TrimSuffix(name, ".lance")
		if len(out) == 0 || out[len(out)-1] != t {
			out = append(out, t)
		}
	}
	return slices.Compact(out), nil
}

func decodeRecords(rec arrow.RecordBatch, fn func(Record, bool)) {
	seq := col[*array.Uint64](rec, "seq")
	tn := col[*array.String](rec, "table_name")
	run := col[*array.String](rec, "run_id")
	item := col[*array.String](rec, "item_id")
	data := col[*array.String](rec, "data")
	created := col[*array.Timestamp](rec, "created_at")
	for i := 0; i < int(rec.NumRows()); i++ {
		x := Record{Table: tn.Value(i), RunID: optStr(run, i), ItemID: item.Value(i), Seq: seq.Value(i), CreatedAt: usTime(created.Value(i))}
		live := data.IsValid(i)
		if live {
			x.Data = json.RawMessage(data.Value(i))
		}
		fn(x, live)
	}
}

// ListRecords returns the live records of table selected by q, ordered by
// run and item id. An unknown table or tag fails with ErrNotFound.
func (r *Repo) ListRecords(ctx context.Context, table string, q RecordQuery) ([]Record, error) {
	if err := validTable(table); err != nil {
		return nil, err
	}
	if err := r.prepareRead(ctx); err != nil {
		return nil, err
	}
	d, err := lance.Open(ctx, r.st, r.key(recordsKey(table)), lance.OpenOptions{Tag: q.Tag})
	if err != nil {
		if errors.Is(err, lance.ErrNotFound) {
			return nil, fmt.Errorf("%w: records table %q: %v", ErrNotFound, table, err)
		}
		return nil, err
	}
	deleted, err := r.deletedRuns(ctx)
	if err != nil {
		return nil, err
	}
	type key struct{ run, item string }
	newest := map[key]Record{}
	liveOf := map[key]bool{}
	err = scanAll(ctx, d, lance.ScanOptions{}, func(rec arrow.RecordBatch) error {
		decodeRecords(rec, func(x Record, live bool) {
			if q.RunID != "" && x.RunID != q.RunID {
				return
			}
			k := key{x.RunID, x.ItemID}
			if old, ok := newest[k]; !ok || x.Seq >= old.Seq {
				newest[k], liveOf[k] = x, live
			}
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Record
	for k, x := range newest {
		if liveOf[k] && (x.RunID == "" || !deleted[x.RunID]) {
			out = append(out, x)
		}
	}
	slices.SortFunc(out, func(a, b Record) int {
		if c := strings.Compare(a.RunID, b.RunID); c != 0 {
			return c
		}
		return strings.Compare(a.ItemID, b.ItemID)
	})
	return out, nil
}

// GetRecord returns one record, or ErrNotFound.
func (r *Repo) GetRecord(ctx context.Context, table, runID, itemID string) (Record, error) {
	all, err := r.ListRecords(ctx, table, RecordQuery{RunID: runID})
	if err != nil {
		return Record{}, err
	}
	for _, x := range all {
		if x.RunID == runID && x.ItemID == itemID {
			return x, nil
		}
	}
	return Record{}, fmt.Errorf("%w: record %q/%q in %q", ErrNotFound, runID, itemID, table)
}

// TagRecords tags the current version of a records table (after flushing),
// so ListRecords with RecordQuery.Tag reads it later.
func (r *Repo) TagRecords(ctx context.Context, table, tag string) error {
	if err := validTable(table); err != nil {
		return err
	}
	if err := r.checkWritableLocked(); err != nil {
		return err
	}
	if err := r.Flush(ctx); err != nil {
		return err
	}
	d, err := r.latest(ctx, recordsKey(table))
	if err != nil {
		return err
	}
	if d == nil {
		return fmt.Errorf("%w: records table %q", ErrNotFound, table)
	}
	return d.CreateTag(ctx, tag, d.Version())
}

// deletedRuns returns the tombstoned run ids.
func (r *Repo) deletedRuns(ctx context.Context) (map[string]bool, error) {
	d, err := r.latest(ctx, RunsTable)
	if err != nil || d == nil {
		return map[string]bool{}, err
	}
	return scanTombstones(ctx, d, nil)
}
