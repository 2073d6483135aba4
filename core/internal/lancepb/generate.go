// Package lancepb is the home of kv0's protobuf definitions of the Lance
// format. The .proto files in proto/lance are wire-compatible with lance 8
// (table.proto and transaction.proto with lance 12, whose fields they
// carry); the Go code in the sub-packages is generated from them by `make proto`
// with protoc-gen-go-lite, which writes plain structs with MarshalVT,
// UnmarshalVT, SizeVT, CloneVT and EqualVT methods and no protobuf
// reflection (it keeps the wasm module small). The well-known types Lance
// uses (google.protobuf.Any, Timestamp and Empty) are generated the same
// way into wktpb, from the definitions that ship with protoc.
//
// After protoc, genoneofs (internal/genoneofs) writes oneofs.go in each
// sub-package with oneof fields: the list of its oneof wrapper types, which
// tagdecode needs and reflection cannot find.
//
// Unmarshal decodes a message with its generated UnmarshalVT method, except
// in WebAssembly builds, where it uses tagdecode instead so that the
// generated decoders are not linked (see package tagdecode).
//
// Only kv0's core packages use these types; they never appear in public APIs.
package lancepb

//go:generate protoc -I proto --go-lite_out=../../.. --go-lite_opt=module=github.com/kv0/kv0 --go-lite_opt=features=marshal+unmarshal+size+equal+clone --go-lite_opt=Mgoogle/protobuf/any.proto=github.com/kv0/kv0/core/internal/lancepb/wktpb;wktpb --go-lite_opt=Mgoogle/protobuf/timestamp.proto=github.com/kv0/kv0/core/internal/lancepb/wktpb;wktpb --go-lite_opt=Mgoogle/protobuf/empty.proto=github.com/kv0/kv0/core/internal/lancepb/wktpb;wktpb google/protobuf/any.proto google/protobuf/timestamp.proto google/protobuf/empty.proto lance/file.proto lance/file2.proto lance/encodings_v2_0.proto lance/encodings_v2_1.proto lance/table.proto lance/transaction.proto
//go:generate go run ./internal/genoneofs/main.go
