package canonical_test

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/loopguard/loopguard/canonical"
)

func ExampleTransform() {
	out, err := canonical.Transform([]byte(`{ "b": [2.0, 1e30, 0.002, -0], "a": "\u0041\n" }`))
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output: {"a":"A\n","b":[2,1e+30,0.002,0]}
}

func ExampleHashJSON() {
	a := canonical.HashJSON([]byte(`{"a":1,"b":2}`))
	b := canonical.HashJSON([]byte(`{ "b": 2.0, "a": 1 }`))
	c := canonical.HashJSON([]byte(`{"a":2,"b":1}`))
	fmt.Println(a == b, a == c)
	// Output: true false
}

func ExampleHash() {
	type args struct {
		Path  string `json:"path"`
		Limit int    `json:"limit,omitempty"`
	}
	s := canonical.Hash(args{Path: "/tmp"})
	m := canonical.Hash(map[string]any{"path": "/tmp"})
	j := canonical.HashJSON([]byte(`{"path":"/tmp"}`))
	fmt.Println(s == m, s == j)
	// Output: true true
}

func ExampleAppend() {
	m := map[string]any{"z": math.Inf(1), "a": []byte("hi"), "raw": json.RawMessage(`[1.50]`)}
	m["self"] = m
	fmt.Println(string(canonical.Append(nil, m)))
	// Output: {"a":"aGk=","raw":[1.5],"self":[Circular:1],"z":Infinity}
}

func ExampleSum_String() {
	s := canonical.HashJSON([]byte(`{"a":1}`))
	fmt.Println(len(s.String()))
	p, err := canonical.ParseSum(s.String())
	fmt.Println(p == s, err)
	// Output:
	// 32
	// true <nil>
}

func ExampleHashString() {
	// Combine a tool name with the sum of its arguments.
	args := canonical.HashJSON([]byte(`{"q":"loop"}`))
	key := canonical.HashString("search\x00" + args.String())
	fmt.Println(key.IsZero())
	// Output: false
}
