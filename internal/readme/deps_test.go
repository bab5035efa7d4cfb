package readme

// The core's packages that the core's blocks import, linked into this test
// so that go test's cache runs it again when one of them changes: it cannot
// see what the go build that the test starts reads. TestEveryBlockIsBuilt
// checks that the list holds every such package.
import (
	_ "github.com/loopguard/loopguard/detector"
	_ "github.com/loopguard/loopguard/detector/finish"
	_ "github.com/loopguard/loopguard/guard"
	_ "github.com/loopguard/loopguard/guardtest"
	_ "github.com/loopguard/loopguard/rule"
	_ "github.com/loopguard/loopguard/snapshot"
)
