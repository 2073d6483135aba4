// Package trackbench compares kv0's tracking layer with MLflow's storage
// shape in SQLite (modernc.org/sqlite, pure Go) on the workload of the
// tracking issue: shape A is 1 run × 100 metrics × 100k steps (10M points),
// shape B 1,000 runs × 20 metrics × 1k steps. Both stores hold the same
// points; every benchmark has a kv0 and a sqlite sub-benchmark, run side by
// side in one process. run.sh prints the markdown table.
package trackbench

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/fsstore"
)

var (
	stepsA = flag.Int("trackbench.steps-a", 100_000, "steps of shape A (1 run × 100 metrics)")
	stepsB = flag.Int("trackbench.steps-b", 1_000, "steps of shape B (1,000 runs × 20 metrics)")
	keep   = flag.String("trackbench.dir", "", "folder for the fixtures (kept and reused); default: a temporary folder")
)

const (
	metricsA = 100
	runsB    = 1_000
	metricsB = 20
)

var base = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func value(run, metric, step int) float64 {
	return math.Sin(float64(step)/1000+float64(metric)) + float64(run%7)/10
}

func metricName(m int) string { return fmt.Sprintf("metric/%03d", m) }
func runID(shape string, r int) string {
	return fmt.Sprintf("%s%031d", shape, r) // 32 characters like an MLflow run_uuid
}

// fixture is one shape written to both stores.
type fixture struct {
	dir    string
	repo   *tracking.Repo
	db     *sql.DB
	series map[[2]int]tracking.SeriesID // (run, metric) -> id
}

var (
	fixOnce  sync.Once
	fixA     *fixture
	fixB     *fixture
	fixErr   error
	tmpDir   string
	cleanups []func()
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
	}
	os.Exit(code)
}

func fixtures(b *testing.B) (*fixture, *fixture) {
	b.Helper()
	fixOnce.Do(func() {
		dir := *keep
		if dir == "" {
			tmpDir, fixErr = os.MkdirTemp("", "trackbench-")
			dir = tmpDir
		}
		if fixErr != nil {
			return
		}
		if fixA, fixErr = build(filepath.Join(dir, fmt.Sprintf("A-%d", *stepsA)), "a", 1, metricsA, *stepsA); fixErr != nil {
			return
		}
		fixB, fixErr = build(filepath.Join(dir, fmt.Sprintf("B-%d", *stepsB)), "b", runsB, metricsB, *stepsB)
	})
	if fixErr != nil {
		b.Fatal(fixErr)
	}
	return fixA, fixB
}

// MLflow's schema (mlflow/store/tracking/dbmodels/models.py): metrics with
// its primary key and run_uuid index, and the runs table.
const mlflowSchema = `
CREATE TABLE runs (
	run_uuid VARCHAR(32) NOT NULL, name VARCHAR(250), source_type VARCHAR(20), source_name VARCHAR(500),
	entry_point_name VARCHAR(50), user_id VARCHAR(256), status VARCHAR(9), start_time BIGINT, end_time BIGINT,
	deleted_time BIGINT, source_version VARCHAR(50), lifecycle_stage VARCHAR(20), artifact_uri VARCHAR(200),
	experiment_id INTEGER, CONSTRAINT run_pk PRIMARY KEY (run_uuid));
CREATE TABLE metrics (
	key VARCHAR(250) NOT NULL, value FLOAT NOT NULL, timestamp BIGINT NOT NULL, run_uuid VARCHAR(32) NOT NULL,
	step BIGINT DEFAULT '0' NOT NULL, is_nan BOOLEAN DEFAULT '0' NOT NULL,
	CONSTRAINT metric_pk PRIMARY KEY (key, timestamp, step, run_uuid, value, is_nan));
CREATE INDEX index_metrics_run_uuid ON metrics (run_uuid);
`

func openSQLite(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// build writes a shape to a kv0 repository (then Optimize) and to SQLite,
// unless a complete earlier build is in dir.
func build(dir, shape string, runs, metrics, steps int) (*fixture, error) {
	ctx := context.Background()
	done := filepath.Join(dir, "done")
	_, statErr := os.Stat(done)
	fresh := statErr != nil
	if fresh {
		os.RemoveAll(dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, "kv0"), 0o755); err != nil {
		return nil, err
	}
	st, err := fsstore.Open(filepath.Join(dir, "kv0"))
	if err != nil {
		return nil, err
	}
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		return nil, err
	}
	db, err := openSQLite(filepath.Join(dir, "mlflow.db"))
	if err != nil {
		return nil, err
	}
	f := &fixture{dir: dir, repo: r, db: db, series: map[[2]int]tracking.SeriesID{}}
	cleanups = append(cleanups, func() { r.Close(); db.Close() })
	if fresh {
		if _, err := db.Exec(mlflowSchema); err != nil {
			return nil, err
		}
		t0 := time.Now()
		if err := writeKV0(ctx, r, shape, runs, metrics, steps); err != nil {
			return nil, err
		}
		if _, err := r.Optimize(ctx); err != nil {
			return nil, err
		}
		t1 := time.Now()
		if err := writeSQLite(db, shape, runs, metrics, steps, 50_000); err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "trackbench: shape %s built: kv0 %v (with Optimize), sqlite %v\n", shape, t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			return nil, err
		}
	}
	for ri := range runs {
		ss, err := r.AllSeries(ctx, runID(shape, ri))
		if err != nil {
			return nil, err
		}
		for _, s := range ss {
			var m int
			fmt.Sscanf(s.Name, "metric/%d", &m)
			f.series[[2]int{ri, m}] = s.ID
		}
	}
	return f, nil
}

