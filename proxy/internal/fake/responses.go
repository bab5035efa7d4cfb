package fake

// responses returns the whole JSON response for rep and, when stream is set, the
// server-sent events of the same response in the order the real API sends
// them (with the terminal event, such as "data: [DONE]" for chat).
func responses(model string, n int, rep Reply, stream bool) (whole []byte, events [][]byte) {
	panic("fake: responses is not written yet")
}
