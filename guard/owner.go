package guard

import (
	"errors"
	"sync"
	"weak"
)

// ErrDetectorInUse is wrapped (in a *DetectorError that names the detector)
// by the error of [New], [Options.New] and [Restore] for a detector that
// another guard holds.
var ErrDetectorInUse = errors.New("detector is held by another guard: build new detectors for each guard (detector.Defaults(), Config.New)")

// Owned marks a detector as the state of one guard. Embed it in a detector
// type (the built-in detectors do):
//
//	type MyDetector struct {
//		guard.Owned
//		...
//	}
//
// and [Options.New] refuses the detector, with an error that wraps
// [ErrDetectorInUse] and names it, while another guard that holds it is
// still reachable: two guards can then never share a detector's state by
// accident (one of them would stop on the other's calls, and the two would
// race when used at once). A guard that is no longer reachable, once the
// garbage collector has freed it, no longer holds its detectors; neither
// does a guard whose [Restore] failed. The zero value is ready to use, and
// it must not be copied after a guard has been built with its detector.
//
// A detector without Owned cannot be told apart when it is shared: guard.New
// accepts it as many times as it is given. That is only safe for a detector
// that keeps no state; package guardtest reports a detector that is shared
// silently.
type Owned struct {
	mu    sync.Mutex
	owner weak.Pointer[Guard]
}

// ownership returns the marker; it makes every type that embeds Owned an
// owned detector.
func (o *Owned) ownership() *Owned { return o }

// owned is implemented by the detectors that embed Owned.
type owned interface{ ownership() *Owned }

// claim makes g the owner, unless another guard that is still reachable
// owns the detector.
func (o *Owned) claim(g *Guard) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cur := o.owner.Value(); cur != nil && cur != g {
		return false
	}
	o.owner = weak.Make(g)
	return true
}

// release frees the detector if g owns it.
func (o *Owned) release(g *Guard) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.owner.Value() == g {
		o.owner = weak.Pointer[Guard]{}
	}
}

// claimAll makes g the owner of every owned detector of dets, or of none: it
// returns an error naming each detector that another guard holds. index
// gives each detector's position in the list given to the constructor.
func (g *Guard) claimAll(dets []Detector, index func(name string) int) error {
	var errs []error
	var claimed []*Owned
	for _, d := range dets {
		od, ok := d.(owned)
		if !ok {
			continue
		}
		o := od.ownership()
		if o == nil {
			continue
		}
		if !o.claim(g) {
			errs = append(errs, &DetectorError{Name: d.Name(), Index: index(d.Name()), Err: ErrDetectorInUse})
			continue
		}
		claimed = append(claimed, o)
	}
	if len(errs) > 0 {
		for _, o := range claimed {
			o.release(g)
		}
		return errors.Join(errs...)
	}
	return nil
}

// releaseAll frees every detector g owns, for a guard that is thrown away.
func (g *Guard) releaseAll() {
	for _, d := range g.dets {
		if od, ok := d.(owned); ok {
			if o := od.ownership(); o != nil {
				o.release(g)
			}
		}
	}
}
