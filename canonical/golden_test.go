package canonical

import "testing"

var goldenInputs = []string{
	`null`, `true`, `false`, `0`, `-1.5`, `1e+30`, `""`, `"a"`, `[]`, `{}`,
	`[1,"two",null,true,false]`, `{"b":2,"a":1}`, `{"a":{"b":[{"c":"d"}]}}`,
	`{"path":"/src/main.go","line":42,"flags":["-n","-i"],"recursive":true}`,
	`{"😂":1,"\uffff":2,"é":3}`, `not json`, ``,
}

// TestHashGolden pins the sums of a few values: sums are stored in
// snapshots, so they must never change.
func TestHashGolden(t *testing.T) {
	if len(hashGolden) != len(goldenInputs) {
		t.Fatal("golden table out of date")
	}
	for _, g := range hashGolden {
		if got := HashJSON([]byte(g.in)).String(); got != g.want {
			t.Errorf("HashJSON(%s) = %s, want %s", g.in, got, g.want)
		}
	}
}

var hashGolden = []struct{ in, want string }{
	{"null", "b45c6754f808b40779ef29b3c6160e8b"},
	{"true", "687dbc70630a4ce61865ac4370d6d84c"},
	{"false", "9243132d4e66a3afc14d2a3841d0e821"},
	{"0", "1d31293c3d41ea0243af124f462b01f5"},
	{"-1.5", "2532dcdee9f8e2f94efdeef86757de22"},
	{"1e+30", "b64fe0e5ffadf95f65c5914a6e340cea"},
	{"\"\"", "6001c24b05d32927204aa706e9b4f434"},
	{"\"a\"", "327e09ea2f1add2941fb16da07c2a42e"},
	{"[]", "cf252fdcd0c577918a558e3d5869780d"},
	{"{}", "466e20057851c2d220882a78996617be"},
	{"[1,\"two\",null,true,false]", "526e819d76dbacadd00c83968ef600e2"},
	{"{\"b\":2,\"a\":1}", "b49375f6f97fd194a52a03514e0e8f96"},
	{"{\"a\":{\"b\":[{\"c\":\"d\"}]}}", "fa376eb33e4376f63c5e1d8bc42c756e"},
	{"{\"path\":\"/src/main.go\",\"line\":42,\"flags\":[\"-n\",\"-i\"],\"recursive\":true}", "3a2a626a195d57422e88d82df625e05e"},
	{"{\"😂\":1,\"\\uffff\":2,\"é\":3}", "d0ad7f58f617bc3fa1405388a779ef76"},
	{"not json", "f6d15baf239aceccb6e52287ebb0bff1"},
	{"", "4692e568b60e26f03e02ac284a773b1e"},
}
