//go:build wasm

package lancepb

import "github.com/kv0/kv0/core/internal/lancepb/tagdecode"

// Unmarshal decodes the protobuf encoding b into m, merging it into what m
// holds. This WebAssembly build decodes with tagdecode, driven by the
// messages' struct tags, so that the generated UnmarshalVT methods (about
// 0.7 MB of wasm code) are not linked; native builds call UnmarshalVT, to
// the same result.
func Unmarshal(b []byte, m Message) error {
	return tagdecode.Unmarshal(b, m)
}
