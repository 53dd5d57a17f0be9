package executor

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Attrs are an executor block's attributes as JSON-like values (string,
// float64, bool, []any, map[string]any), as they arrive in
// Deployment.Config and in an executor factory's cfg.
type Attrs map[string]any

// AttrError is a problem with one attribute of an executor block; the spec
// language reports it at that attribute's file:line:col.
type AttrError struct {
	// Name is the attribute's name.
	Name string
	// Err says what is wrong and what to write instead.
	Err error
}

func (e *AttrError) Error() string { return fmt.Sprintf("executor attribute %q: %v", e.Name, e.Err) }

// Unwrap returns the underlying problem.
func (e *AttrError) Unwrap() error { return e.Err }

// AttrErrorf builds an AttrError for attribute name.
func AttrErrorf(name, format string, args ...any) error {
	return &AttrError{Name: name, Err: fmt.Errorf(format, args...)}
}

// Check rejects attributes the schema does not declare, missing required
// ones, values of the wrong type and values outside the schema's bounds or
// enumeration, naming the attribute and what to write (as an *AttrError
// when one attribute is at fault).
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
			return &AttrError{Name: name, Err: fmt.Errorf("executor type %q has no attribute %q; valid attributes: %s", typ, name, strings.Join(valid, ", "))}
		}
		if err := at.CheckValue(a[name]); err != nil {
			return &AttrError{Name: name, Err: err}
		}
	}
	for _, at := range s.Attributes {
		if _, ok := a[at.Name]; at.Required && !ok {
			return &AttrError{Name: at.Name, Err: fmt.Errorf("executor type %q needs attribute %q (%s)", typ, at.Name, at.Doc)}
		}
	}
	return nil
}

// CheckValue checks one value (JSON-like: string, float64, bool, []any,
// map[string]any) against the attribute's type, bounds and enumeration.
// Nil (unset) is accepted.
func (at Attribute) CheckValue(v any) error {
	if v == nil {
		return nil
	}
	if err := checkType(v, at.Type); err != nil {
		return err
	}
	switch at.Type {
	case AttrDuration:
		d, _ := time.ParseDuration(v.(string))
		return at.checkRange(d.Seconds(), func(x float64) string { return fmtDuration(x) }, fmt.Sprintf("%q", v))
	case AttrNumber:
		x := v.(float64)
		if at.Whole && x != math.Trunc(x) {
			return fmt.Errorf("want a whole number, got %v", x)
		}
		return at.checkRange(x, func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }, strconv.FormatFloat(x, 'f', -1, 64))
	case AttrString:
		if len(at.Enum) > 0 && !slices.Contains(at.Enum, v.(string)) {
			return fmt.Errorf("%q is not one of %s", v, quoteAll(at.Enum))
		}
	}
	return nil
}

// checkRange reports x outside [Min, Max], showing bounds with show.
func (at Attribute) checkRange(x float64, show func(float64) string, given string) error {
	lo, hi := at.Min, at.Max
	if (lo == nil || x >= *lo) && (hi == nil || x <= *hi) {
		return nil
	}
	switch {
	case lo != nil && hi != nil:
		return fmt.Errorf("%s is out of range; use a value from %s to %s", given, show(*lo), show(*hi))
	case lo != nil:
		return fmt.Errorf("%s is too small; use at least %s", given, show(*lo))
	default:
		return fmt.Errorf("%s is too large; use at most %s", given, show(*hi))
	}
}

// fmtDuration writes seconds as a Go duration without trailing zero units
// ("24h", "1m", "500ms").
func fmtDuration(secs float64) string {
	return FormatDuration(time.Duration(math.Round(secs * float64(time.Second))))
}

func quoteAll(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

func checkType(v any, t AttrType) error {
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
			return fmt.Errorf("%q is not a duration; write a number and a unit without spaces, such as \"30s\", \"10m\" or \"1h30m\"", s)
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

// Constraint describes the attribute's allowed values for listings
// ("1m to 24h", "whole, 1 to 65535", `one of "model", "constant"`); "" when
// any value of its type is accepted.
func (at Attribute) Constraint() string {
	var parts []string
	if at.Whole {
		parts = append(parts, "whole")
	}
	show := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	if at.Type == AttrDuration {
		show = fmtDuration
	}
	switch {
	case at.Min != nil && at.Max != nil:
		parts = append(parts, show(*at.Min)+" to "+show(*at.Max))
	case at.Min != nil:
		parts = append(parts, "at least "+show(*at.Min))
	case at.Max != nil:
		parts = append(parts, "at most "+show(*at.Max))
	}
	if len(at.Enum) > 0 {
		parts = append(parts, "one of "+quoteAll(at.Enum))
	}
	return strings.Join(parts, ", ")
}
