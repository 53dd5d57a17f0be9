//go:build !linux

package sim

import "errors"

// newOSTimer has no precise timer outside Linux; streams use time.Timer.
func newOSTimer() (osTimer, error) {
	return nil, errors.New("no precise OS timer on this platform")
}
