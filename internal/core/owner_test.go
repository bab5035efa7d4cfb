package core_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/detector"
	guard "github.com/loopguard/loopguard/internal/core"
	"github.com/loopguard/loopguard/internal/testutil"
)

// owned is a custom detector that embeds the ownership marker.
type owned struct {
	guard.Owned
	probe
}

// TestSharedDetectorsAreRefused: one detector.Defaults() slice given to two
// guards is an error naming every detector, and errors.Is finds
// ErrDetectorInUse; nothing of the second guard's attempt sticks.
func TestSharedDetectorsAreRefused(t *testing.T) {
	dets := detector.Defaults()
	g1, err := guard.New(dets...)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := guard.New(dets...)
	if !errors.Is(err, guard.ErrDetectorInUse) || g2 != nil {
		t.Fatalf("guard.New of detectors another guard holds = %v, %v; want ErrDetectorInUse", g2, err)
	}
	var de *guard.DetectorError
	if !errors.As(err, &de) {
		t.Fatalf("error %v is no *guard.DetectorError", err)
	}
	for _, d := range dets {
		if !strings.Contains(err.Error(), `detector "`+d.Name()+`"`) {
			t.Errorf("the error does not name %q:\n%v", d.Name(), err)
		}
	}
	// The first guard still works alone: three same calls, the third stops.
	for i := range 3 {
		if v := g1.Check(testutil.Calls(testutil.Q("x"))); v.Stop != (i == 2) {
			t.Errorf("step %d: stop %v", i, v.Stop)
		}
	}
	// Restore into held detectors is refused the same way.
	data, err := g1.Snapshot(guard.SnapshotOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guard.Restore(data, dets...); !errors.Is(err, guard.ErrDetectorInUse) {
		t.Errorf("Restore into held detectors: %v, want ErrDetectorInUse", err)
	}
	runtime.KeepAlive(g1)
}

// TestPartlyHeldDetectorsClaimNothing: when one detector of the list is held,
// the others are not taken either.
func TestPartlyHeldDetectorsClaimNothing(t *testing.T) {
	dets := detector.Defaults()
	g1, err := guard.New(dets[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guard.New(dets...); !errors.Is(err, guard.ErrDetectorInUse) {
		t.Fatalf("err = %v, want ErrDetectorInUse", err)
	}
	if _, err := guard.New(dets[1:]...); err != nil {
		t.Errorf("the detectors that were free are held after a refused New: %v", err)
	}
	runtime.KeepAlive(g1)
}

// TestCollectedGuardFreesItsDetectors: a guard that is no longer reachable
// holds its detectors only until the garbage collector frees it.
func TestCollectedGuardFreesItsDetectors(t *testing.T) {
	dets := detector.Defaults()
	func() {
		g, err := guard.New(dets...)
		if err != nil {
			t.Fatal(err)
		}
		g.Check(testutil.Calls(testutil.Q("x")))
	}()
	runtime.GC()
	runtime.GC()
	if _, err := guard.New(dets...); err != nil {
		t.Errorf("detectors of a collected guard are still held: %v", err)
	}
}

// TestFailedRestoreFreesItsDetectors: a Restore that fails holds nothing, so
// the usual fallback (a new guard from the same detectors) works at once.
func TestFailedRestoreFreesItsDetectors(t *testing.T) {
	dets := detector.Defaults()
	if _, err := guard.Restore([]byte(`{"version": 1}`), dets...); err == nil {
		t.Fatal("Restore of a bad snapshot succeeded")
	}
	g, err := guard.New(dets...)
	if err != nil {
		t.Fatalf("New after a failed Restore: %v", err)
	}
	runtime.KeepAlive(g)
}

// TestCustomDetectorOwnership: a custom detector that embeds guard.Owned is
// refused by a second guard; one without it cannot be told apart and is
// accepted (documented).
func TestCustomDetectorOwnership(t *testing.T) {
	mine := &owned{probe: probe{name: "mine"}}
	g1, err := guard.New(mine)
	if err != nil {
		t.Fatal(err)
	}
	_, err = guard.New(mine)
	var de *guard.DetectorError
	if !errors.As(err, &de) || de.Name != "mine" || !errors.Is(err, guard.ErrDetectorInUse) {
		t.Errorf("second guard of an owned custom detector: %v", err)
	}
	plain := &probe{name: "plain"}
	g2, err := guard.New(plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guard.New(plain); err != nil {
		t.Errorf("a detector without the marker is refused: %v", err)
	}
	runtime.KeepAlive(g1)
	runtime.KeepAlive(g2)
}
