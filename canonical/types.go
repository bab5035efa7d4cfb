package canonical

import (
	"cmp"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// typeInfo is what the Go value path needs to know about a type, computed
// once per type.
type typeInfo struct {
	marshaler, addrMarshaler         bool // MarshalJSON on T, on *T only
	textMarshaler, addrTextMarshaler bool // MarshalText on T, on *T only
	byteSlice                        bool // a []byte encoded as base64
	keysOK                           bool // a map whose keys JSON can name
	fields                           []field
}

// field is a struct field as encoding/json marshals it.
type field struct {
	name      string
	key       []byte // the canonical encoding of name
	tag       bool   // name came from the json tag
	index     []int
	typ       reflect.Type // the declared type, for omitzero
	omitEmpty bool
	omitZero  bool
	quoted    bool
}

var typeCache sync.Map // reflect.Type → *typeInfo

func infoOf(t reflect.Type) *typeInfo {
	if ti, ok := typeCache.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := &typeInfo{}
	notPtr := t.Kind() != reflect.Pointer
	ti.marshaler = t.Implements(marshalerType)
	ti.addrMarshaler = notPtr && !ti.marshaler && reflect.PointerTo(t).Implements(marshalerType)
	ti.textMarshaler = t.Implements(textMarshalerType)
	ti.addrTextMarshaler = notPtr && !ti.textMarshaler && reflect.PointerTo(t).Implements(textMarshalerType)
	switch t.Kind() {
	case reflect.Slice:
		p := reflect.PointerTo(t.Elem())
		ti.byteSlice = t.Elem().Kind() == reflect.Uint8 &&
			!p.Implements(marshalerType) && !p.Implements(textMarshalerType)
	case reflect.Map:
		switch t.Key().Kind() {
		case reflect.String,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			ti.keysOK = true
		default:
			ti.keysOK = t.Key().Implements(textMarshalerType)
		}
	case reflect.Struct:
		ti.fields = typeFields(t)
	}
	actual, _ := typeCache.LoadOrStore(t, ti)
	return actual.(*typeInfo)
}

// typeFields returns the fields encoding/json marshals for struct type t,
// by the same rules (this follows encoding/json's typeFields).
func typeFields(t reflect.Type) []field {
	current := []field{}
	next := []field{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	var fields []field
	for len(next) > 0 {
		current, next = next, current[:0]
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, f := range current {
			if visited[f.typ] {
				continue
			}
			visited[f.typ] = true
			for i := 0; i < f.typ.NumField(); i++ {
				sf := f.typ.Field(i)
				if sf.Anonymous {
					t := sf.Type
					if t.Kind() == reflect.Pointer {
						t = t.Elem()
					}
					if !sf.IsExported() && t.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !isValidTag(name) {
					name = ""
				}
				index := append(slices.Clip(f.index), i)
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				quoted := false
				if hasOption(opts, "string") {
					switch ft.Kind() {
					case reflect.Bool,
						reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
						reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
						reflect.Float32, reflect.Float64,
						reflect.String:
						quoted = true
					}
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					tagged := name != ""
					if name == "" {
						name = sf.Name
					}
					fields = append(fields, field{
						name:      name,
						key:       append(append([]byte{tagString}, name...), stringEnd),
						tag:       tagged,
						index:     index,
						typ:       sf.Type,
						omitEmpty: hasOption(opts, "omitempty"),
						omitZero:  hasOption(opts, "omitzero"),
						quoted:    quoted,
					})
					if count[f.typ] > 1 {
						fields = append(fields, fields[len(fields)-1])
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, field{name: ft.Name(), index: index, typ: ft})
				}
			}
		}
	}
	slices.SortFunc(fields, func(a, b field) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tag != b.tag {
			if a.tag {
				return -1
			}
			return +1
		}
		return slices.Compare(a.index, b.index)
	})
	// Keep, for each name, the dominant field, if there is one.
	out := fields[:0]
	for advance, i := 0, 0; i < len(fields); i += advance {
		name := fields[i].name
		for advance = 1; i+advance < len(fields) && fields[i+advance].name == name; advance++ {
		}
		if advance == 1 {
			out = append(out, fields[i])
			continue
		}
		f0, f1 := fields[i], fields[i+1]
		if len(f0.index) == len(f1.index) && f0.tag == f1.tag {
			continue // no field dominates: none is marshalled
		}
		out = append(out, f0)
	}
	// encoding/json writes the fields in index order; here they are read in
	// canonical order, so that the value limit cuts the same members as
	// for the equivalent map, and the object needs no sorting.
	slices.SortFunc(out, func(a, b field) int { return compareKeys(a.key, b.key) })
	return out
}

func hasOption(opts, name string) bool {
	for opts != "" {
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		if o == name {
			return true
		}
	}
	return false
}

func isValidTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

type isZeroer interface{ IsZero() bool }

var isZeroerType = reflect.TypeFor[isZeroer]()

// isZero reports whether the field value v is zero for omitzero, calling
// its IsZero method as encoding/json does; a panicking IsZero counts as
// false, so the field is kept.
func isZero(v reflect.Value, f *field) (zero bool) {
	defer func() {
		if r := recover(); r != nil {
			zero = false
		}
	}()
	t := f.typ
	switch {
	case t.Kind() == reflect.Interface && t.Implements(isZeroerType):
		return v.IsNil() || v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil() ||
			v.Interface().(isZeroer).IsZero()
	case t.Kind() == reflect.Pointer && t.Implements(isZeroerType):
		return v.IsNil() || v.Interface().(isZeroer).IsZero()
	case t.Implements(isZeroerType):
		return v.Interface().(isZeroer).IsZero()
	case reflect.PointerTo(t).Implements(isZeroerType):
		if !v.CanAddr() {
			v2 := reflect.New(v.Type()).Elem()
			v2.Set(v)
			v = v2
		}
		return v.Addr().Interface().(isZeroer).IsZero()
	}
	return v.IsZero()
}
