// Command report runs every side-by-side benchmark of the bench module and
// writes the results: RESULTS.md, a table of each operation with ctxsync's
// time, the peer's, their ratio and the allocations of each; and results.svg,
// a chart of the ratios. Run it from the bench directory:
//
//	go run ./cmd/report                      # run the benchmarks, then report
//	go run ./cmd/report -in results.txt      # report on a saved run
//
// A ratio is ctxsync's time over the peer's: below 1, ctxsync is faster. Each
// round is one `go test` run of every benchmark, so within a round ctxsync and
// the peer run moments apart, and their ratio holds on a noisy machine where
// absolute times drift from round to round. The ratio reported is the median
// of the -count rounds' ratios; the times are the medians of each side's.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"image/color"
	"io"
	"log"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

func main() {
	var (
		in        = flag.String("in", "", "read benchmark output from this file instead of running the benchmarks")
		raw       = flag.String("raw", "results.txt", "where to save the raw benchmark output (for benchstat)")
		bench     = flag.String("bench", ".", "the benchmarks to run (go test -bench)")
		count     = flag.Int("count", 5, "rounds: runs of every benchmark, each round one go test run")
		benchtime = flag.String("benchtime", "500ms", "time of each run (go test -benchtime)")
		md        = flag.String("md", "RESULTS.md", "the table to write")
		svg       = flag.String("svg", "results.svg", "the chart to write")
	)
	flag.Parse()
	log.SetFlags(0)

	var out []byte
	var err error
	if *in != "" {
		out, err = os.ReadFile(*in)
	} else {
		out, err = runBenchmarks(*bench, *count, *benchtime, *raw)
	}
	if err != nil {
		log.Fatal(err)
	}
	res := parse(bytes.NewReader(out))
	if len(res.samples) == 0 {
		log.Fatal("report: no benchmark results")
	}
	rows := res.compare()
	if err := os.WriteFile(*md, []byte(res.markdown(rows)), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := chart(rows, *svg); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("report: %d comparisons written to %s and %s\n", len(rows), *md, *svg)
}

// runBenchmarks runs the benchmarks count times over, one `go test -count 1`
// run each time, rather than one run with -count: so every round measures
// ctxsync and its peers within moments of each other, and a burst of load
// on a shared machine spoils one round of both, not several runs of one.
func runBenchmarks(bench string, count int, benchtime, raw string) ([]byte, error) {
	args := []string{"test", "-run", "^$", "-bench", bench, "-count", "1", "-benchtime", benchtime, "."}
	var buf bytes.Buffer
	for round := 1; round <= count; round++ {
		fmt.Fprintf(os.Stderr, "report: round %d of %d: go %s\n", round, count, strings.Join(args, " "))
		cmd := exec.Command("go", args...)
		cmd.Stdout = io.MultiWriter(&buf, os.Stderr)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("report: the benchmarks failed: %w", err)
		}
	}
	if raw != "" {
		if err := os.WriteFile(raw, buf.Bytes(), 0o644); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// A sample is one line of benchmark output.
type sample struct {
	op, impl      string // "SemaphoreContended/goroutines=16/capacity=2", "ctxsync"
	ns, b, allocs float64
}

type results struct {
	samples []sample
	cpu     string
	procs   string
}

// parse reads `go test -bench` output. A benchmark's name carries its
// implementation as an impl=NAME element; the rest names the operation.
func parse(r io.Reader) *results {
	res := &results{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if cpu, ok := strings.CutPrefix(line, "cpu: "); ok {
			res.cpu = cpu
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || f[3] != "ns/op" {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndex(name, "-"); i > 0 {
			res.procs = name[i+1:]
			name = name[:i]
		}
		var op []string
		impl := ""
		for _, part := range strings.Split(name, "/") {
			if v, ok := strings.CutPrefix(part, "impl="); ok {
				impl = v
			} else {
				op = append(op, part)
			}
		}
		if impl == "" {
			continue
		}
		s := sample{op: strings.Join(op, "/"), impl: impl}
		s.ns, _ = strconv.ParseFloat(f[2], 64)
		for i := 4; i+1 < len(f); i += 2 {
			v, _ := strconv.ParseFloat(f[i], 64)
			switch f[i+1] {
			case "B/op":
				s.b = v
			case "allocs/op":
				s.allocs = v
			}
		}
		res.samples = append(res.samples, s)
	}
	return res
}

// A row compares ctxsync with one peer on one operation.
type row struct {
	op, peer            string
	ours, theirs        float64 // median ns/op
	ratio               float64 // median over rounds of ours/theirs
	oursAlloc, theirsAl float64 // median allocs/op
}

// ours names the implementations of ctxsync; the first is the one compared.
const ours = "ctxsync"

func median(xs []float64) float64 {
	xs = slices.Clone(xs) // keep the caller's in round order
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// pairedRatio returns the median over rounds of ours[k]/theirs[k]: in round k
// the two ran moments apart, so each such ratio holds however the machine
// drifted between rounds, where a ratio of medians taken rounds apart would
// not.
func pairedRatio(ours, theirs []float64) float64 {
	n := min(len(ours), len(theirs))
	rs := make([]float64, n)
	for k := range n {
		rs[k] = ours[k] / theirs[k]
	}
	return median(rs)
}

func (res *results) compare() []row {
	type key struct{ op, impl string }
	ns := map[key][]float64{}
	allocs := map[key][]float64{}
	var ops []string
	impls := map[string][]string{}
	for _, s := range res.samples {
		k := key{s.op, s.impl}
		if _, seen := ns[k]; !seen {
			if len(impls[s.op]) == 0 {
				ops = append(ops, s.op)
			}
			impls[s.op] = append(impls[s.op], s.impl)
		}
		ns[k] = append(ns[k], s.ns)
		allocs[k] = append(allocs[k], s.allocs)
	}
	var rows []row
	for _, op := range ops {
		// Every implementation named ctxsync or ctxsync-X is ours (ctxsync-weighted
		// runs the Semaphore benchmarks with a Weighted); each is compared with
		// every peer.
		for _, mine := range impls[op] {
			if !strings.HasPrefix(mine, ours) {
				continue
			}
			label := op
			if mine != ours {
				label = op + " [" + mine + "]"
			}
			for _, peer := range impls[op] {
				if strings.HasPrefix(peer, ours) {
					continue
				}
				rows = append(rows, row{
					op: label, peer: peer,
					ours: median(ns[key{op, mine}]), theirs: median(ns[key{op, peer}]),
					ratio:     pairedRatio(ns[key{op, mine}], ns[key{op, peer}]),
					oursAlloc: median(allocs[key{op, mine}]), theirsAl: median(allocs[key{op, peer}]),
				})
			}
		}
	}
	return rows
}

func (res *results) markdown(rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmark results\n\n")
	fmt.Fprintf(&b, "Written by `go run ./cmd/report` on %s: %s, %s/%s, GOMAXPROCS %s, %s.\n\n",
		time.Now().UTC().Format("2006-01-02"), cmp.Or(res.cpu, "unknown CPU"), runtime.GOOS, runtime.GOARCH,
		cmp.Or(res.procs, "?"), runtime.Version())
	fmt.Fprintf(&b, "Each round is one `go test -bench` run of every benchmark, so that ctxsync and the\n")
	fmt.Fprintf(&b, "peer run side by side. The ratio is ctxsync's time over the peer's in the same round,\n")
	fmt.Fprintf(&b, "the median over rounds: below 1, ctxsync is faster. Each time is the median of its\n")
	fmt.Fprintf(&b, "side's rounds. Absolute times drift on a shared machine; the ratios hold better,\n")
	fmt.Fprintf(&b, "but rows of goroutines parked on one another (Contended, producers/consumers,\n")
	fmt.Fprintf(&b, "broadcasts) swing from round to round.\n\n")
	fmt.Fprintf(&b, "The adaptive limiter is also measured in a simulated service, beside failsafe-go's\n")
	fmt.Fprintf(&b, "and no limiter: [SIMULATION.md](SIMULATION.md) (`go run ./cmd/adaptivesim`).\n\n")
	fmt.Fprintf(&b, "| operation | peer | ctxsync | peer | ratio | allocs/op (ctxsync / peer) |\n")
	fmt.Fprintf(&b, "| --- | --- | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | **%.2f×** | %s / %s |\n",
			r.op, r.peer, nsString(r.ours), nsString(r.theirs), r.ratio,
			strconv.FormatFloat(r.oursAlloc, 'f', -1, 64), strconv.FormatFloat(r.theirsAl, 'f', -1, 64))
	}
	return b.String()
}

func nsString(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.1f ns", ns)
	}
}

// chart draws the ratios as horizontal bars, with a line at 1: left of it,
// ctxsync is faster.
func chart(rows []row, path string) error {
	p := plot.New()
	p.Title.Text = "ctxsync time / peer time (below 1: ctxsync is faster)"
	p.X.Label.Text = "ratio"
	p.X.Tick.Marker = plot.ConstantTicks([]plot.Tick{
		{Value: 0, Label: "0"}, {Value: 0.25, Label: "0.25"}, {Value: 0.5, Label: "0.5"},
		{Value: 0.75, Label: "0.75"}, {Value: 1, Label: "1"}, {Value: 1.5, Label: "1.5"},
		{Value: 2, Label: "2"}, {Value: 3, Label: "3"},
	})

	const clip = 3 // longer bars are cut at the edge
	values := make(plotter.Values, len(rows))
	labels := make([]string, len(rows))
	for i, r := range rows {
		j := len(rows) - 1 - i // the first row at the top
		values[j] = min(r.ratio, clip)
		labels[j] = fmt.Sprintf("%s  vs %s  (%.2f)", r.op, r.peer, r.ratio)
	}
	bars, err := plotter.NewBarChart(values, vg.Points(9))
	if err != nil {
		return err
	}
	bars.Horizontal = true
	bars.LineStyle.Width = 0
	bars.Color = color.RGBA{R: 0x2e, G: 0x6f, B: 0xb5, A: 0xff}
	p.Add(bars)
	p.NominalY(labels...)
	p.X.Min, p.X.Max = 0, clip

	one, err := plotter.NewLine(plotter.XYs{{X: 1, Y: -1}, {X: 1, Y: float64(len(rows))}})
	if err != nil {
		return err
	}
	one.LineStyle.Width = vg.Points(1)
	one.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)
	p.Y.Tick.Label.Font.Size = vg.Points(8)

	height := vg.Length(len(rows))*vg.Points(13) + vg.Inch
	return p.Save(9*vg.Inch, height, path)
}
