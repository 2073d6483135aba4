package tagdecode

import (
	"github.com/kv0/kv0/core/internal/lancepb/enc20pb"
	"github.com/kv0/kv0/core/internal/lancepb/enc21pb"
	"github.com/kv0/kv0/core/internal/lancepb/file2pb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// wrappers are the oneof wrapper types of the lancepb packages that have
// oneofs (their generated oneofs.go). A package with oneofs missing here
// makes the plans of its messages fail, and the tests with them.
var wrappers = [][]any{
	enc20pb.OneofWrappers,
	enc21pb.OneofWrappers,
	file2pb.OneofWrappers,
	tablepb.OneofWrappers,
}
