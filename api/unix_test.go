package api

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateUnixAccount(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
		why  string
	}{
		{"alice", true, ""},
		{"a.b-c_d", true, ""},
		{"Alice2", true, ""},
		{"host$", true, ""},
		{"_svc", true, ""},
		{"1a", true, ""},
		{strings.Repeat("a", 32), true, ""},
		{"", false, "empty"},
		{strings.Repeat("a", 33), false, "too long"},
		{"-rf", false, "starts with '-'"},
		{".hidden", false, "starts with '.'"},
		{"1000", false, "all digits"},
		{"a:b", false, "not allowed"},
		{"a/b", false, "not allowed"},
		{"a b", false, "not allowed"},
		{"$", false, "not allowed"},
		{"a$b", false, "not allowed"},
		{"é", false, "not allowed"},
	} {
		err := ValidateUnixAccount(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateUnixAccount(%q) = %v, want ok=%v", tt.name, err, tt.ok)
			continue
		}
		if err == nil {
			continue
		}
		var ae *Error
		if !errors.As(err, &ae) || ae.Code != CodeInvalidArgument || !strings.Contains(err.Error(), tt.why) || !strings.Contains(err.Error(), "as useradd does") {
			t.Errorf("ValidateUnixAccount(%q) = %v; want invalid_argument saying %q and how to fix it", tt.name, err, tt.why)
		}
	}
}

func FuzzValidateUnixAccount(f *testing.F) {
	for _, s := range []string{"alice", "", "-x", "1000", "a:b", "host$", strings.Repeat("z", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidateUnixAccount(name) != nil {
			return
		}
		// What passes is safe in /etc/passwd, a path and a command line.
		if len(name) == 0 || len(name) > MaxUnixAccountLen || strings.ContainsAny(name, ":/\n\x00 ") || name[0] == '-' {
			t.Fatalf("accepted %q", name)
		}
	})
}
