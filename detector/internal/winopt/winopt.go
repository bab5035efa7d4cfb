// Package winopt checks the options that the rules counting within a window
// of steps share (package text's and package input's): a threshold and a
// window, each 0 for its default, with the same bounds and messages.
package winopt

import (
	"fmt"

	"github.com/loopguard/loopguard/rule"
)

// Bounds are a rule's defaults and largest window.
type Bounds struct {
	// Rule is the rule's name, for its errors.
	Rule string
	// DefaultThreshold and DefaultWindow replace a zero Threshold or
	// Window.
	DefaultThreshold, DefaultWindow int
	// MaxWindow is the largest Window.
	MaxWindow int
}

// Check returns a *rule.OptionError for each of threshold and window that is
// out of bounds: a window must be 0 or from 2 to MaxWindow, a threshold 0
// or at least 2. When both are in bounds it replaces zeros by the defaults,
// and a threshold that then exceeds the window is an error.
func (b Bounds) Check(threshold, window *int) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &rule.OptionError{Detector: b.Rule, Field: field, Err: fmt.Errorf(format, args...)})
	}
	if *window != 0 && (*window < 2 || *window > b.MaxWindow) {
		bad("Window", "must be 0 (the default, %d) or from 2 to %d, not %d", b.DefaultWindow, b.MaxWindow, *window)
	}
	if *threshold != 0 && *threshold < 2 {
		bad("Threshold", "must be 0 (the default, %d) or at least 2, not %d", b.DefaultThreshold, *threshold)
	}
	if len(errs) > 0 {
		return errs
	}
	if *window == 0 {
		*window = b.DefaultWindow
	}
	if *threshold == 0 {
		*threshold = b.DefaultThreshold
	}
	if *threshold > *window {
		bad("Threshold", "%d exceeds the window of %d steps", *threshold, *window)
	}
	return errs
}
