package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
)

// cpuProfile builds a CPU profile: stacks (leaf first) with their CPU ns.
func cpuProfile(t testing.TB, stacks [][]string, ns []int64) []byte {
	t.Helper()
	p := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:     10_000_000,
	}
	funcs := map[string]*profile.Function{}
	for i, st := range stacks {
		var locs []*profile.Location
		for _, name := range st {
			f := funcs[name]
			if f == nil {
				f = &profile.Function{ID: uint64(len(funcs) + 1), Name: name}
				funcs[name] = f
				p.Function = append(p.Function, f)
			}
			l := &profile.Location{ID: uint64(len(p.Location) + 1), Line: []profile.Line{{Function: f}}}
			p.Location = append(p.Location, l)
			locs = append(locs, l)
		}
		p.Sample = append(p.Sample, &profile.Sample{Location: locs, Value: []int64{ns[i] / p.Period, ns[i]}})
	}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestTopFunctions(t *testing.T) {
	data := cpuProfile(t, [][]string{
		{"runtime.memmove", "http1.Parse", "main.loop"},
		{"http1.Parse", "main.loop"},
		{"syscall.write", "main.loop"},
		{"runtime.memmove", "json.Encode", "main.loop"},
	}, []int64{30e6, 20e6, 40e6, 10e6})
	for _, tc := range []struct {
		n    int
		want []ProfileFunc
	}{
		{2, []ProfileFunc{{"runtime.memmove", 40, 40}, {"syscall.write", 40, 40}}},
		{10, []ProfileFunc{{"runtime.memmove", 40, 40}, {"syscall.write", 40, 40}, {"http1.Parse", 20, 50}}},
		{0, []ProfileFunc{}},
	} {
		got, err := TopFunctions(bytes.NewReader(data), tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tc.want) {
			t.Fatalf("top %d: %+v, want %+v", tc.n, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("top %d [%d]: %+v, want %+v", tc.n, i, got[i], tc.want[i])
			}
		}
	}
	if _, err := TopFunctions(strings.NewReader("not a profile"), 3); err == nil {
		t.Error("garbage parsed as a profile")
	}
	empty := cpuProfile(t, nil, nil)
	if got, err := TopFunctions(bytes.NewReader(empty), 3); err != nil || len(got) != 0 {
		t.Errorf("a profile without samples: %+v, %v", got, err)
	}
}

func FuzzTopFunctions(f *testing.F) {
	f.Add(cpuProfile(f, [][]string{{"a", "b"}, {"b"}}, []int64{1e7, 2e7}))
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00}) // a gzip header and nothing more
	f.Fuzz(func(t *testing.T, data []byte) {
		top, err := TopFunctions(bytes.NewReader(data), 5)
		if err != nil {
			return
		}
		if len(top) > 5 {
			t.Fatalf("%d functions, asked for 5", len(top))
		}
		for i, fn := range top {
			if i > 0 && fn.FlatPct > top[i-1].FlatPct {
				t.Fatalf("not sorted: %+v", top)
			}
		}
	})
}

func TestWriteProfiles(t *testing.T) {
	withProfile := Result{Dir: "res/r1-01-carrier", Summary: Summary{Profile: []ProfileFunc{{"main.loop", 12.5, 90}}}}
	rep := &Report{Groups: []*Group{
		{Phase: "max", Name: "nethttp", all: []Result{{Dir: "res/r1-00-nethttp"}}},
		{Phase: "max", Name: "carrier", all: []Result{{Dir: "x"}, withProfile}},
	}}
	var b strings.Builder
	rep.writeProfiles(&b)
	md := b.String()
	for _, w := range []string{"## Server CPU profile", "carrier, Max throughput (closed loop) (`res/r1-01-carrier`)", "| `main.loop` | 12.5 | 90.0 |"} {
		if !strings.Contains(md, w) {
			t.Errorf("section lacks %q:\n%s", w, md)
		}
	}
	if strings.Contains(md, "nethttp") {
		t.Errorf("a configuration without a profile listed:\n%s", md)
	}
	b.Reset()
	(&Report{Groups: []*Group{{Phase: "max", Name: "nethttp"}}}).writeProfiles(&b)
	if b.Len() != 0 {
		t.Errorf("section without profiles: %q", b.String())
	}
}
