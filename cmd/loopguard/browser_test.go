package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"html"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// These tests open the page of audit --html in a real browser: headless
// Chromium (the Debian package chromium, which .ci/run installs). Without it
// they are skipped, loudly, unless CI=true, where they fail.

var updateScreenshot = flag.Bool("update-screenshot", false, "rewrite docs/timeline.png, the README's picture of a timeline, with headless Chromium")

// chromium returns the path of the browser, or skips (fails in CI) without
// one.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	msg := "chromium is not installed: the browser tests of audit --html did not run (apt-get install chromium)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	fmt.Fprintln(os.Stderr, "SKIP: "+msg)
	t.Skip(msg)
	return ""
}

// runChromium runs headless Chromium with a fresh profile on the page at
// path, with the extra arguments, and returns its standard output.
func runChromium(t *testing.T, browser, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, browser, append(append(base, args...), "file://"+page)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

var (
	sectionStart = regexp.MustCompile(`<section class="run[^"]*" id="run-(\d+)"`)
	dataAttr     = regexp.MustCompile(`\b(data-[a-z-]+)="([^"]*)"`)
	stopMark     = regexp.MustCompile(`<g class="stop( normal)?" data-step="(\d+)" data-line="(\d+)"`)
	hitMark      = regexp.MustCompile(`<rect class="hit" data-step="`)
)

// TestBrowser renders the page of testdata/traces in headless Chromium: the
// DOM it builds holds every run, in order, with the stop drawn at the stop's
// step, and a screenshot of it is not blank.
func TestBrowser(t *testing.T) {
	browser := chromium(t)
	start := time.Now()
	abs, err := filepath.Abs(traces)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	if res := runCmd(t, "", "audit", "--labels", filepath.Join(abs, "MANIFEST.json"), "--html", page, abs); res.code != exitFailed {
		t.Fatalf("audit: exit %d: %s", res.code, res.stderr)
	}
	want := auditJSON(t, abs)

	dom := string(runChromium(t, browser, page, "--dump-dom"))
	idx := sectionStart.FindAllStringSubmatchIndex(dom, -1)
	if n := len(readManifest(t)); len(idx) != len(want) || len(want) != n {
		t.Fatalf("the browser's DOM holds %d runs, want %d (%d in the manifest)", len(idx), len(want), n)
	}
	for i, r := range want {
		end := len(dom)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		sec := dom[idx[i][0]:end]
		if n, _ := strconv.Atoi(dom[idx[i][2]:idx[i][3]]); n != i+1 {
			t.Errorf("section %d is run-%d", i+1, n)
		}
		attrs := map[string]string{}
		head := sec[:strings.IndexByte(sec, '>')]
		for _, m := range dataAttr.FindAllStringSubmatch(head, -1) {
			attrs[m[1]] = html.UnescapeString(m[2])
		}
		if attrs["data-run"] != r.Run || attrs["data-steps"] != strconv.Itoa(r.Steps) {
			t.Errorf("section %d: %v, want %s with %d steps", i+1, attrs, r.Run, r.Steps)
		}
		if n := len(hitMark.FindAllString(sec, -1)); n != r.Steps {
			t.Errorf("%s: %d steps drawn, want %d", r.Run, n, r.Steps)
		}
		stops := stopMark.FindAllStringSubmatch(sec, -1)
		if r.Stop == nil {
			if len(stops) != 0 {
				t.Errorf("%s: a stop drawn in a run without one", r.Run)
			}
			continue
		}
		if len(stops) != 1 || stops[0][2] != strconv.Itoa(r.Stop.Step) || stops[0][3] != strconv.Itoa(r.Stop.Line) ||
			(stops[0][1] == "") != r.Stop.Fault || attrs["data-stop-step"] != strconv.Itoa(r.Stop.Step) {
			t.Errorf("%s: stops drawn %q, want step %d (line %d)", r.Run, stops, r.Stop.Step, r.Stop.Line)
		}
	}

	shot := filepath.Join(t.TempDir(), "page.png")
	runChromium(t, browser, page, "--window-size=1280,2000", "--hide-scrollbars", "--screenshot="+shot)
	img := readPNG(t, shot)
	ink, colours := inkAndColours(img)
	t.Logf("screenshot %v: %.1f%% of the pixels not white, %d colours", img.Bounds().Size(), 100*ink, colours)
	if ink < 0.02 || colours < 16 {
		t.Errorf("the screenshot looks blank: %.2f%% of the pixels not white, %d colours", 100*ink, colours)
	}
	t.Logf("the browser test took %v", time.Since(start).Round(time.Millisecond))
}

// TestBrowserTimeline renders the timeline of one real run alone, and checks
// that its picture holds the stop's red and the tools' colours. With
// -update-screenshot it rewrites docs/timeline.png, the README's picture.
func TestBrowserTimeline(t *testing.T) {
	browser := chromium(t)
	docs, err := filepath.Abs(filepath.Join("..", "..", "docs"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	t.Chdir(filepath.Join("..", "..")) // the run is named as from the repository's root
	res := runCmd(t, "", "audit", "--fail-on", "never", "--labels", "testdata/traces/MANIFEST.json", "--html", page,
		"testdata/traces/moatless-sklearn-13779.jsonl")
	if res.code != exitOK {
		t.Fatalf("audit: exit %d: %s", res.code, res.stderr)
	}
	// The run's section alone, with the page's head and legend.
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	head := doc[:strings.Index(doc, "<body>")+len("<body>")]
	legend := doc[strings.Index(doc, `<p class="legend">`):strings.Index(doc, "<section ")]
	section := doc[strings.Index(doc, "<section "):strings.Index(doc, "</body>")]
	alone := filepath.Join(dir, "timeline.html")
	if err := os.WriteFile(alone, []byte(head+"\n"+section+legend+"</body></html>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "timeline.png")
	runChromium(t, browser, alone, "--window-size=1000,700", "--hide-scrollbars", "--screenshot="+shot)
	img := trimBottom(readPNG(t, shot))
	has := func(hex string) bool {
		var r, g, b uint8
		fmt.Sscanf(hex, "#%02x%02x%02x", &r, &g, &b)
		want := color.RGBA{r, g, b, 255}
		bounds := img.Bounds()
		for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
			for x := bounds.Min.X; x < bounds.Max.X; x++ {
				if color.RGBAModel.Convert(img.At(x, y)) == want {
					return true
				}
			}
		}
		return false
	}
	for _, c := range []string{"#c62828", palette[0], palette[1]} {
		if !has(c) {
			t.Errorf("the timeline's picture holds no %s", c)
		}
	}
	if !*updateScreenshot {
		return
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 150<<10 {
		t.Fatalf("the picture is %d bytes, more than 150 KiB", buf.Len())
	}
	if err := os.WriteFile(filepath.Join(docs, "timeline.png"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("docs/timeline.png: %v, %d bytes", img.Bounds().Size(), buf.Len())
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// inkAndColours returns the share of pixels that are not white, and the
// number of distinct colours.
func inkAndColours(img image.Image) (float64, int) {
	b := img.Bounds()
	colours := map[color.RGBA]bool{}
	ink := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			colours[c] = true
			if c.R < 250 || c.G < 250 || c.B < 250 {
				ink++
			}
		}
	}
	return float64(ink) / float64(b.Dx()*b.Dy()), len(colours)
}

// trimBottom cuts the white rows at the bottom of a picture, keeping a
// margin.
func trimBottom(img image.Image) image.Image {
	b := img.Bounds()
	last := b.Min.Y
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA); c.R < 250 || c.G < 250 || c.B < 250 {
				last = y
				break
			}
		}
	}
	r := image.Rect(b.Min.X, b.Min.Y, b.Max.X, min(last+12, b.Max.Y))
	out := image.NewRGBA(r)
	draw.Draw(out, r, img, r.Min, draw.Src)
	return out
}
