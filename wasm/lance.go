//go:build js && wasm

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"syscall/js"

	"github.com/kv0/kv0/core/arrowstream"
	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/lance"
)

// versionOptions are the --version and --tag of `kv0 lance info|cat`.
type versionOptions struct {
	Version *uint64 `json:"version"`
	Tag     string  `json:"tag"`
}

func (v versionOptions) open() (lance.OpenOptions, error) {
	if v.Version != nil && *v.Version == 0 {
		return lance.OpenOptions{}, invalid("version: versions start at 1")
	}
	if v.Version != nil && v.Tag != "" {
		return lance.OpenOptions{}, invalid("version and tag exclude each other")
	}
	o := lance.OpenOptions{Tag: v.Tag}
	if v.Version != nil {
		o.Version = *v.Version
	}
	return o, nil
}

// rowsOptions are the options of lance.cat and lance.scan.
type rowsOptions struct {
	versionOptions
	Columns []string `json:"columns"`
	Limit   *int64   `json:"limit"`
	Where   string   `json:"where"`
}

// lanceCall parses (location, options) and runs fn with the opened
// location; errors name the location.
func lanceCall(args []js.Value, opts any, fn func(ctx context.Context, loc *location) (any, error)) js.Value {
	var loc *location
	where := func() string {
		if loc == nil {
			return ""
		}
		return loc.name
	}
	return promise(where, func(ctx context.Context) (any, error) {
		if len(args) == 0 {
			return nil, invalid("missing location")
		}
		l, err := parseLocation(args[0])
		if err != nil {
			return nil, err
		}
		loc = l
		if err := options(args, 1, opts); err != nil {
			return nil, err
		}
		return fn(ctx, loc)
	})
}

// scanRows opens the dataset and starts the scan `kv0 lance cat` prints;
// nil rows (and no error) when limit is 0, which prints nothing.
func scanRows(ctx context.Context, loc *location, o *rowsOptions) (*inspect.Rows, error) {
	oo, err := o.open()
	if err != nil {
		return nil, err
	}
	for _, c := range o.Columns {
		if c == "" {
			return nil, invalid("columns: empty column name")
		}
	}
	limit := int64(-1)
	if o.Limit != nil {
		if *o.Limit < 0 {
			return nil, invalid("limit: must be at least 0")
		}
		limit = *o.Limit
	}
	d, err := lance.Open(ctx, loc.st, loc.root, oo)
	if err != nil {
		return nil, err
	}
	// limit 0 too: no rows, but the columns and the filter are checked
	// and the schema is the projection's.
	return inspect.ScanRows(ctx, d, inspect.RowsOptions{Columns: o.Columns, Limit: limit, Where: o.Where})
}

func lanceCat(args []js.Value) js.Value {
	var o rowsOptions
	return lanceCall(args, &o, func(ctx context.Context, loc *location) (any, error) {
		rows, err := scanRows(ctx, loc, &o)
		if err != nil || rows == nil {
			return "", err
		}
		defer rows.Close()
		var buf bytes.Buffer
		w := jsonl.NewWriter(&buf)
		var y yielder
		for rows.Next() {
			y.maybe()
			if err := w.Write(rows.Record()); err != nil {
				return nil, err
			}
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return buf.String(), nil
	})
}

func lanceScan(args []js.Value) js.Value {
	var o rowsOptions
	return lanceCall(args, &o, func(ctx context.Context, loc *location) (any, error) {
		rows, err := scanRows(ctx, loc, &o)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		defer rows.Close()
		w := arrowstream.NewWriter(&buf, rows.Schema())
		var y yielder
		for rows.Next() {
			y.maybe()
			if err := w.Write(rows.Record()); err != nil {
				return nil, err
			}
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return bytesToJS(buf.Bytes()), nil
	})
}

// marshal encodes v as the CLI does (no HTML escaping, one line).
func marshal(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return buf.String(), nil
}

func lanceInfo(args []js.Value) js.Value {
	var o versionOptions
	return lanceCall(args, &o, func(ctx context.Context, loc *location) (any, error) {
		oo, err := o.open()
		if err != nil {
			return nil, err
		}
		d, err := lance.Open(ctx, loc.st, loc.root, oo)
		if err != nil {
			return nil, err
		}
		info, err := inspect.DatasetInfo(ctx, d, loc.path)
		if err != nil {
			return nil, err
		}
		return marshal(info)
	})
}

func lanceLog(args []js.Value) js.Value {
	var o struct{}
	return lanceCall(args, &o, func(ctx context.Context, loc *location) (any, error) {
		out, err := inspect.DatasetLog(ctx, loc.st, loc.root)
		if err != nil {
			return nil, err
		}
		return marshal(out)
	})
}
