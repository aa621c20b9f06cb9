// Package swf reads job traces in the Standard Workload Format (SWF) of the
// Parallel Workloads Archive, for the trace simulator (strata sim).
//
// # Format
//
// An SWF file is plain text, usually gzipped. It starts with a header of
// comment lines beginning with ';', most of them "; Key: value" (Version,
// Computer, MaxProcs, ...). Every other non-blank line is one job: 18
// whitespace-separated numbers, -1 meaning unknown. Times are in seconds;
// submit times are relative to the header's UnixStartTime.
//
// # Reading
//
// Open (a file) or NewReader (a stream) reads the header eagerly, so Header
// is available at once, and detects gzip by its magic bytes, whatever the
// name. Next returns the jobs in file order and io.EOF after the last one:
//
//	r, err := swf.Open(path)
//	if err != nil { ... }
//	defer r.Close()
//	units := swf.MachineUnits(r.Header())
//	for {
//		j, err := r.Next()
//		if err == io.EOF {
//			break
//		}
//		if err != nil { ... } // *swf.LineError: "FILE:LINE: what was wrong"
//		sj, why := j.Sim(units)
//		if why != swf.SkipNone {
//			skipped[why]++ // never skip silently
//			continue
//		}
//		...
//	}
//
// Blank lines are skipped anywhere. Comment lines after the first job are
// skipped too; they are not part of the Header (Raw holds the leading
// comment block only).
//
// Numbers may be written as decimals ("-1.00", "12.5"; some traces do this
// for the CPU-time and memory fields) in any field; they are truncated
// toward zero. Exponents, "inf" and "nan" are rejected.
//
// # Errors
//
// Every error from NewReader and Next is a *LineError naming the file and
// line: a malformed job line (wrong field count, a field that is not a
// number or does not fit in an int64), a malformed numeric header value, a
// line longer than MaxLineLen, or a read or decompression error (a
// truncated or corrupt gzip stream is reported, never taken for the end of
// the trace). The first four match ErrFieldCount, ErrNumber, ErrHeader and
// ErrLineTooLong with errors.Is. A malformed job line does not stop
// the reader: the next Next continues with the following line. Read errors
// are sticky. Open may also return the *fs.PathError of os.Open.
//
// # Normalisation
//
// Job.Sim is a pure function that turns a job into what a simulator needs
// (SimJob) or says why the job cannot be simulated (SkipReason), applying
// the usual fallbacks (allocated for requested processors, run time for a
// missing requested time) and reporting when it did.
//
// # Thread safety
//
// A Reader is not safe for concurrent use. Job, SimJob and Header are plain
// values.
package swf
