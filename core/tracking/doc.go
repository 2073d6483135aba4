// Package tracking is kv0's experiment-tracking layer: runs, parameters,
// metric series and records stored as columnar Lance tables in one
// repository, written at high rates by training hosts and read by
// dashboards straight from any store.Store (a local folder, an object
// store, or a static HTTP server from a browser: the package is pure Go and
// builds for js/wasm).
//
// # Layout
//
// A repository is a folder (a key prefix) with these Lance datasets:
//
//	runs.lance              one row per change of a run (change log, newest seq wins per field)
//	params.lance            one row per change of a (run, dotted key) parameter
//	series.lance            one row per metric series (series_id = xxh3 of run, name, context)
//	metrics.lance           points, plus statistics deltas and WAL marks (series_id 0)
//	records/<table>.lance   one dataset per records table, keyed by (run_id, item_id)
//
// The columns are listed in schema.go. Runs and parameters are change logs
// rather than rows updated in place: appends never conflict, so any number
// of processes may write to one repository at once.
//
// # Writing
//
// A Repo handle buffers every write (StartRun, Run.Track, Run.SetParams,
// Run.Update, Run.Finish, UpdateRun) in one shared in-memory buffer. A flush
// appends each non-empty table once, in the order runs, params, series,
// metrics, so a reader never sees a point of a series it cannot name.
// Flushes happen when RepoOptions.FlushRows points are buffered, every
// FlushInterval, on Flush, Run.Finish and Close. When a flush fails, its
// rows go back to the buffer and the next flush retries them.
//
// Each flush also appends, in the same commit as the points, one
// statistics delta per series it touched (see stats.go for the encoding),
// so SeriesStats never reads points. Deltas merge associatively.
//
// # Reading
//
// Read methods (Runs, Run, AllParams, AllSeries, SeriesStats, ReadMany)
// flush the handle's own buffer first (read-your-writes), then read the
// latest committed version of each table. ReadMany downsamples a series for
// charts while keeping its first and last point and each bucket's finite
// minimum and maximum, so spikes survive; a NaN or ±Inf never takes a
// spike's place but is counted in its bucket (MetricData.Buckets).
//
// # Heartbeats
//
// A writing handle records a heartbeat for each run it writes: the
// creation row carries one, and a flush adds a heartbeat row (fields bit
// FieldHeartbeat, the time in updated_at) per active run when the last is
// RepoOptions.HeartbeatInterval old; an idle handle flushes for it. Reads
// report a run whose stored status is running but whose heartbeat is older
// than RepoOptions.CrashedAfter (default 5 minutes) as StatusCrashed, which
// is never stored. Runs without heartbeats (older writers) stay running.
//
// # Maintenance
//
// Optimize folds run change rows, rewrites the metrics points it has not
// sorted yet into fragments sorted by (series_id, step) with exact
// statistics, folds superseded records, and compacts the small tables.
// Purge additionally removes every old version.
//
// # Concurrency
//
// A Repo and its Run handles are safe for concurrent use. Several handles
// (in one process or many) may write different runs to one repository;
// two handles writing the same series at the same steps at the same time
// are not supported (statistics would count both).
//
// One run has one writer at a time: a handle holds each run it writes
// under a claim, a create-only object in the repository's _claims folder
// (claim.go). ResumeRun takes a run over by creating the next claim, so
// of several handles resuming a run at once exactly one succeeds (the
// others get ErrHeld); with ResumeOptions.OnlyAbandoned it first refuses a
// run whose holder may still be alive. A handle whose run was taken over
// finds out at its next flush, which drops its uncommitted writes to the
// run and reports ErrHeld, as do its later writes to it.
package tracking
