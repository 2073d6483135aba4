package tracking

import "errors"

// Errors of the tracking layer. Match them with errors.Is; they are wrapped
// with context (the run or table concerned).
var (
	// ErrNotFound means a run, series, records table or item does not exist
	// (or its run was deleted).
	ErrNotFound = errors.New("tracking: not found")
	// ErrReadOnly means a write was attempted on a read-only handle.
	ErrReadOnly = errors.New("tracking: repository opened read-only")
	// ErrClosed means the Repo handle was closed.
	ErrClosed = errors.New("tracking: repository closed")
	// ErrInvalid means an argument is invalid: an empty metric name, a
	// value that cannot be stored as JSON, a malformed record.
	ErrInvalid = errors.New("tracking: invalid argument")
	// ErrExists means a run with the given id already exists.
	ErrExists = errors.New("tracking: already exists")
	// ErrCorrupt means a reserved row (statistics delta, WAL record) could
	// not be decoded.
	ErrCorrupt = errors.New("tracking: corrupt data")
	// ErrTagHoldsDeleted means Purge found a tag on an older version that
	// still holds rows of a deleted run; the error names the tag. Purge
	// with force deletes such tags instead.
	ErrTagHoldsDeleted = errors.New("tracking: tag keeps rows of deleted runs")
)
