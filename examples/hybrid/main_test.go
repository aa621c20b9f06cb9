package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestHybrid runs the example for a short while: both sessions get device
// time, in a ratio near their slots' 3:1 (job counts are far from it).
func TestHybrid(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a broker and an executor for seconds")
	}
	var out bytes.Buffer
	if err := run(&out, 3*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	i := strings.Index(text, "device time bob:alice = ")
	var ratio float64
	if i < 0 {
		t.Fatalf("no ratio in:\n%s", text)
	}
	if _, err := fmt.Sscanf(text[i:], "device time bob:alice = %f", &ratio); err != nil {
		t.Fatalf("%v in:\n%s", err, text)
	}
	if ratio < 1.8 || ratio > 5 {
		t.Errorf("device time bob:alice = %.2f, want about 3 (their slots):\n%s", ratio, text)
	}
}
