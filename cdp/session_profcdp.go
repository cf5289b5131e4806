package cdp

import "github.com/chromedp/cdproto/target"

// ChangedTarget returns the target a Target.targetCreated or
// Target.targetInfoChanged event describes: those who follow a browser's
// targets (with Target.setDiscoverTargets) treat both alike. It returns nil
// for any other event, and for one that does not decode.
func ChangedTarget(ev Event) *target.Info {
	if e, ok, err := Decode(ev, target.TargetCreated); ok {
		if err != nil {
			return nil
		}
		return e.TargetInfo
	}
	if e, ok, err := Decode(ev, target.TargetInfoChanged); ok && err == nil {
		return e.TargetInfo
	}
	return nil
}
