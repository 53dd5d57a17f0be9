package lang

import (
	"fmt"
	"math/big"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/tryfunc"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// Functions returns the functions available in spec expressions: the go-cty
// standard library (string, collection, numeric, encoding, date and type
// conversion functions) plus try and can. The names follow Terraform's.
func Functions() map[string]function.Function {
	fns := map[string]function.Function{
		// numeric
		"abs":      stdlib.AbsoluteFunc,
		"ceil":     stdlib.CeilFunc,
		"floor":    stdlib.FloorFunc,
		"log":      stdlib.LogFunc,
		"max":      stdlib.MaxFunc,
		"min":      stdlib.MinFunc,
		"parseint": stdlib.ParseIntFunc,
		"pow":      stdlib.PowFunc,
		"signum":   stdlib.SignumFunc,
		"int":      stdlib.IntFunc,
		// length distributions of shapes
		"lognormal":     LognormalFunc,
		"lognormal_fit": LognormalFitFunc,
		// string
		"chomp":      stdlib.ChompFunc,
		"format":     stdlib.FormatFunc,
		"formatlist": stdlib.FormatListFunc,
		"indent":     stdlib.IndentFunc,
		"join":       stdlib.JoinFunc,
		"lower":      stdlib.LowerFunc,
		"regex":      stdlib.RegexFunc,
		"regexall":   stdlib.RegexAllFunc,
		"replace":    stdlib.ReplaceFunc,
		"split":      stdlib.SplitFunc,
		"strlen":     stdlib.StrlenFunc,
		"strrev":     stdlib.ReverseFunc,
		"substr":     stdlib.SubstrFunc,
		"title":      stdlib.TitleFunc,
		"trim":       stdlib.TrimFunc,
		"trimprefix": stdlib.TrimPrefixFunc,
		"trimspace":  stdlib.TrimSpaceFunc,
		"trimsuffix": stdlib.TrimSuffixFunc,
		"upper":      stdlib.UpperFunc,
		// collection
		"chunklist":       stdlib.ChunklistFunc,
		"coalesce":        stdlib.CoalesceFunc,
		"coalescelist":    stdlib.CoalesceListFunc,
		"compact":         stdlib.CompactFunc,
		"concat":          stdlib.ConcatFunc,
		"contains":        stdlib.ContainsFunc,
		"distinct":        stdlib.DistinctFunc,
		"element":         stdlib.ElementFunc,
		"flatten":         stdlib.FlattenFunc,
		"index":           stdlib.IndexFunc,
		"keys":            stdlib.KeysFunc,
		"length":          stdlib.LengthFunc,
		"lookup":          stdlib.LookupFunc,
		"merge":           stdlib.MergeFunc,
		"range":           stdlib.RangeFunc,
		"reverse":         stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc,
		"setproduct":      stdlib.SetProductFunc,
		"setsubtract":     stdlib.SetSubtractFunc,
		"setunion":        stdlib.SetUnionFunc,
		"slice":           stdlib.SliceFunc,
		"sort":            stdlib.SortFunc,
		"values":          stdlib.ValuesFunc,
		"zipmap":          stdlib.ZipmapFunc,
		// encoding
		"csvdecode":  stdlib.CSVDecodeFunc,
		"jsondecode": stdlib.JSONDecodeFunc,
		"jsonencode": stdlib.JSONEncodeFunc,
		// date and time
		"formatdate": stdlib.FormatDateFunc,
		"timeadd":    stdlib.TimeAddFunc,
		// type conversion
		"tobool":   stdlib.MakeToFunc(cty.Bool),
		"tonumber": stdlib.MakeToFunc(cty.Number),
		"tostring": stdlib.MakeToFunc(cty.String),
		"tolist":   stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"toset":    stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),
		"tomap":    stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
	}
	for name, f := range fns {
		fns[name] = bounded(name, f)
	}
	// try and can take expressions, not values: nothing to bound.
	fns["try"] = tryfunc.TryFunc
	fns["can"] = tryfunc.CanFunc
	return fns
}

// maxCollection bounds the elements a function may return (setproduct of
// a few ranges would otherwise ask for billions).
const maxCollection = 100_000

// bounded is f refusing what would hang or exhaust validate: a number
// beyond float64's range in its result (tonumber("1e100000000"), whose
// decimal text math/big takes minutes to write), a setproduct of more
// than maxCollection elements.
func bounded(name string, f function.Function) function.Function {
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type: func(args []cty.Value) (cty.Type, error) {
			return f.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if name == "setproduct" {
				n := 1
				for _, a := range args {
					if a.IsKnown() && !a.IsNull() && a.CanIterateElements() {
						n *= max(a.LengthInt(), 1)
					}
					if n > maxCollection {
						return cty.NilVal, fmt.Errorf("the product would hold more than %d elements", maxCollection)
					}
				}
			}
			v, err := f.Call(args)
			if err != nil {
				return v, err
			}
			if bf := hugeNumber(v); bf != nil {
				return cty.NilVal, fmt.Errorf("the result holds %s, beyond the numbers a spec can use (about ±1e308)", numText(bf))
			}
			return v, nil
		},
	})
}

// hugeLiterals reports every number literal in node beyond float64's
// range (1e100000000): evaluating a template holding one would ask math/big
// for its decimal text, which takes minutes.
func hugeLiterals(node hclsyntax.Node) hcl.Diagnostics {
	var diags hcl.Diagnostics
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		if lit, ok := n.(*hclsyntax.LiteralValueExpr); ok {
			if bf := hugeNumber(lit.Val); bf != nil {
				diags = append(diags, errorf(lit.SrcRange, "Number out of range",
					"%s is beyond the numbers a spec can use (about ±1e308, and every attribute has a smaller bound: docs/language/bounds.md).", numText(bf)))
			}
		}
		return nil
	})
	return diags
}

// hugeNumber returns a number in v (at any depth) beyond float64's range
// or below its smallest magnitude, nil when there is none.
func hugeNumber(v cty.Value) *big.Float {
	v, _ = v.UnmarkDeep()
	if v == cty.NilVal || !v.IsKnown() || v.IsNull() {
		return nil
	}
	switch {
	case v.Type() == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInf() || bf.Sign() == 0 {
			return nil
		}
		if exp := bf.MantExp(nil); exp > 1024 || exp < -1074 {
			return bf
		}
	case v.CanIterateElements():
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			if bf := hugeNumber(e); bf != nil {
				return bf
			}
		}
	}
	return nil
}
