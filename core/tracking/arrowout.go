package tracking

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// MetricsSchemaOut is the schema of MetricsRecord: one row per point.
var MetricsSchemaOut = arrow.NewSchema([]arrow.Field{
	{Name: "series_id", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "step", Type: arrow.PrimitiveTypes.Int64},
	{Name: "epoch", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "timestamp", Type: tsType},
	{Name: "value", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// MetricsRecord returns the points of ReadMany's result as one Arrow
// record batch (series after series). The caller releases it.
func MetricsRecord(data []MetricData) arrow.RecordBatch {
	bl := array.NewRecordBuilder(alloc, MetricsSchemaOut)
	defer bl.Release()
	sid := bl.Field(0).(*array.Uint64Builder)
	step := bl.Field(1).(*array.Int64Builder)
	epoch := bl.Field(2).(*array.Int64Builder)
	ts := bl.Field(3).(*array.TimestampBuilder)
	val := bl.Field(4).(*array.Float64Builder)
	for _, m := range data {
		for range m.Steps {
			sid.Append(uint64(m.SeriesID))
		}
		step.AppendValues(m.Steps, nil)
		for _, e := range m.Epochs {
			if e == NoEpoch {
				epoch.AppendNull()
			} else {
				epoch.Append(e)
			}
		}
		for _, t := range m.Timestamps {
			ts.Append(arrow.Timestamp(t.UnixMicro()))
		}
		val.AppendValues(m.Values, nil)
	}
	return bl.NewRecordBatch()
}

// RunsRecord returns runs as one Arrow record batch with the columns of
// runs.lance (seq and fields null). The caller releases it.
func RunsRecord(runs []RunInfo) arrow.RecordBatch {
	rows := make([]runRow, len(runs))
	for i, in := range runs {
		rows[i] = runRow{info: in}
	}
	rec := buildRuns(rows)
	return rec
}
