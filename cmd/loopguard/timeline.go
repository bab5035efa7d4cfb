package main

import (
	"github.com/loopguard/loopguard/guard"
	"github.com/loopguard/loopguard/trace"
)

// A timeline is a run step by step, as audit --html draws it.
type timeline struct{}

// add records an entry: rec and g are nil for the entries after the run's
// stop, which are read but not judged.
func (t *timeline) add(e trace.Entry, rec *record, g *guard.Guard) {
	if t == nil {
		return
	}
}
