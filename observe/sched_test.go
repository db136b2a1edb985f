package observe

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParseSched(t *testing.T) {
	tests := []struct {
		file    string
		want    SchedStats
		wantErr bool
	}{
		{file: "busy-shell.txt", want: SchedStats{Migrations: 0, Switches: 8, Voluntary: 0, Involuntary: 8}},
		{file: "new-cat.txt", want: SchedStats{}},
		{file: "bad-number.txt", wantErr: true},
		{file: "empty.txt", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "sched", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := ParseSched(data)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseSched error = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseSched = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseSchedMigrations(t *testing.T) {
	got, err := ParseSched([]byte("t (1, #threads: 2)\n----\nse.nr_migrations   :   42\nnr_switches : 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Migrations != 42 || got.Switches != 7 {
		t.Errorf("got %+v, want 42 migrations and 7 switches", got)
	}
}

func FuzzParseSched(f *testing.F) {
	for _, name := range []string{"busy-shell.txt", "new-cat.txt", "bad-number.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", "sched", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSched(data)
		if err != nil && s != (SchedStats{}) {
			t.Errorf("error %v with non-zero result %+v", err, s)
		}
	})
}
