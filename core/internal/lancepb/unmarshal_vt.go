//go:build !wasm

package lancepb

import "fmt"

// vtUnmarshaler is what the generated code gives every message.
type vtUnmarshaler interface {
	UnmarshalVT([]byte) error
}

// Unmarshal decodes the protobuf encoding b into m, merging it into what m
// holds. This build uses the message's generated UnmarshalVT method; the
// WebAssembly builds decode with tagdecode, to the same result.
func Unmarshal(b []byte, m Message) error {
	u, ok := m.(vtUnmarshaler)
	if !ok {
		return fmt.Errorf("lancepb: %T has no UnmarshalVT method", m)
	}
	return u.UnmarshalVT(b)
}
