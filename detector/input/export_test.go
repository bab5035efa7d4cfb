package input

import "github.com/loopguard/loopguard/rule"

// Feedback is the model-facing text of a stop with this evidence, for the
// tests of package input_test.
func (e Evidence) Feedback() string { return e.feedback() }

// WarningFeedback is the model-facing text of the rule's warning w, for the
// tests of package input_test.
func WarningFeedback(w rule.Warning) string { return warningFeedback(w) }
