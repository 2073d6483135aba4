//go:build !unix

package kvdb

import "github.com/kv0/kv0/core/kv"

func defaultBlocks() kv.BlockAllocator { return nil }
