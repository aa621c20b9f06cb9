package resv

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := Spec{Name: "physics", Start: 200, End: 300, Nodes: 4, Users: []string{"bob", "alice"}}
	for _, tc := range []struct {
		name string
		mod  func(*Spec)
		want string // "" for valid
	}{
		{"valid", func(*Spec) {}, ""},
		{"bad name", func(s *Spec) { s.Name = "Physics!" }, "reservation name"},
		{"empty name", func(s *Spec) { s.Name = "" }, "reservation name"},
		{"job-shaped name", func(s *Spec) { s.Name = "j7" }, "reserved"},
		{"job-shaped name j0", func(s *Spec) { s.Name = "j0" }, "reserved"},
		{"job-shaped name, zeros", func(s *Spec) { s.Name = "j007" }, "reserved"},
		{"j and letters", func(s *Spec) { s.Name = "j7a" }, ""},
		{"job word", func(s *Spec) { s.Name = "job7" }, ""},
		{"just j", func(s *Spec) { s.Name = "j" }, ""},
		{"start in the past", func(s *Spec) { s.Start = 50 }, "start 1970-01-01T00:00:50Z is in the past; give --start now or a later time"},
		{"start a second ago", func(s *Spec) { s.Start = 99 }, "in the past"},
		{"start now", func(s *Spec) { s.Start = 100 }, ""},
		{"end before start", func(s *Spec) { s.End = 150 }, "not after start"},
		{"end at start", func(s *Spec) { s.End = 200 }, "not after start"},
		{"negative nodes", func(s *Spec) { s.Nodes = -1 }, "negative"},
		{"nothing asked", func(s *Spec) { s.Nodes = 0 }, "asks for no nodes"},
		{"both counts and list", func(s *Spec) { s.NodeList = []string{"n1"} }, "not both"},
		{"negative grace", func(s *Spec) { s.Grace = -1 }, "grace"},
		{"zero slots", func(s *Spec) { s.Slots = map[string]int{"qpu0": 0} }, "at least 1"},
		{"bad user", func(s *Spec) { s.Users = []string{"Alice"} }, "user name"},
		{"duplicate user", func(s *Spec) { s.Users = []string{"bob", "bob"} }, "twice"},
		{"maint without nodes", func(s *Spec) { s.Maint, s.Users, s.Nodes, s.Slots = true, nil, 0, map[string]int{"qpu0": 1} }, "takes nodes"},
		{"maint with slots", func(s *Spec) { s.Maint, s.Users, s.Slots = true, nil, map[string]int{"qpu0": 1} }, "drop --qpu"},
		{"maint with users", func(s *Spec) { s.Maint = true }, "drop --users"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			s.Users = append([]string(nil), ok.Users...)
			tc.mod(&s)
			err := s.Validate(100)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("valid spec refused: %v", err)
				}
				if !s.HasUser("alice") || !s.HasUser("bob") || s.HasUser("carol") {
					t.Errorf("access list %v: HasUser wrong", s.Users)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}

func TestOccurrences(t *testing.T) {
	r := Recurrence{Spec: Spec{Name: "dat", Start: 100, End: 150}, Every: 100, Until: 400}
	occ, err := r.Occurrences()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range occ {
		got = append(got, o.Name+":"+itoa(int64(o.Start))+"-"+itoa(int64(o.End)))
	}
	if want := "dat-1:100-150 dat-2:200-250 dat-3:300-350"; strings.Join(got, " ") != want {
		t.Errorf("occurrences %v, want %s", got, want)
	}
	if _, err := (Recurrence{Spec: Spec{Name: "d", Start: 0, End: 10}, Every: 1, Until: 1 << 40}).Occurrences(); err == nil {
		t.Error("overlapping occurrences accepted")
	}
	if _, err := (Recurrence{Spec: Spec{Name: "d", Start: 0, End: 10}, Every: 10, Until: 1 << 40}).Occurrences(); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a million occurrences: error %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestParseSim(t *testing.T) {
	r, err := ParseSim("start=+7d,duration=8h,nodes=128,every=7d", 1000, 1000+30*86400, 3)
	if err != nil {
		t.Fatal(err)
	}
	if r.Spec.Name != "dat3" || r.Spec.Start != 1000+7*86400 || r.Spec.End != r.Spec.Start+8*3600 || r.Spec.Nodes != 128 || r.Every != 7*86400 || r.Until != 1000+30*86400 {
		t.Errorf("parsed %+v", r)
	}
	occ, err := r.Occurrences()
	if err != nil || len(occ) != 4 {
		t.Errorf("%d occurrences (%v), want 4 in 30 days from day 7", len(occ), err)
	}
	for _, bad := range []string{"", "start", "start=+1d,duration=1h", "start=+1d,duration=-1h,nodes=2", "start=+1d,duration=1h,nodes=x",
		"start=+1d,start=+2d,duration=1h,nodes=1", "start=+1d,duration=1h,nodes=1,name=BAD", "start=+1d,duration=1h,nodes=1,overlap=maybe"} {
		if _, err := ParseSim(bad, 0, 100, 1); err == nil {
			t.Errorf("ParseSim(%q) accepted", bad)
		} else if !errors.Is(err, ErrInvalid) {
			t.Errorf("ParseSim(%q): %v is not ErrInvalid", bad, err)
		}
	}
}

func FuzzParseSim(f *testing.F) {
	for _, s := range []string{"start=+7d,duration=8h,nodes=128,every=7d", "start=5,duration=1,nodes=1", "a=b,,c", "start=+1d,duration=1h,nodes=1,until=+9d,every=1d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseSim(s, 0, 1<<40, 1)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseSim(%q): error %v does not wrap ErrInvalid", s, err)
			}
			return
		}
		if r.Spec.End <= r.Spec.Start || r.Spec.Nodes < 1 {
			t.Fatalf("ParseSim(%q) accepted a bad window or count: %+v", s, r.Spec)
		}
		r.Occurrences() // must not panic or run away
	})
}

func TestValidateMaintValid(t *testing.T) {
	for _, s := range []Spec{
		{Name: "fix", Start: 200, End: 300, Nodes: 4, Maint: true},
		{Name: "fix", Start: 200, End: 300, NodeList: []string{"n1"}, Maint: true, Overlap: Kill},
	} {
		if err := s.Validate(100); err != nil {
			t.Errorf("maintenance %+v refused: %v", s, err)
		}
	}
}
