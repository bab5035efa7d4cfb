package fake

// chat returns the whole JSON response for rep and, when stream is set, the
// server-sent events of the same response in the order the real API sends
// them (with the terminal event, such as "data: [DONE]" for chat).
func chat(model string, n int, rep Reply, stream bool) (whole []byte, events [][]byte) {
	panic("fake: chat is not written yet")
}
