package cliflag

import (
	"flag"
	"math"
	"testing"
	"time"
)

// setCase is one value given to a flag: the value it stores, or the error
// it answers with.
type setCase[T Number] struct {
	in      string
	want    T
	wantErr string // "" when in is accepted
}

// checkSet gives each case's value to a fresh copy of the Range r
// (a value stored at 7 first) and checks the outcome.
func checkSet[T Number](t *testing.T, name string, r Range[T], cases []setCase[T]) {
	t.Helper()
	for _, tc := range cases {
		var v T = 7
		r.P = &v
		err := r.Set(tc.in)
		switch {
		case tc.wantErr == "" && (err != nil || v != tc.want):
			t.Errorf("%s: Set(%q) = %v, %v; want %v", name, tc.in, v, err, tc.want)
		case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr || v != 7):
			t.Errorf("%s: Set(%q) = %v, error %v; want the value kept and %q", name, tc.in, v, err, tc.wantErr)
		}
	}
}

// A Range takes the values within its bounds and answers any other value
// with what it accepts: letters, a sign, a fraction, nothing and a huge
// number alike.
func TestRangeSet(t *testing.T) {
	const least1 = "want a whole number of at least 1"
	checkSet(t, "at least 1", AtLeast(new(int), 1), []setCase[int]{
		{"4", 4, ""}, {"1", 1, ""}, {" 7 ", 7, ""}, {"+3", 3, ""}, {"10k", 10000, ""}, {"1.5k", 1500, ""},
		{"abc", 0, least1}, {"0", 0, least1}, {"-1", 0, least1}, {"1.5", 0, least1}, {"", 0, least1},
		{"k", 0, least1}, {"NaN", 0, least1}, {"Inf", 0, least1}, {"0x10", 0, least1}, {"1e400", 0, least1},
		{"99999999999999999999", 0, least1 + ", at most 9223372036854775807"},
		{"9223372036854775807", math.MaxInt64, ""},
	})
	const port = "want a whole number from 0 to 65535"
	checkSet(t, "port", Within(new(int), 0, 65535), []setCase[int]{
		{"0", 0, ""}, {"65535", 65535, ""}, {"65536", 0, port}, {"-1", 0, port}, {"http", 0, port},
		{"99999999999999999999", 0, port},
	})
	const seed = "want a whole number of at least 0"
	checkSet(t, "seed", Any(new(uint64)), []setCase[uint64]{
		{"0", 0, ""}, {"18446744073709551615", math.MaxUint64, ""}, {"2k", 2000, ""},
		{"-1", 0, seed}, {"1.5", 0, seed}, {"x", 0, seed},
		{"18446744073709551616", 0, seed + ", at most 18446744073709551615"},
	})
	const share = "want a number from 0 to 1"
	checkSet(t, "share", Within(new(float64), 0, 1), []setCase[float64]{
		{"0", 0, ""}, {"1", 1, ""}, {"0.01", 0.01, ""}, {"1e-3", 0.001, ""},
		{"1.5", 0, share}, {"-0.1", 0, share}, {"NaN", 0, share}, {"Inf", 0, share}, {"", 0, share}, {"a", 0, share},
	})
	const positive = "want a duration above 0 such as 10s, 500ms or 2m"
	checkSet(t, "positive duration", Positive(new(time.Duration)), []setCase[time.Duration]{
		{"10s", 10 * time.Second, ""}, {"1.5ms", 1500 * time.Microsecond, ""}, {"1ns", 1, ""},
		{"0", 0, positive}, {"0s", 0, positive}, {"-1s", 0, positive}, {"soon", 0, positive}, {"", 0, positive},
		{"5", 0, "needs a unit: 5s, 5ms or 5us"}, {"1.5", 0, "needs a unit: 1.5s, 1.5ms or 1.5us"},
		{"99999999999999999999h", 0, positive},
	})
	const notNegative = "want a duration of at least 0 such as 10s, 500ms or 2m"
	checkSet(t, "duration of at least 0", AtLeast(new(time.Duration), 0), []setCase[time.Duration]{
		{"0", 0, ""}, {"2m", 2 * time.Minute, ""}, {"-1ms", 0, notNegative}, {"-1", 0, "needs a unit: -1s, -1ms or -1us"},
	})
	checkSet(t, "any duration", Any(new(time.Duration)), []setCase[time.Duration]{
		{"-1ms", -time.Millisecond, ""}, {"x", 0, "want a duration such as 10s, 500ms or 2m"},
	})
	checkSet(t, "at most", Within(new(int), math.MinInt, 3), []setCase[int]{
		{"-5", -5, ""}, {"4", 0, "want a whole number of at most 3"},
	})
	checkSet(t, "above and at most", Range[float64]{Min: 0, Max: 2, Above: true}, []setCase[float64]{
		{"2", 2, ""}, {"0", 0, "want a number above 0 and at most 2"},
	})
}

