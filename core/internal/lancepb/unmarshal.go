package lancepb

// Message is a message type of the lancepb packages: every generated
// message (a pointer to its struct) has the ProtoMessage marker method.
//
// The interface deliberately has no UnmarshalVT method: an interface method
// that is called keeps that method of every type stored in such an
// interface, which in WebAssembly builds would link the generated decoders
// Unmarshal exists to leave out.
type Message interface {
	ProtoMessage()
}
