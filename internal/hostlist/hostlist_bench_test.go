package hostlist

import (
	"fmt"
	"testing"
)

func BenchmarkParse(b *testing.B) {
	for _, n := range []int{64, 4096, MaxNames} {
		for _, shape := range []struct{ name, format string }{
			{"range", "node[0-%d]"},
			{"two", "node[1-%d],login"},
		} {
			in := fmt.Sprintf(shape.format, n-1)
			b.Run(fmt.Sprintf("%s/names=%d", shape.name, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Parse(in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkFormat(b *testing.B) {
	for _, n := range []int{64, 4096, MaxNames} {
		names, err := Parse(fmt.Sprintf("rack1-n[000001-%06d],login", n-1))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("names=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Format(names)
			}
		})
	}
}
