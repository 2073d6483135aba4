// Package lancepb is the home of kv0's protobuf definitions of the Lance
// format. The .proto files in proto/lance are wire-compatible with lance 8;
// the Go code in the sub-packages is generated from them by `make proto`.
//
// Only kv0's core packages use these types; they never appear in public APIs.
package lancepb

//go:generate protoc -I proto --go-lite_out=../../.. --go-lite_opt=module=github.com/kv0/kv0 --go-lite_opt=features=marshal+unmarshal+size+equal+clone lance/file.proto lance/file2.proto lance/encodings_v2_0.proto lance/encodings_v2_1.proto lance/table.proto lance/transaction.proto
