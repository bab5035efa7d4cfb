package canonical

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestTransformJCSVectors(t *testing.T) {
	inputs, err := filepath.Glob("testdata/jcs/input/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no test vectors: %v", err)
	}
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata/jcs/output", name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Transform(src)
			if err != nil {
				t.Fatalf("Transform: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Transform(%s)\n got %s\nwant %s", name, got, want)
			}
			if HashJSON(src) != HashJSON(want) {
				t.Errorf("HashJSON differs between input and output")
			}
		})
	}
}

func TestTransformES6Numbers(t *testing.T) {
	f, err := os.Open("testdata/es6numbers-20k.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		hexBits, want, ok := strings.Cut(sc.Text(), ",")
		if !ok {
			t.Fatalf("bad line %q", sc.Text())
		}
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		x := math.Float64frombits(bits)
		src := strconv.AppendFloat(nil, x, 'g', -1, 64)
		got, err := Transform(src)
		if err != nil {
			t.Fatalf("Transform(%s): %v", src, err)
		}
		if string(got) != want {
			t.Errorf("Transform(%s) (bits %s) = %s, want %s", src, hexBits, got, want)
		}
		// The other spellings of the number: fixed, exponent, and as a
		// Go value.
		for _, alt := range [][]byte{
			strconv.AppendFloat(nil, x, 'e', 17, 64),
			strconv.AppendFloat(nil, x, 'E', -1, 64),
		} {
			if h := HashJSON(alt); h != HashJSON(src) {
				t.Errorf("HashJSON(%s) != HashJSON(%s)", alt, src)
			}
		}
		if Hash(x) != HashJSON(src) {
			t.Errorf("Hash(%v) != HashJSON(%s)", x, src)
		}
		if got := Append(nil, x); string(got) != want {
			t.Errorf("Append(%v) = %s, want %s", x, got, want)
		}
		lines++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines != 20000 {
		t.Errorf("read %d lines, want 20000", lines)
	}
	_ = binary.LittleEndian
}
