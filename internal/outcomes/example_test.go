package outcomes_test

import (
	"fmt"

	"github.com/loopguard/loopguard/canonical"
	"github.com/loopguard/loopguard/internal/outcomes"
)

func ExampleSet() {
	var s outcomes.Set
	s.Init(2) // remember the newest two outcomes
	for _, result := range []string{"page 1", "page 2", "page 1", "page 3", "page 1"} {
		fmt.Println(result, "new:", s.Add(canonical.HashString(result)))
	}
	// Output:
	// page 1 new: true
	// page 2 new: true
	// page 1 new: false
	// page 3 new: true
	// page 1 new: true
}
