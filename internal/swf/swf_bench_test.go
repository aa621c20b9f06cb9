package swf

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadCTC reads every job of the CTC-SP2 trace (77,222 jobs) from
// memory: gzip as distributed, and already unpacked (the parser alone).
func BenchmarkReadCTC(b *testing.B) {
	packed, err := os.ReadFile(filepath.Join(workloadsDir(b), "CTC-SP2-1996-3.1-cln.swf.gz"))
	if err != nil {
		b.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(packed))
	if err != nil {
		b.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		b.Fatal(err)
	}
	for _, in := range []struct {
		name string
		data []byte
	}{{"gzip", packed}, {"plain", plain}} {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(plain)))
			jobs := 0
			for b.Loop() {
				r, err := NewReader(bytes.NewReader(in.data), "CTC")
				if err != nil {
					b.Fatal(err)
				}
				for {
					_, err := r.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					jobs++
				}
				r.Close()
			}
			b.ReportMetric(float64(jobs)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}
