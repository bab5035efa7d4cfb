package wire

// Responses is a stand-in until its helper's file lands. TEMPORARY.
type Responses struct{ Chat }

func (Responses) Name() string { return "responses" }