// Metric reads k/M/G suffixes exactly and records that it was given; a
// Positive one refuses a value that is not above 0. CountVar's counts are
// an int32's; Narrow makes a command's flag take less.
func TestMetricCountSet(t *testing.T) {
	const wantAny = "want a number (k, M, G suffixes allowed)"
	const wantPositive = "want a number above 0 (k, M, G suffixes allowed)"
	for _, tc := range []struct {
		in                string
		want              float64
		errAny, errAbove0 string
	}{
		{"20k", 20000, "", ""},
		{"1.1k", 1100, "", ""}, // exact: not 1100.0000000000002
		{"1.5M", 1.5e6, "", ""},
		{"3G", 3e9, "", ""},
		{" 7K ", 7000, "", ""},
		{"2.5", 2.5, "", ""},
		{"0", 0, "", wantPositive},
		{"-3", -3, "", wantPositive},
		{"fast", 0, wantAny, wantPositive},
		{"NaN", 0, wantAny, wantPositive},
		{"Inf", 0, wantAny, wantPositive},
		{"", 0, wantAny, wantPositive},
		{"k", 0, wantAny, wantPositive},
	} {
		for _, positive := range []bool{false, true} {
			wantErr := tc.errAny
			if positive {
				wantErr = tc.errAbove0
			}
			var v float64
			var given bool
			err := Metric{P: &v, Given: &given, Positive: positive}.Set(tc.in)
			ok := wantErr == ""
			if given != ok || (ok && (err != nil || v != tc.want)) || (!ok && (err == nil || err.Error() != wantErr)) {
				t.Errorf("Metric{Positive: %v}.Set(%q) = %v, given %v, %v; want %v, error %q", positive, tc.in, v, given, err, tc.want, wantErr)
			}
		}
	}
	var v float64
	var given bool
	if s := (Metric{P: &v, Given: &given}).String(); s != "" {
		t.Errorf("Metric not given: String %q, want \"\"", s)
	}

	var n int
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	CountVar(fs, &n, []string{"t", "threads"}, 2, "")
	const wantCount = `invalid value "3G" for flag -t: want a whole number from -2147483648 to 2147483647`
	if err := fs.Parse([]string{"-t", "3G"}); err == nil || err.Error() != wantCount || n != 2 {
		t.Errorf("-t 3G: %d, %v; want 2 and %q", n, err, wantCount)
	}
	for _, in := range []string{"10k", "-1", "0"} {
		if err := fs.Parse([]string{"--threads", in}); err != nil {
			t.Errorf("--threads %s: %v", in, err)
		}
	}
	Narrow(fs, Within(&n, 1, MaxCount), "t", "threads", "no-such-flag")
	const wantNarrow = `invalid value "0" for flag -threads: want a whole number from 1 to 2147483647`
	if err := fs.Parse([]string{"--threads", "0"}); err == nil || err.Error() != wantNarrow {
		t.Errorf("narrowed --threads 0: %v; want %q", err, wantNarrow)
	}
	if err := fs.Parse([]string{"-t", "3"}); err != nil || n != 3 {
		t.Errorf("narrowed -t 3: %d, %v; want 3", n, err)
	}
}

// Help names each Range's kind of value.
func TestRangePlaceholder(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{AtLeast(new(int), 0).Placeholder(), "N"},
		{Any(new(uint64)).Placeholder(), "N"},
		{Within(new(float64), 0, 1).Placeholder(), "NUMBER"},
		{Positive(new(time.Duration)).Placeholder(), "DURATION"},
	} {
		if tc.got != tc.want {
			t.Errorf("placeholder %q, want %q", tc.got, tc.want)
		}
	}
}

// A value Set accepts is written by String so that Set reads it back.
func FuzzRangeSet(f *testing.F) {
	for _, s := range []string{"20k", "1.5M", "2G", "0", "-3", "2.5", "fast", "1e400", "0x10", "Inf", "10s", "-1.5ms", "1e3k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		roundTrip(t, s, Any(new(int)))
		roundTrip(t, s, Any(new(uint64)))
		roundTrip(t, s, Any(new(float64)))
		roundTrip(t, s, Any(new(time.Duration)))
		var v float64
		var given bool
		if err := (Metric{P: &v, Given: &given}).Set(s); err == nil {
			var back float64
			var backGiven bool
			out := Metric{P: &v, Given: &given}.String()
			if err := (Metric{P: &back, Given: &backGiven}).Set(out); err != nil || back != v || !backGiven {
				t.Errorf("Metric.Set(%q) = %v; String %q reads back %v, %v", s, v, out, back, err)
			}
		}
	})
}

// roundTrip checks that a value r accepts from s reads back from String.
func roundTrip[T Number](t *testing.T, s string, r Range[T]) {
	t.Helper()
	if err := r.Set(s); err != nil {
		return
	}
	out := r.String()
	back := r
	back.P = new(T)
	if err := back.Set(out); err != nil || *back.P != *r.P {
		t.Errorf("%T: Set(%q) = %v; String %q reads back %v, %v", *r.P, s, *r.P, out, *back.P, err)
	}
}
