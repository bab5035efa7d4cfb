package proxy

import (
	"encoding/json"

	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/proxy/internal/wire"
	"github.com/loopguard/loopguard/trace"
)

// formatOf is the transcript format of an API's history items.
func formatOf(api wire.API) trace.Format {
	switch api.Name() {
	case "chat":
		return trace.OpenAI
	case "messages":
		return trace.Anthropic
	}
	return trace.Responses
}

// stepsOf reads a tail of a history into steps.
func stepsOf(api wire.API, items [][]byte) ([]guard.Step, error) {
	raw := make([]json.RawMessage, len(items))
	for i, it := range items {
		raw[i] = it
	}
	return trace.StepsOf(formatOf(api), raw)
}
