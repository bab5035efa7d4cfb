package trace

import (
	"fmt"
	"strings"

	"github.com/loopguard/loopguard/internal/spell"
)

// This file holds the keys of loopguard's step lines and what is said about
// a key that is not one of them.

// A place is where a key stands in a step line.
type place uint8

const (
	placeStep  place = iota // the step object itself
	placeCall               // an entry of toolCalls, refused or preflight
	placeUsage              // the usage object
)

// knownKeys are the keys of each place, in the order error messages list
// them.
var knownKeys = [...][]string{
	placeStep:  {"text", "toolCalls", "finishReason", "usage", "input", "userReply", "refused", "meta"},
	placeCall:  {"name", "args", "result", "error", "id", "meta"},
	placeUsage: {"inputTokens", "outputTokens", "totalTokens", "costUsd", "durationMs"},
}

// controlKeys are the keys of the control lines replay and audit read.
var controlKeys = []string{"preflight", "snapshot", "reset"}

// providerKeys maps keys of the providers' shapes (lower-cased, without
// underscores and hyphens) to the key a step line uses for the same thing,
// or to "" for a key that only a provider's message has.
var providerKeys = [...]map[string]string{
	placeStep: {
		"functioncall": "toolCalls", "tooluse": "toolCalls", "calls": "toolCalls",
		"stopreason": "finishReason",
		"content":    "text",
		"role":       "", "choices": "",
	},
	placeCall: {
		"arguments": "args", "parameters": "args", "params": "args", "input": "args",
		"output": "result", "content": "result", "observation": "result",
		"iserror":  "error",
		"toolname": "name", "tool": "name", "function": "name",
		"toolcallid": "id", "tooluseid": "id", "callid": "id",
	},
	placeUsage: {
		"prompttokens": "inputTokens", "completiontokens": "outputTokens",
		"cost": "costUsd", "costusd": "costUsd", "duration": "durationMs", "latencyms": "durationMs",
	},
}

// An UnknownKeyError is a key that loopguard's step lines do not have.
type UnknownKeyError struct {
	// Key is the key with its place in the line: "tool_calls",
	// "toolCalls[0].arguments", "usage.prompt_tokens".
	Key string
	// Suggestion is the known key it resembles ("toolCalls", "args"), or
	// "" when there is none.
	Suggestion string
	// Provider is set for a key that only an OpenAI or Anthropic message
	// has ("role", "choices"): the line is a provider's, not a step.
	Provider bool
}

// Error says which key, and what was probably meant.
func (e *UnknownKeyError) Error() string {
	switch {
	case e.Suggestion != "":
		return fmt.Sprintf("unknown key %q (did you mean %q?)", e.Key, e.Suggestion)
	case e.Provider:
		return fmt.Sprintf("unknown key %q (an OpenAI or Anthropic message? read such logs as openai or anthropic)", e.Key)
	}
	return fmt.Sprintf("unknown key %q", e.Key)
}

// Resembles reports whether the key resembles a known one: a different
// case, underscores or hyphens, a small typo, or a provider's spelling.
// Such a key is an error whatever the [KeyPolicy].
func (e *UnknownKeyError) Resembles() bool { return e.Suggestion != "" || e.Provider }

// unknownKey describes key, found at p under the path prefix (such as
// "toolCalls[0]").
func unknownKey(prefix string, p place, key string) *UnknownKeyError {
	e := &UnknownKeyError{Key: key}
	if prefix != "" {
		e.Key = prefix + "." + key
	}
	e.Suggestion, e.Provider = resemble(p, key)
	return e
}

// resemble returns the known key of place p that key was probably meant to
// be, or provider for a key only a provider's message has.
func resemble(p place, key string) (suggestion string, provider bool) {
	norm := normKey(key)
	for _, k := range knownKeys[p] {
		if strings.EqualFold(k, key) || normKey(k) == norm {
			return k, false
		}
	}
	if s, ok := providerKeys[p][norm]; ok {
		return s, s == ""
	}
	if p == placeStep {
		// A usage number written beside the text instead of inside usage.
		for _, k := range knownKeys[placeUsage] {
			if normKey(k) == norm {
				return "usage." + k, false
			}
		}
	}
	if len(key) < 3 || len(key) > spell.MaxLen {
		return "", false
	}
	best, bestDist := "", 3
	for _, k := range knownKeys[p] {
		limit := 2
		if len(k) <= 4 {
			limit = 1
		}
		if d := spell.Distance(strings.ToLower(key), strings.ToLower(k)); d <= limit && d < bestDist {
			best, bestDist = k, d
		}
	}
	return best, false
}

// normKey lower-cases a key and drops the separators that spellings of one
// name differ by.
func normKey(key string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(key) {
		switch r {
		case '_', '-', ' ', '.':
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isKnown reports whether key is one of place p's keys, exactly.
func isKnown(p place, key string) bool {
	for _, k := range knownKeys[p] {
		if k == key {
			return true
		}
	}
	return false
}
