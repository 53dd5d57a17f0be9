package modal

import (
	"os"
	"sync"

	"github.com/infercrane/infercrane/plugins"
)

// Type is the executor type name in specs: executor "x" { type = "modal" }.
const Type = "modal"

func init() {
	plugins.RegisterBuiltin(plugins.Builtin{Name: Type, New: New, Schema: Schema})
}

var (
	testCloudMu sync.Mutex
	testCloud   func(getenv func(string) string) (Cloud, bool)
)

// SetTestCloud installs a function that may pick a stand-in Cloud from the
// environment; package localcloud installs one that only answers under
// InferCrane's tests (INFERCRANE_TEST=1 and INFERCRANE_MODAL_LOCAL=DIR), so
// whole applies run against local processes in testscript tests.
func SetTestCloud(f func(getenv func(string) string) (Cloud, bool)) {
	testCloudMu.Lock()
	defer testCloudMu.Unlock()
	testCloud = f
}

// cloudFromEnv returns the test stand-in when the environment selects one.
func cloudFromEnv() (Cloud, bool) {
	testCloudMu.Lock()
	f := testCloud
	testCloudMu.Unlock()
	if f == nil {
		return nil, false
	}
	return f(os.Getenv)
}
