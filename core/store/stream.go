package store

import "context"

// ObjectWriter stores one object whose bytes are produced a piece at a
// time (see NewObjectWriter), so that a large object need not be held in
// memory whole. Nothing is visible at the key before Commit.
type ObjectWriter interface {
	// Append adds p to the object. The writer may keep p until Commit or
	// Abort returns: the caller must not modify it meanwhile.
	Append(p []byte) error
	// Commit stores the object at its key, whole, as PutNoSync does. The
	// writer cannot be used afterwards.
	Commit(ctx context.Context) error
	// Abort discards what was appended. It does nothing after a successful
	// Commit, so it can be deferred.
	Abort()
}

// Streamer is an optional interface for stores that write an object as
// its pieces arrive (a filesystem appends them to a temporary file).
type Streamer interface {
	// CreateNoSync starts the object key, to be stored as PutNoSync does
	// when the writer commits.
	CreateNoSync(ctx context.Context, key string) (ObjectWriter, error)
}

// NewObjectWriter returns a writer of the object key on s: the store's own
// on a Streamer; otherwise one that keeps the pieces and stores them with
// PutPartsNoSync on Commit.
func NewObjectWriter(ctx context.Context, s Store, key string) (ObjectWriter, error) {
	if st, ok := s.(Streamer); ok {
		return st.CreateNoSync(ctx, key)
	}
	return &partsWriter{s: s, key: key}, nil
}

type partsWriter struct {
	s     Store
	key   string
	parts [][]byte
}

func (w *partsWriter) Append(p []byte) error {
	if len(p) > 0 {
		w.parts = append(w.parts, p)
	}
	return nil
}

func (w *partsWriter) Commit(ctx context.Context) error {
	parts := w.parts
	w.parts = nil
	return PutPartsNoSync(ctx, w.s, w.key, parts)
}

func (w *partsWriter) Abort() { w.parts = nil }
