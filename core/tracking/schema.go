package tracking

import (
	"github.com/apache/arrow-go/v18/arrow"
)

// Table folders inside a repository.
const (
	RunsTable    = "runs.lance"
	ParamsTable  = "params.lance"
	SeriesTable  = "series.lance"
	MetricsTable = "metrics.lance"
	RecordsDir   = "records"
)

// Table config keys kv0 keeps in the metrics dataset's manifest.
const (
	// ConfigSortedFragments lists the metrics fragments Optimize wrote
	// sorted by (series_id, step): comma-separated entries "id:lo:hi" (the
	// fragment id and its smallest and largest series id) or "id".
	ConfigSortedFragments = "kv0.sorted_fragments"
)

// walPrefix starts the run_id of WAL mark rows in runs, params and series.
const walPrefix = "__kv0_wal__/"

var tsType = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}

// Schemas of the tables, exactly as stored.
//
// runs.lance:
//
//	seq          uint64              the change's sequence number (newest wins per field)
//	run_id       utf8                UUIDv7 hex unless given
//	name         utf8?
//	experiment   utf8?
//	description  utf8?
//	tags         list<utf8>
//	status       utf8                running, finished, failed, aborted
//	archived     bool
//	created_at   timestamp[us, UTC]
//	updated_at   timestamp[us, UTC]
//	ended_at     timestamp[us, UTC]?
//	fields       uint32?             the fields this row sets (Field* bits); null: all but the heartbeat
//	                                 (a row with FieldHeartbeat holds the heartbeat in updated_at)
//	kind         utf8?               training, eval, ...
//	target       utf8?               JSON: what the run is about
//
// params.lance: seq uint64, run_id utf8, key utf8 (dotted), value utf8
// (JSON), num float64?, text utf8?, flag bool? (the scalar repeated by
// type, for filtering).
//
// series.lance: series_id uint64, run_id utf8, name utf8, context utf8
// (JSON with sorted keys, {} when empty), created_at timestamp[us, UTC].
//
// metrics.lance: series_id uint64, step int64, epoch int64?, timestamp
// timestamp[us, UTC], value float64, stats binary?. Rows with series_id 0
// are reserved: a statistics delta has the series id in step and the
// encoded delta in stats; a WAL mark has step 0 and the encoded mark in
// stats (see stats.go).
//
// records/<table>.lance: seq uint64, table_name utf8, run_id utf8?, item_id
// utf8, data utf8 (JSON; null in a deletion), created_at timestamp[us, UTC].
var (
	RunsSchema = arrow.NewSchema([]arrow.Field{
		{Name: "seq", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "run_id", Type: arrow.BinaryTypes.String},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "experiment", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "description", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "status", Type: arrow.BinaryTypes.String},
		{Name: "archived", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "created_at", Type: tsType},
		{Name: "updated_at", Type: tsType},
		{Name: "ended_at", Type: tsType, Nullable: true},
		{Name: "fields", Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
		{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "target", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	ParamsSchema = arrow.NewSchema([]arrow.Field{
		{Name: "seq", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "run_id", Type: arrow.BinaryTypes.String},
		{Name: "key", Type: arrow.BinaryTypes.String},
		{Name: "value", Type: arrow.BinaryTypes.String},
		{Name: "num", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	SeriesSchema = arrow.NewSchema([]arrow.Field{
		{Name: "series_id", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "run_id", Type: arrow.BinaryTypes.String},
		{Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "context", Type: arrow.BinaryTypes.String},
		{Name: "created_at", Type: tsType},
	}, nil)
	MetricsSchema = arrow.NewSchema([]arrow.Field{
		{Name: "series_id", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "epoch", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "timestamp", Type: tsType},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64},
		{Name: "stats", Type: arrow.BinaryTypes.Binary, Nullable: true},
	}, nil)
	RecordsSchema = arrow.NewSchema([]arrow.Field{
		{Name: "seq", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "table_name", Type: arrow.BinaryTypes.String},
		{Name: "run_id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "item_id", Type: arrow.BinaryTypes.String},
		{Name: "data", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "created_at", Type: tsType},
	}, nil)
)

type arrowSchema = arrow.Schema
