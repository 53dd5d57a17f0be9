package executor

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Attrs are an executor block's attributes as JSON-like values (string,
// float64, bool, []any, map[string]any), as they arrive in
// Deployment.Config and in an executor factory's cfg.
type Attrs map[string]any

// Check rejects attributes the schema does not declare, missing required
// ones and values of the wrong type, naming the attribute and what to write.
func (a Attrs) Check(typ string, s Schema) error {
	known := map[string]Attribute{}
	for _, at := range s.Attributes {
		known[at.Name] = at
	}
	var names []string
	for name := range a {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		at, ok := known[name]
		if !ok {
			var valid []string
			for _, x := range s.Attributes {
				valid = append(valid, x.Name)
			}
			return fmt.Errorf("executor type %q has no attribute %q; valid attributes: %s", typ, name, strings.Join(valid, ", "))
		}
		if err := checkType(a[name], at.Type); err != nil {
			return fmt.Errorf("executor attribute %q: %w", name, err)
		}
	}
	for _, at := range s.Attributes {
		if _, ok := a[at.Name]; at.Required && !ok {
			return fmt.Errorf("executor type %q needs attribute %q (%s)", typ, at.Name, at.Doc)
		}
	}
	return nil
}

func checkType(v any, t AttrType) error {
	if v == nil {
		return nil
	}
	ok := true
	switch t {
	case AttrString:
		_, ok = v.(string)
	case AttrDuration:
		s, isStr := v.(string)
		if !isStr {
			return fmt.Errorf("want a duration such as \"30s\" or \"10m\", got %v", v)
		}
		if _, err := time.ParseDuration(s); err != nil {
			return fmt.Errorf("want a duration such as \"30s\" or \"10m\": %w", err)
		}
	case AttrNumber:
		_, ok = v.(float64)
	case AttrBool:
		_, ok = v.(bool)
	case AttrStringList:
		var l []any
		if l, ok = v.([]any); ok {
			for _, x := range l {
				if _, isStr := x.(string); !isStr {
					ok = false
				}
			}
		}
	case AttrStringMap:
		var m map[string]any
		if m, ok = v.(map[string]any); ok {
			for _, x := range m {
				if _, isStr := x.(string); !isStr {
					ok = false
				}
			}
		}
	}
	if !ok {
		return fmt.Errorf("want %s, got %T", t, v)
	}
	return nil
}

// String returns attribute name as a string, or def when unset.
func (a Attrs) String(name, def string) string {
	if s, ok := a[name].(string); ok {
		return s
	}
	return def
}

// Number returns attribute name as a number, or def when unset.
func (a Attrs) Number(name string, def float64) float64 {
	if f, ok := a[name].(float64); ok {
		return f
	}
	return def
}

// Bool returns attribute name as a bool, or def when unset.
func (a Attrs) Bool(name string, def bool) bool {
	if b, ok := a[name].(bool); ok {
		return b
	}
	return def
}

// Duration returns attribute name parsed as a duration, or def when unset
// or unparsable (Check reports the latter).
func (a Attrs) Duration(name string, def time.Duration) time.Duration {
	if s, ok := a[name].(string); ok {
		if d, err := time.ParseDuration(s); err == nil {
			return d
		}
	}
	return def
}

// Strings returns attribute name as a list of strings (nil when unset).
func (a Attrs) Strings(name string) []string {
	l, _ := a[name].([]any)
	var out []string
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// StringMap returns attribute name as a map of strings (nil when unset).
func (a Attrs) StringMap(name string) map[string]string {
	m, _ := a[name].(map[string]any)
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		if s, ok := x.(string); ok {
			out[k] = s
		}
	}
	return out
}
