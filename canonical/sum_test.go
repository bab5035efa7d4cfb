package canonical

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Golden values of MurmurHash3 x64_128 (seed 0) from the reference
// implementation. Sums are stored: these must never change.
var murmurGolden = []struct{ in, want string }{
	{"", "00000000000000000000000000000000"},
	{"a", "85555565f6597889e6b53a48510e895a"},
	{"abc", "b4963f3f3fad78673ba2744126ca2d52"},
	{"hello", "cbd8a7b341bd9b025b1e906a48ae1d19"},
	{"hello, world", "342fac623a5ebc8e4cdcbc079642414d"},
	{"0123456789abcdef", "4be06d94cf4ad1a787c35b5c63a708da"},
	{"The quick brown fox jumps over the lazy dog", "e34bbc7bbc071b6c7a433ca9c49a9347"},
	{"loopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguardloopguard", "ec7bc1ee2bd5f0927dfda595c104392d"},
}

// murmurLengthGolden[n] is the hash of n bytes b[i] = byte(7*i+n), covering
// every tail length.
var murmurLengthGolden = []string{
	"00000000000000000000000000000000",
	"7ace5c908374fe16778867e4430e6785",
	"ddf2dacce216c6f7fa5614ca7bfa9080",
	"6e3febcaf3b53dcee5bb83e375ffb688",
	"5e68331eda7ca11bc17a694d676555fe",
	"6b8a68abd141edde1f4f39743e65fd59",
	"0dd04b9a78e6c4765c4db6044172198c",
	"e277ac6b700d5492f0644e885447b02f",
	"8e6056328613078e1f3498f636b70dbe",
	"7f01458a0eca6ff74b9f7b9873379f1e",
	"a77bdd6f04c8e2ea637705d8a5698da4",
	"fcff2d713927dc625a4c9afdb3499d1e",
	"773ae702e3a0747548bb5009fada45dc",
	"f55fee097cc87161cd2b24a895b151bf",
	"285b77890a7fb45ad1c416ea10d0a681",
	"44c1a5c6a4b8986b5c030c6b6d8dbaeb",
	"23d3b0ab94c30bfab9d61434fd86c1ab",
	"05d02b803709866c546064aab6cc0cc0",
	"e556a004d6f2f86a223768e0149acd99",
	"3279a1af34b65079dff8e3a77c2bc732",
	"0709ab80610712c23b0ffea899977bfa",
	"60ee9882562b58e9b606930ed34f5d14",
	"8e4ec1681a32f2ce437b752f8aa77adc",
	"baf71da766e6ba8372a5ad33fd79addb",
	"5c1c766ab6c751d9a929c47892136721",
	"99510622240b26fd08d89a888a2c7b6f",
	"459d408665581ef3c2e554164ef98c5e",
	"24ca40fb06c7e6fd27ad9252e95d5384",
	"bcfca9b8598802c456e1f32dc6ee3e0f",
	"63ae367942cff0f6c6c3eb1192667608",
	"2b56d94a9b7bfef8c16f01891c9cb763",
	"3f7f451a4b3e16697ef37fb51a1f44f3",
	"dfcac6e26cdc287a8cfad3cd2fcf0444",
	"291d1923e75ccc5fb3a79cbf3a82016e",
}

func TestHashBytesGolden(t *testing.T) {
	for _, g := range murmurGolden {
		if got := HashBytes([]byte(g.in)).String(); got != g.want {
			t.Errorf("HashBytes(%q) = %s, want %s", g.in, got, g.want)
		}
		if got := HashString(g.in).String(); got != g.want {
			t.Errorf("HashString(%q) = %s, want %s", g.in, got, g.want)
		}
	}
	for n, want := range murmurLengthGolden {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + n)
		}
		if got := HashBytes(b).String(); got != want {
			t.Errorf("HashBytes(%d bytes) = %s, want %s", n, got, want)
		}
	}
}

func TestSumText(t *testing.T) {
	s := HashString("loopguard")
	str := s.String()
	if len(str) != 32 || strings.ToLower(str) != str {
		t.Fatalf("String() = %q", str)
	}
	p, err := ParseSum(str)
	if err != nil || p != s {
		t.Fatalf("ParseSum(%q) = %v, %v", str, p, err)
	}
	b, err := json.Marshal(map[string]Sum{"s": s})
	if err != nil || string(b) != `{"s":"`+str+`"}` {
		t.Fatalf("json.Marshal = %s, %v", b, err)
	}
	var back map[string]Sum
	if err := json.Unmarshal(b, &back); err != nil || back["s"] != s {
		t.Fatalf("json.Unmarshal = %v, %v", back, err)
	}
	for _, bad := range []string{"", str[:31], str + "0", strings.ToUpper(str), "g" + str[1:], " " + str[1:]} {
		if _, err := ParseSum(bad); !errors.Is(err, ErrSyntax) {
			t.Errorf("ParseSum(%q): err = %v, want ErrSyntax", bad, err)
		}
		var s Sum
		if err := s.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("UnmarshalText(%q) succeeded", bad)
		}
	}
	if !(Sum{}).IsZero() || s.IsZero() {
		t.Error("IsZero is wrong")
	}
}

func TestHashBytesAllocs(t *testing.T) {
	b := []byte(strings.Repeat("x", 100))
	s := string(b)
	if n := testing.AllocsPerRun(100, func() { HashBytes(b); HashString(s) }); n != 0 {
		t.Errorf("HashBytes, HashString: %v allocs", n)
	}
}
