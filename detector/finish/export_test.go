package finish

// Feedback is the model-facing text of a stop with this code and evidence,
// for the tests of package finish_test.
func (e Evidence) Feedback(code string) string { return e.feedback(code) }
