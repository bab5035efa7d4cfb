package repeat

import "github.com/loopguard/loopguard/rule"

// Feedback is the model-facing text of a stop with this evidence, for the
// tests of package repeat_test.
func (e Evidence) Feedback(p rule.Phase) string { return e.feedback(p) }

// WarningFeedback is the model-facing text of the rule's warning w, for the
// tests of package repeat_test.
func WarningFeedback(w rule.Warning) string { return warningFeedback(w) }

// BareNumber is bareNumber of a string, for the tests of package
// repeat_test.
func BareNumber(s string) (string, bool) { return bareNumber(s) }
