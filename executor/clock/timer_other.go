//go:build !linux

package clock

import "errors"

// newOSTimer has no precise timer outside Linux; Sleepers use time.Timer.
func newOSTimer() (osTimer, error) {
	return nil, errors.New("no precise OS timer on this platform")
}
