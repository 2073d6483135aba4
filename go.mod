module github.com/kv0/kv0

go 1.26

require google.golang.org/protobuf v1.36.12
