package store

import "context"

// Syncer is an optional interface for stores whose writes reach stable
// storage only when synced, such as a local filesystem. It lets a writer
// store several objects and then make them durable together (on a
// filesystem: each file synced once and each folder that gained an entry
// synced once, concurrently) instead of paying for both inside every Put.
//
// A store that does not implement it makes every Put durable before
// returning. A wrapper that embeds a Syncer but changes what Put does must
// also override PutNoSync (or hide it), or writes will bypass it.
type Syncer interface {
	// PutNoSync creates or replaces key with data, as Put does: readers
	// see the whole object at once or not at all. It may return before the
	// object would survive a crash; Sync makes it durable.
	PutNoSync(ctx context.Context, key string, data []byte) error
	// Sync makes the objects at keys durable, with their names: once it
	// returns they survive a crash. Syncing an object Put already made
	// durable is allowed.
	Sync(ctx context.Context, keys ...string) error
	// PutIfAbsentAfterSync makes the objects at synced durable, as Sync,
	// and then creates key with data, as PutIfAbsent: the new object is
	// durable when it returns, and never survives a crash that the synced
	// objects do not. The store may overlap the two (a filesystem writes
	// and syncs the new object's temporary file while it syncs the others).
	// The objects at synced are durable when it returns nil or ErrExists.
	PutIfAbsentAfterSync(ctx context.Context, key string, data []byte, synced ...string) error
}

// PutNoSync stores data at key with s.PutNoSync when s is a Syncer and with
// s.Put otherwise (which is durable already). Call Sync on the key before
// anything that must not outlive the object is made durable.
func PutNoSync(ctx context.Context, s Store, key string, data []byte) error {
	if sy, ok := s.(Syncer); ok {
		return sy.PutNoSync(ctx, key, data)
	}
	return s.Put(ctx, key, data)
}

// Sync makes the objects at keys durable: s.Sync when s is a Syncer,
// nothing otherwise.
func Sync(ctx context.Context, s Store, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	if sy, ok := s.(Syncer); ok {
		return sy.Sync(ctx, keys...)
	}
	return nil
}

// PutIfAbsentAfterSync makes the objects at synced durable and then creates
// key with data, as PutIfAbsent; see Syncer.
func PutIfAbsentAfterSync(ctx context.Context, s Store, key string, data []byte, synced ...string) error {
	if sy, ok := s.(Syncer); ok {
		return sy.PutIfAbsentAfterSync(ctx, key, data, synced...)
	}
	return s.PutIfAbsent(ctx, key, data)
}

// Overwriter is an optional interface for stores that can replace a small
// object in place rather than by a new one (on a filesystem: no new file,
// whose allocation costs far more than the write). A reader racing the write
// may see the old bytes, the new ones or, rarely, a mix of the two (or of
// their sizes), and nothing is synced: use it only for advisory objects
// whose readers check what they read, such as Lance's version hint.
type Overwriter interface {
	// Overwrite replaces the content of key with data, creating key (as
	// PutNoSync) when it does not exist.
	Overwrite(ctx context.Context, key string, data []byte) error
}

// Overwrite replaces key's content with s.Overwrite when s is an
// Overwriter, with PutNoSync otherwise.
func Overwrite(ctx context.Context, s Store, key string, data []byte) error {
	if o, ok := s.(Overwriter); ok {
		return o.Overwrite(ctx, key, data)
	}
	return PutNoSync(ctx, s, key, data)
}

// PartsPutter is an optional interface for stores that can store an object
// given as consecutive parts without joining them in memory first (a
// filesystem writes them one after the other).
type PartsPutter interface {
	// PutPartsNoSync is PutNoSync of the concatenation of parts.
	PutPartsNoSync(ctx context.Context, key string, parts [][]byte) error
}

// PutPartsNoSync stores the concatenation of parts at key, as PutNoSync:
// without joining them on a PartsPutter.
func PutPartsNoSync(ctx context.Context, s Store, key string, parts [][]byte) error {
	if pp, ok := s.(PartsPutter); ok {
		return pp.PutPartsNoSync(ctx, key, parts)
	}
	var data []byte
	if len(parts) == 1 {
		data = parts[0]
	} else {
		n := 0
		for _, p := range parts {
			n += len(p)
		}
		data = make([]byte, 0, n)
		for _, p := range parts {
			data = append(data, p...)
		}
	}
	return PutNoSync(ctx, s, key, data)
}
