package lang

import (
	"strconv"

	"github.com/infercrane/infercrane/lang/setting"
	"github.com/zclconf/go-cty/cty"
)

// settingSpecs derives attribute specs from declared settings.
func settingSpecs(fields []setting.Field) []attrSpec {
	out := make([]attrSpec, 0, len(fields))
	for _, f := range fields {
		sp := attrSpec{name: f.Name, required: f.Required, max: f.Max}
		switch f.Kind {
		case setting.Whole:
			sp.typ, sp.whole = cty.Number, true
		case setting.Number:
			sp.typ = cty.Number
		case setting.String:
			sp.typ = cty.String
		case setting.Bool:
			sp.typ = cty.Bool
		case setting.Strings:
			sp.typ = cty.List(cty.String)
		}
		sp.sensitiveOK = f.Sensitive
		if f.Default != "" {
			sp.def = settingValue(f, f.Default)
		}
		out = append(out, sp)
	}
	return out
}

// settingValue is a declared default as a cty value of the setting's type.
func settingValue(f setting.Field, text string) cty.Value {
	switch f.Kind {
	case setting.Whole, setting.Number:
		v, err := cty.ParseNumberVal(text)
		if err != nil {
			panic("lang: the default of " + f.Name + ": " + err.Error())
		}
		return v
	case setting.Bool:
		return cty.BoolVal(text == "true")
	}
	return cty.StringVal(text)
}

// decodeSettings stores the declared settings fields of a block in *s (a
// pointer to their declaring struct; all but the token counts, which may
// be trace percentiles) and checks their bounds and choices.
func (l *loader) decodeSettings(a *attrs, fields []setting.Field, s any) {
	for _, f := range fields {
		if f.Trace {
			continue // see tokens
		}
		switch f.Kind {
		case setting.Whole:
			f.Set(s, int(a.int(f.Name)))
		case setting.Number:
			f.Set(s, a.float(f.Name))
		case setting.String:
			f.Set(s, a.str(f.Name))
		case setting.Bool:
			f.Set(s, a.boolean(f.Name))
		case setting.Strings:
			f.Set(s, a.strs(f.Name))
		}
	}
	for _, f := range fields {
		switch {
		case f.Min != nil && f.Max > 0 && f.Max <= 1:
			// A fraction: its block checks the whole range (see attrSpec.max).
			in := func(x float64) bool { return f.Min.Allows(x) && x <= f.Max }
			l.diags = appendIf(l.diags, numCheck(a, f.Name, in, rangeText(*f.Min, f.Max), f.Doc))
		case f.Min != nil:
			l.diags = appendIf(l.diags, numCheck(a, f.Name, f.Min.Allows, f.Min.String(), f.Doc))
		}
	}
	for _, f := range fields {
		if f.Choices != nil {
			l.diags = appendIf(l.diags, oneOf(a, f.Name, f.Choices))
		}
	}
}

// rangeText says a bounded range as error messages do: "in (0, 1]".
func rangeText(lo setting.Bound, hi float64) string {
	open := "["
	if lo.Strict {
		open = "("
	}
	return "in " + open + strconv.FormatFloat(lo.Value, 'f', -1, 64) + ", " + strconv.FormatFloat(hi, 'f', -1, 64) + "]"
}
