package tracking

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

type arrowRecord = arrow.RecordBatch

var alloc = memory.DefaultAllocator

func appendOptString(b *array.StringBuilder, s string) {
	if s == "" {
		b.AppendNull()
	} else {
		b.Append(s)
	}
}

func buildRuns(rows []runRow) arrow.RecordBatch {
	bl := array.NewRecordBuilder(alloc, RunsSchema)
	defer bl.Release()
	seq := bl.Field(0).(*array.Uint64Builder)
	id := bl.Field(1).(*array.StringBuilder)
	name := bl.Field(2).(*array.StringBuilder)
	exp := bl.Field(3).(*array.StringBuilder)
	desc := bl.Field(4).(*array.StringBuilder)
	tags := bl.Field(5).(*array.ListBuilder)
	tagv := tags.ValueBuilder().(*array.StringBuilder)
	status := bl.Field(6).(*array.StringBuilder)
	arch := bl.Field(7).(*array.BooleanBuilder)
	created := bl.Field(8).(*array.TimestampBuilder)
	updated := bl.Field(9).(*array.TimestampBuilder)
	ended := bl.Field(10).(*array.TimestampBuilder)
	fields := bl.Field(11).(*array.Uint32Builder)
	kind := bl.Field(12).(*array.StringBuilder)
	target := bl.Field(13).(*array.StringBuilder)
	for _, rw := range rows {
		in := rw.info
		seq.Append(rw.seq)
		id.Append(in.ID)
		appendOptString(name, in.Name)
		appendOptString(exp, in.Experiment)
		appendOptString(desc, in.Description)
		tags.Append(true)
		for _, t := range in.Tags {
			tagv.Append(t)
		}
		status.Append(in.Status)
		arch.Append(in.Archived)
		created.Append(arrow.Timestamp(in.CreatedAt.UnixMicro()))
		if rw.hasMsk && rw.fields&FieldHeartbeat != 0 && rw.fields&FieldUpdatedAt == 0 {
			updated.Append(arrow.Timestamp(in.HeartbeatAt.UnixMicro())) // see FieldHeartbeat
		} else {
			updated.Append(arrow.Timestamp(in.UpdatedAt.UnixMicro()))
		}
		if in.EndedAt.IsZero() {
			ended.AppendNull()
		} else {
			ended.Append(arrow.Timestamp(in.EndedAt.UnixMicro()))
		}
		if rw.hasMsk {
			fields.Append(rw.fields)
		} else {
			fields.AppendNull()
		}
		appendOptString(kind, in.Kind)
		appendOptString(target, in.Target)
	}
	return bl.NewRecordBatch()
}

func buildParams(rows []paramRow) arrow.RecordBatch {
	bl := array.NewRecordBuilder(alloc, ParamsSchema)
	defer bl.Release()
	seq := bl.Field(0).(*array.Uint64Builder)
	id := bl.Field(1).(*array.StringBuilder)
	key := bl.Field(2).(*array.StringBuilder)
	val := bl.Field(3).(*array.StringBuilder)
	num := bl.Field(4).(*array.Float64Builder)
	text := bl.Field(5).(*array.StringBuilder)
	flag := bl.Field(6).(*array.BooleanBuilder)
	for _, p := range rows {
		seq.Append(p.seq)
		id.Append(p.runID)
		key.Append(p.key)
		val.Append(string(p.p.Value))
		if p.p.Num != nil {
			num.Append(*p.p.Num)
		} else {
			num.AppendNull()
		}
		if p.p.Text != nil {
			text.Append(*p.p.Text)
		} else {
			text.AppendNull()
		}
		if p.p.Flag != nil {
			flag.Append(*p.p.Flag)
		} else {
			flag.AppendNull()
		}
	}
	return bl.NewRecordBatch()
}

func buildSeries(rows []seriesRow) arrow.RecordBatch {
	bl := array.NewRecordBuilder(alloc, SeriesSchema)
	defer bl.Release()
	sid := bl.Field(0).(*array.Uint64Builder)
	id := bl.Field(1).(*array.StringBuilder)
	name := bl.Field(2).(*array.StringBuilder)
	ctx := bl.Field(3).(*array.StringBuilder)
	created := bl.Field(4).(*array.TimestampBuilder)
	for _, s := range rows {
		sid.Append(uint64(s.id))
		id.Append(s.runID)
		name.Append(s.name)
		ctx.Append(s.ctx)
		created.Append(arrow.Timestamp(s.created))
	}
	return bl.NewRecordBatch()
}

// buildMetrics lays out points, then one statistics delta row per series,
// then the WAL mark row (when mark is not nil).
func buildMetrics(p *points, deltas []*deltaEntry, mark []byte, now interface{ UnixMicro() int64 }) arrow.RecordBatch {
	n := p.len() + len(deltas)
	if mark != nil {
		n++
	}
	bl := array.NewRecordBuilder(alloc, MetricsSchema)
	defer bl.Release()
	bl.Reserve(n)
	sid := bl.Field(0).(*array.Uint64Builder)
	step := bl.Field(1).(*array.Int64Builder)
	epoch := bl.Field(2).(*array.Int64Builder)
	ts := bl.Field(3).(*array.TimestampBuilder)
	val := bl.Field(4).(*array.Float64Builder)
	stats := bl.Field(5).(*array.BinaryBuilder)
	sid.AppendValues(p.sid, nil)
	step.AppendValues(p.step, nil)
	epoch.AppendValues(p.epoch, p.hasEpoch)
	for _, t := range p.ts {
		ts.UnsafeAppend(arrow.Timestamp(t))
	}
	val.AppendValues(p.val, nil)
	stats.AppendNulls(p.len())
	nowUS := now.UnixMicro()
	buf := make([]byte, 0, deltaLen)
	for _, e := range deltas {
		sid.Append(0)
		step.Append(int64(e.id))
		epoch.AppendNull()
		ts.Append(arrow.Timestamp(max(e.d.lastTS, 0)))
		val.Append(0)
		buf = e.d.appendTo(buf[:0])
		stats.Append(buf)
	}
	if mark != nil {
		sid.Append(0)
		step.Append(0)
		epoch.AppendNull()
		ts.Append(arrow.Timestamp(nowUS))
		val.Append(0)
		stats.Append(mark)
	}
	return bl.NewRecordBatch()
}

func buildRecords(table string, rows []recordRow) arrow.RecordBatch {
	bl := array.NewRecordBuilder(alloc, RecordsSchema)
	defer bl.Release()
	seq := bl.Field(0).(*array.Uint64Builder)
	tn := bl.Field(1).(*array.StringBuilder)
	run := bl.Field(2).(*array.StringBuilder)
	item := bl.Field(3).(*array.StringBuilder)
	data := bl.Field(4).(*array.StringBuilder)
	created := bl.Field(5).(*array.TimestampBuilder)
	for _, x := range rows {
		seq.Append(x.seq)
		tn.Append(table)
		appendOptString(run, x.runID)
		item.Append(x.itemID)
		if x.data == nil {
			data.AppendNull()
		} else {
			data.Append(*x.data)
		}
		created.Append(arrow.Timestamp(x.created))
	}
	return bl.NewRecordBatch()
}
