package finish

// feedback is the model-facing text of a stop with this code and evidence:
// none for a normal finish ([Evidence.NormalFinish]). The rule judges
// nothing in preflight, so it has no text of a refusal.
func (e Evidence) feedback(code string) string {
	if e.NormalFinish() {
		return ""
	}
	switch code {
	case CodeTerminal:
		return "Your last turn ended in a way that lets the run go no further (for example, the output was cut off or withheld). Give a short, complete final answer."
	case CodeOther, CodeOtherTextOnly:
		return "Your last turn ended without a tool call and without a normal finish, so the run is being ended here. If you have an answer, state it plainly and completely."
	}
	return ""
}
