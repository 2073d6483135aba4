// Package tagdecode decodes protobuf wire bytes into the message structs that
// protoc-gen-go-lite generates in the lancepb packages, driven by the
// structs' protobuf struct tags instead of per-type generated code.
//
// It exists for the size of the WebAssembly module. Each generated
// UnmarshalVT method is an unrolled decoder of its message's fields; the
// lancepb packages' methods come to about 0.7 MB of wasm code. In wasm
// builds lancepb.Unmarshal calls this package instead, so that none of them
// is linked: the module loses about 0.75 MB, or 60 KB after brotli, net of
// the 65 KB of code of this package. Native builds keep calling the
// generated methods, which are a little faster. lancepb.Unmarshal is
// what kv0's core uses to read Lance metadata: manifests, transactions and
// index sections in core/lance, column metadata, file descriptors and page
// encodings in core/lancefile.
//
// Unmarshal gives what the generated UnmarshalVT gives, down to its
// quirks: it accepts and refuses the same inputs; the last value of a
// scalar field wins; repeated varints may be packed or not; a message
// field that occurs again merges into the first, and so does the member a
// oneof holds; a map entry without key or value gets the zero value (a nil
// message); 32-bit and bool fields take a varint truncated, or compared
// with zero, as generated; a packed varint or a map entry's key and value
// may run past their field's length (up to the end of the message), which
// the generated code does not check; unknown fields of every wire type,
// groups included, are skipped with the generated code's own helper and
// kept in the message, so that MarshalVT writes them again and EqualVT
// compares them; strings are not checked for valid UTF-8, as the
// generator adds that check for editions files only, and lancepb's are
// proto3. The one difference is that messages nested more than 10,000 deep
// are refused, where the generated code recurses as deep as the input goes.
//
// On the first use of a message type, Unmarshal builds a plan from the
// struct tags of the type and of the types it holds: for each field
// number, the field's offset, how its values are encoded and stored, and
// the plan of its message type. Decoding then goes by the plan, reading
// and writing the fields through unsafe pointers. Reflection cannot find
// the types that can fill a oneof field (they are tied to it only by an
// unexported marker method), so the lancepb packages list them in their
// generated oneofs.go (see internal/genoneofs).
//
// The package calls no reflect method lookup (Value.Method, Type.Method,
// MethodByName): any of them makes the linker keep every exported method
// of every type that can be reached by reflection, which would cost the
// module more than this package saves.
package tagdecode