func writeKV0(ctx context.Context, r *tracking.Repo, shape string, runs, metrics, steps int) error {
	names := make([]string, metrics)
	for m := range names {
		names[m] = metricName(m)
	}
	for ri := range runs {
		run, err := r.StartRun(ctx, tracking.RunSpec{ID: runID(shape, ri), Name: fmt.Sprint("run-", ri), Experiment: "bench"})
		if err != nil {
			return err
		}
		for s := range steps {
			ts := base.Add(time.Duration(s) * time.Millisecond)
			st := int64(s)
			for m := range metrics {
				if err := run.Track(value(ri, m, s), names[m], tracking.TrackOptions{Step: &st, Time: ts}); err != nil {
					return err
				}
			}
		}
		// Finish would flush once per run; the runs stay "running".
		_ = run
	}
	return r.Flush(ctx)
}

// writeSQLite inserts the points as MLflow's log_batch does: one
// transaction per batch of rows.
func writeSQLite(db *sql.DB, shape string, runs, metrics, steps, batch int) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	for ri := range runs {
		if _, err := tx.Exec(`INSERT INTO runs (run_uuid, name, source_type, source_name, entry_point_name, user_id, status, start_time, end_time, lifecycle_stage, artifact_uri, experiment_id) VALUES (?, ?, 'LOCAL', '', '', 'bench', 'FINISHED', ?, ?, 'active', '', 1)`,
			runID(shape, ri), fmt.Sprint("run-", ri), base.UnixMilli(), base.UnixMilli()+int64(steps)); err != nil {
			return err
		}
	}
	stmt, err := tx.Prepare(`INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	n := 0
	for ri := range runs {
		id := runID(shape, ri)
		for s := range steps {
			for m := range metrics {
				v := value(ri, m, s)
				if _, err := stmt.Exec(metricName(m), v, base.UnixMilli()+int64(s), id, s, math.IsNaN(v)); err != nil {
					return err
				}
				if n++; n%batch == 0 {
					if err := tx.Commit(); err != nil {
						return err
					}
					if tx, err = db.Begin(); err != nil {
						return err
					}
					if stmt, err = tx.Prepare(`INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?, ?, ?, ?, ?, ?)`); err != nil {
						return err
					}
				}
			}
		}
	}
	return tx.Commit()
}

func rate(b *testing.B, points int) {
	b.ReportMetric(float64(points)/b.Elapsed().Seconds(), "points/s")
}

// BenchmarkTrack: shape A's points (100 metrics per step) written through
// Track: buffered (memory store, flushes outside the timer), end to end to
// a local folder (flushes of 50k points, final flush included), and the
// same rows inserted into SQLite in transactions of 50k rows.
func BenchmarkTrack(b *testing.B) {
	ctx := context.Background()
	names := make([]string, metricsA)
	for m := range names {
		names[m] = metricName(m)
	}
	b.Run("buffered/kv0", func(b *testing.B) {
		r, err := tracking.OpenRepo(ctx, store.NewMemory(), "", tracking.RepoOptions{FlushInterval: -1, FlushRows: 1<<21 + 1})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		run, _ := r.StartRun(ctx, tracking.RunSpec{Name: "bench"})
		n := 0
		for b.Loop() {
			if err := run.Track(float64(n), names[n%metricsA]); err != nil {
				b.Fatal(err)
			}
			if n++; n%(1<<21) == 0 {
				b.StopTimer()
				if err := r.Flush(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		}
		rate(b, n)
	})
	b.Run("disk/kv0", func(b *testing.B) {
		st, err := fsstore.Open(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{FlushInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		run, _ := r.StartRun(ctx, tracking.RunSpec{Name: "bench"})
		n := 0
		for b.Loop() {
			if err := run.Track(float64(n), names[n%metricsA]); err != nil {
				b.Fatal(err)
			}
			n++
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
		rate(b, n)
	})
	b.Run("disk/sqlite", func(b *testing.B) {
		db, err := openSQLite(filepath.Join(b.TempDir(), "mlflow.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(mlflowSchema); err != nil {
			b.Fatal(err)
		}
		n := 0
		b.ResetTimer()
		steps := max(1, b.N/metricsA)
		if err := writeSQLite(db, "w", 1, metricsA, steps, 50_000); err != nil {
			b.Fatal(err)
		}
		n = steps * metricsA
		rate(b, n)
	})
}

// sqliteSeries reads one series as MLflow's get_metric_history does.
func sqliteSeries(db *sql.DB, run, key string) (int, error) {
	rows, err := db.Query(`SELECT key, value, timestamp, step, is_nan FROM metrics WHERE run_uuid = ? AND key = ? ORDER BY step`, run, key)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var (
			k      string
			v      float64
			ts, st int64
			nan    bool
		)
		if err := rows.Scan(&k, &v, &ts, &st, &nan); err != nil {
			return 0, err
		}
		n++
	}
	return n, rows.Err()
}

// BenchmarkReadOne reads one 100k-point series of shape A.
func BenchmarkReadOne(b *testing.B) {
	fa, _ := fixtures(b)
	ctx := context.Background()
	id := fa.series[[2]int{0, 42}]
	b.Run("kv0", func(b *testing.B) {
		for b.Loop() {
			md, err := fa.repo.ReadMany(ctx, []tracking.SeriesID{id}, tracking.ReadOptions{})
			if err != nil || md[0].Len() != *stepsA {
				b.Fatalf("%d points, %v", md[0].Len(), err)
			}
		}
	})
	b.Run("sqlite", func(b *testing.B) {
		for b.Loop() {
			n, err := sqliteSeries(fa.db, runID("a", 0), metricName(42))
			if err != nil || n != *stepsA {
				b.Fatalf("%d points, %v", n, err)
			}
		}
	})
}

// BenchmarkReadHundred reads 100 series of shape B (5 runs × 20 metrics),
// all points and downsampled to 500 points each (SQLite: the same
// downsampling in Go after the query).
func BenchmarkReadHundred(b *testing.B) {
	_, fb := fixtures(b)
	ctx := context.Background()
	var ids []tracking.SeriesID
	for ri := range 5 {
		for m := range metricsB {
			ids = append(ids, fb.series[[2]int{ri * 100, m}])
		}
	}
	for _, maxPoints := range []int{0, 500} {
		name := "all"
		if maxPoints > 0 {
			name = fmt.Sprint("max", maxPoints)
		}
		b.Run(name+"/kv0", func(b *testing.B) {
			for b.Loop() {
				md, err := fb.repo.ReadMany(ctx, ids, tracking.ReadOptions{MaxPoints: maxPoints})
				if err != nil || len(md) != 100 || md[0].Len() == 0 {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/sqlite", func(b *testing.B) {
			for b.Loop() {
				for ri := range 5 {
					for m := range metricsB {
						vals, err := sqliteValues(fb.db, runID("b", ri*100), metricName(m))
						if err != nil || len(vals) == 0 {
							b.Fatal(err)
						}
						if maxPoints > 0 {
							_ = tracking.Downsample(vals, maxPoints)
						}
					}
				}
			}
		})
	}
}

func sqliteValues(db *sql.DB, run, key string) ([]float64, error) {
	rows, err := db.Query(`SELECT value, timestamp, step FROM metrics WHERE run_uuid = ? AND key = ? ORDER BY step`, run, key)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []float64
	for rows.Next() {
		var v float64
		var ts, st int64
		if err := rows.Scan(&v, &ts, &st); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// BenchmarkSeriesStats: statistics (count, first/last step, min, max) of
// 1,000 series of shape B (50 runs × 20 metrics); SQLite aggregates them.
// Both use an open handle (kv0: the fixture's, which has read the
// statistics before and checks that the metrics table is unchanged);
// BenchmarkSeriesStatsCold opens a new handle (connection) per call.
func BenchmarkSeriesStats(b *testing.B) { benchSeriesStats(b, false) }

// BenchmarkSeriesStatsCold is BenchmarkSeriesStats with a handle opened
// for each call: kv0 a read-only Repo, SQLite a new connection.
func BenchmarkSeriesStatsCold(b *testing.B) { benchSeriesStats(b, true) }

func benchSeriesStats(b *testing.B, cold bool) {
	_, fb := fixtures(b)
	ctx := context.Background()
	var ids []tracking.SeriesID
	var runs []any
	for ri := range 50 {
		runs = append(runs, runID("b", ri))
		for m := range metricsB {
			ids = append(ids, fb.series[[2]int{ri, m}])
		}
	}
	b.Run("kv0", func(b *testing.B) {
		for b.Loop() {
			r, done := kv0Handle(b, fb, cold)
			st, err := r.SeriesStats(ctx, ids)
			if err != nil || len(st) != 1000 {
				b.Fatal(len(st), err)
			}
			done()
		}
	})
	q := `SELECT run_uuid, key, COUNT(*), MIN(step), MAX(step), MIN(value), MAX(value), MAX(timestamp) FROM metrics WHERE run_uuid IN (?` + repeat(",?", len(runs)-1) + `) GROUP BY run_uuid, key`
	b.Run("sqlite", func(b *testing.B) {
		for b.Loop() {
			db, done := sqliteHandle(b, fb, cold)
			rows, err := db.Query(q, runs...)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var run, key string
				var c, s0, s1, ts int64
				var lo, hi float64
				if err := rows.Scan(&run, &key, &c, &s0, &s1, &lo, &hi, &ts); err != nil {
					b.Fatal(err)
				}
				n++
			}
			rows.Close()
			if n != 1000 {
				b.Fatal(n)
			}
			done()
		}
	})
}

// kv0Handle returns the fixture's handle, or with cold a read-only handle
// opened on the fixture's folder (closed by done).
func kv0Handle(b *testing.B, f *fixture, cold bool) (*tracking.Repo, func()) {
	if !cold {
		return f.repo, func() {}
	}
	st, err := fsstore.Open(filepath.Join(f.dir, "kv0"))
	if err != nil {
		b.Fatal(err)
	}
	r, err := tracking.OpenRepo(context.Background(), st, "", tracking.RepoOptions{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	return r, func() { r.Close() }
}

// sqliteHandle returns the fixture's connection, or with cold a new one
// (closed by done).
func sqliteHandle(b *testing.B, f *fixture, cold bool) (*sql.DB, func()) {
	if !cold {
		return f.db, func() {}
	}
	db, err := openSQLite(filepath.Join(f.dir, "mlflow.db"))
	if err != nil {
		b.Fatal(err)
	}
	return db, func() { db.Close() }
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

// BenchmarkRuns lists the 1,000 runs of shape B through an open handle
// (kv0: the fixture's, which has listed them before and checks that the
// runs table is unchanged).
func BenchmarkRuns(b *testing.B) { benchRuns(b, false) }

// BenchmarkRunsCold is BenchmarkRuns with a handle opened for each call:
// kv0 a read-only Repo, SQLite a new connection.
func BenchmarkRunsCold(b *testing.B) { benchRuns(b, true) }

func benchRuns(b *testing.B, cold bool) {
	_, fb := fixtures(b)
	ctx := context.Background()
	b.Run("kv0", func(b *testing.B) {
		for b.Loop() {
			r, done := kv0Handle(b, fb, cold)
			runs, err := r.Runs(ctx, tracking.RunFilter{})
			if err != nil || len(runs) != runsB {
				b.Fatal(len(runs), err)
			}
			done()
		}
	})
	b.Run("sqlite", func(b *testing.B) {
		for b.Loop() {
			db, done := sqliteHandle(b, fb, cold)
			rows, err := db.Query(`SELECT run_uuid, name, source_type, source_name, entry_point_name, user_id, status, start_time, end_time, deleted_time, source_version, lifecycle_stage, artifact_uri, experiment_id FROM runs`)
			if err != nil {
				b.Fatal(err)
			}
			n := 0
			for rows.Next() {
				var id, name, stype, sname, ep, user, status, stage, uri sql.NullString
				var start, end, del sql.NullInt64
				var ver sql.NullString
				var exp sql.NullInt64
				if err := rows.Scan(&id, &name, &stype, &sname, &ep, &user, &status, &start, &end, &del, &ver, &stage, &uri, &exp); err != nil {
					b.Fatal(err)
				}
				n++
			}
			rows.Close()
			if n != runsB {
				b.Fatal(n)
			}
			done()
		}
	})
}

// BenchmarkDiskBytes reports the bytes on disk of each shape (one
// iteration; the numbers are the bytes metrics).
func BenchmarkDiskBytes(b *testing.B) {
	fa, fb := fixtures(b)
	for _, f := range []struct {
		name string
		fx   *fixture
	}{{"A", fa}, {"B", fb}} {
		b.Run(f.name+"/kv0", func(b *testing.B) {
			for b.Loop() {
			}
			b.ReportMetric(float64(duBytes(filepath.Join(f.fx.dir, "kv0"))), "bytes")
		})
		b.Run(f.name+"/sqlite", func(b *testing.B) {
			for b.Loop() {
			}
			if _, err := f.fx.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(duBytes(filepath.Join(f.fx.dir, "mlflow.db"))), "bytes")
		})
	}
}

// duBytes sums the sizes of the files under path (of the live data only
// for kv0: old versions are not cleaned up, so this counts them too).
func duBytes(path string) int64 {
	var n int64
	_ = filepath.Walk(path, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}
