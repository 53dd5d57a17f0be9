package state

import "errors"

// ErrNoState: a directory holds no applied plan: nothing was applied
// with it as the state directory. The CLI says what to run about it.
var ErrNoState = errors.New("nothing was applied with it")
