//go:build linux

package executor_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/strata-hpc/strata/broker/executor"
	"github.com/strata-hpc/strata/internal/unixtest"
)

// BenchmarkLocal starts and reaps trivial jobs (/bin/true) through a Local
// executor, end to end: Start, the Exit from Exits, and Release. par is the
// number of goroutines calling Start; out is where the jobs' output goes
// (per-job files, as in production, or /dev/null).
//
//	go test -run '^$' -bench Local -benchtime 3000x ./broker/executor/
func BenchmarkLocal(b *testing.B) {
	for _, par := range []int{1, 2, 4, 8} {
		for _, out := range []string{"files", "devnull"} {
			b.Run(fmt.Sprintf("par=%d/out=%s", par, out), func(b *testing.B) {
				benchLocal(b, par, out == "devnull", executor.LocalOptions{}, "")
			})
		}
	}
}

// BenchmarkLocalAs is BenchmarkLocal/par=4/out=files with what issue 12
// added: a cgroup per job (cg=on: create, clone into, kill, read
// cpu.stat, remove), and jobs run as another account (user=other: the
// account lookup, the output files created on a thread with the account's
// fsuid, setuid in the child). user=other needs root and useradd.
//
//	go test -run '^$' -bench LocalAs -benchtime 2000x -count 5 ./broker/executor/
func BenchmarkLocalAs(b *testing.B) {
	for _, user := range []string{"self", "other"} {
		for _, cg := range []string{"off", "on"} {
			b.Run("user="+user+"/cg="+cg, func(b *testing.B) {
				opts := executor.LocalOptions{CgroupRoot: "none"}
				if cg == "on" {
					opts.CgroupRoot = ""
				}
				account, dir := "", ""
				if user == "other" {
					a := unixtest.Create(b, 1)[0]
					account, dir = a.Name, a.Home
				}
				benchLocal(b, 4, false, opts, account, dir)
			})
		}
	}
}

// benchLocal runs the benchmark with opts (StateDir and AllowRoot set
// here), the jobs run as account in dir ("": as self, in a fresh
// directory).
func benchLocal(b *testing.B, par int, devnull bool, opts executor.LocalOptions, account string, dirs ...string) {
	opts.StateDir, opts.AllowRoot = b.TempDir(), true
	opts.Logger = slog.New(slog.DiscardHandler)
	l, err := executor.NewLocal(opts)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	if opts.CgroupRoot == "" && executor.CgroupDir(l) == "" {
		b.Skip("no cgroup v2 delegation here")
	}
	dir := b.TempDir()
	if len(dirs) > 0 && dirs[0] != "" {
		dir = dirs[0]
	}
	spec := func(id string) executor.Spec {
		s := executor.Spec{ID: id, User: account, Argv: []string{"true"}, Dir: dir, Env: testEnv}
		if devnull {
			s.Stdout, s.Stderr = os.DevNull, os.DevNull
		}
		return s
	}
	// Warm up: the first Start starts the keeper.
	warm, err := l.Start(spec("warm"))
	if err != nil {
		b.Fatal(err)
	}
	<-l.Exits()
	cpu0 := procCPU(b, "self") + procCPU(b, strconv.Itoa(warm.KeeperPID))

	b.ReportAllocs()
	b.ResetTimer()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < b.N; i++ {
			e, ok := <-l.Exits()
			if !ok {
				return
			}
			if e.ExitCode != 0 {
				b.Errorf("exit %+v", e)
			}
			l.Release(e.ID)
		}
	}()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if _, err := l.Start(spec("j" + strconv.FormatInt(i, 10))); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	<-done
	b.StopTimer()
	cpu := procCPU(b, "self") + procCPU(b, strconv.Itoa(warm.KeeperPID)) - cpu0
	reportJobs(b, cpu)
	l.Close()
	// The keeper exits after its last job; wait, so that its CPU time does
	// not land on our children's account during the next benchmark.
	for syscall.Kill(warm.KeeperPID, 0) == nil {
		time.Sleep(time.Millisecond)
	}
}

// reportJobs reports throughput and the CPU time per job, all processes
// included (broker, keeper or shim, and the job itself). On a loaded
// machine the second is the steadier figure: a machine with n idle cores
// can start about n/cpu-per-job jobs per second.
func reportJobs(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/job")
}

// procCPU returns the CPU time process pid ("self" for this one) and its
// reaped children have used (/proc/PID/stat fields 14-17).
func procCPU(b *testing.B, pid string) time.Duration {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // f[0] is field 3
	var ticks int64
	for _, v := range f[11:15] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100) // USER_HZ
}

// BenchmarkSpawn measures the designs considered for recording a job's
// exit status (see the package documentation), each starting and reaping
// /bin/true with output to /dev/null:
//
//   - direct: the broker forks and execs the job itself (no exit status
//     survives the broker; the floor);
//   - sh-shim: /bin/sh -c '"$@"; echo $? >STATUS' sh true;
//   - go-shim: a per-job shim that re-executes a Go binary (this test
//     binary), which forks the job, waits and writes STATUS.
//
// BenchmarkLocal/out=devnull is the design chosen: one keeper per
// executor.
//
//	go test -run '^$' -bench Spawn -benchtime 2000x ./broker/executor/
func BenchmarkSpawn(b *testing.B) {
	status := filepath.Join(b.TempDir(), "status")
	designs := []struct {
		name string
		argv []string
		env  []string
	}{
		{"direct", []string{"/bin/true"}, testEnv},
		{"sh-shim", []string{"/bin/sh", "-c", `"$@"; echo $? >` + status, "sh", "/bin/true"}, testEnv},
		{"go-shim", []string{os.Args[0], "/bin/true"}, append([]string{"EXECUTOR_TEST_SHIM_STATUS=" + status}, testEnv...)},
	}
	for _, d := range designs {
		for _, par := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("%s/par=%d", d.name, par), func(b *testing.B) {
				devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
				if err != nil {
					b.Fatal(err)
				}
				defer devnull.Close()
				fd := devnull.Fd()
				attr := &syscall.ProcAttr{Env: d.env, Files: []uintptr{fd, fd, fd}, Sys: &syscall.SysProcAttr{Setpgid: true}}
				var next atomic.Int64
				var wg sync.WaitGroup
				cpu0 := procCPU(b, "self")
				b.ResetTimer()
				for w := 0; w < par; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for next.Add(1) <= int64(b.N) {
							pid, err := syscall.ForkExec(d.argv[0], d.argv, attr)
							if err != nil {
								b.Error(err)
								return
							}
							var ws syscall.WaitStatus
							if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
								b.Errorf("wait: %v, %v", ws, err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				reportJobs(b, procCPU(b, "self")-cpu0)
			})
		}
	}
}
