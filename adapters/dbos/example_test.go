package dbos_test

import (
	"fmt"

	lgdbos "github.com/loopguard/loopguard/adapters/dbos"
)

// The guard is made once, when the program starts; each workflow starts
// its run with it (Guard.Start), which records the options as the
// workflow's first step. An options document that does not build is
// refused here, naming the field.
func ExampleNew() {
	lg, err := lgdbos.New(lgdbos.Options{Config: []byte(`{"maxSteps": 60, "budget": {"maxTotalTokens": 200000}}`)})
	fmt.Println(lg != nil, err)

	_, err = lgdbos.New(lgdbos.Options{Config: []byte(`{"maxStep": 60}`)})
	fmt.Println(err != nil)
	// Output:
	// true <nil>
	// true
}
