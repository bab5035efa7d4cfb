package proxy_test

import (
	"testing"

	"github.com/loopguard/loopguard/internal/readme"
)

// TestGoBlocks builds the Go blocks of README.md and docs/*.md that import
// this module, here, where the module's own tests built its dependencies
// already: see internal/readme.
func TestGoBlocks(t *testing.T) { readme.Test(t) }
