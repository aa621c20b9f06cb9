package cliapp

import (
	"errors"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/qpuexec"
)

func parseQPUExecutor(t *testing.T, creds string, args ...string) (qpuexec.Options, error) {
	t.Helper()
	var o qpuexec.Options
	lookPath := func(p string) (string, error) {
		if p == "/opt/qpu/driver" || p == "driver" {
			return "/opt/qpu/driver", nil
		}
		return "", errors.New("not found")
	}
	err := parseCommand(t, qpuCommand(), "executor", func(c *cli.Context) error {
		f := qpuExecutorFlags{
			Backend: c.String("backend"), BackendSet: c.IsSet("backend"),
			Sim: c.Bool("sim"), SimBase: c.String("sim-base"), SimBaseSet: c.IsSet("sim-base"),
			SimPerShot: c.String("sim-per-shot"), PerShotSet: c.IsSet("sim-per-shot"),
			Seed: c.Int64("seed"), SeedSet: c.IsSet("seed"),
			Command: c.String("command"), CommandSet: c.IsSet("command"), Args: c.Args().Slice(),
		}
		fo, err := f.options("strata://h:1/root", creds, lookPath)
		o = qpuexec.Options(fo) // the conversion that cmd/strata-broker makes
		return err
	}, append([]string{"qpu", "executor"}, args...)...)
	return o, err
}

func TestQPUExecutorOptions(t *testing.T) {
	base := func(f func(o *qpuexec.Options)) qpuexec.Options {
		o := qpuexec.Options{URL: "strata://h:1/root", Creds: "e.creds", Backend: "qpu0", Sim: true, SimBase: 200 * time.Millisecond, SimPerShot: 100 * time.Microsecond}
		if f != nil {
			f(&o)
		}
		return o
	}
	for _, tc := range []struct {
		args []string
		want qpuexec.Options
	}{
		{[]string{"--backend", "qpu0", "--sim"}, base(nil)},
		{[]string{"--sim", "-b", "qpu0", "--sim-base", "1s", "--sim-per-shot", "1ms", "--seed", "-7"},
			base(func(o *qpuexec.Options) { o.SimBase, o.SimPerShot, o.Seed = time.Second, time.Millisecond, -7 })},
		{[]string{"--sim", "-b", "qpu0", "--sim-per-shot", "1ns"}, base(func(o *qpuexec.Options) { o.SimPerShot = time.Nanosecond })},
		{[]string{"-b", "qpu0", "--command", "/opt/qpu/driver"},
			base(func(o *qpuexec.Options) { o.Sim, o.Command = false, []string{"/opt/qpu/driver"} })},
		{[]string{"-b", "qpu0", "--command", "driver", "--", "--device", "3"},
			base(func(o *qpuexec.Options) { o.Sim, o.Command = false, []string{"driver", "--device", "3"} })},
	} {
		got, err := parseQPUExecutor(t, "e.creds", tc.args...)
		if err != nil {
			t.Errorf("qpu executor %q: %v", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("qpu executor %q:\n got %+v\nwant %+v", tc.args, got, tc.want)
		}
	}
}

func TestQPUExecutorErrors(t *testing.T) {
	for _, tc := range []struct {
		creds string
		args  []string
		msg   []string
	}{
		{"e.creds", []string{"--sim"}, []string{"--backend", "which QPU backend"}},
		{"e.creds", []string{"--sim", "-b", "Q0"}, []string{"-b/--backend", "not a QPU backend name"}},
		{"", []string{"--sim", "-b", "qpu0"}, []string{"--creds", "strata user add NAME --executor"}},
		{"e.creds", []string{"-b", "qpu0"}, []string{"no device", "--sim", "--command"}},
		{"e.creds", []string{"-b", "qpu0", "--sim", "--command", "driver"}, []string{"exclude each other"}},
		{"e.creds", []string{"-b", "qpu0", "--sim", "extra"}, []string{"only for --command"}},
		{"e.creds", []string{"-b", "qpu0", "--command", ""}, []string{"--command", "empty"}},
		{"e.creds", []string{"-b", "qpu0", "--command", "nodriver"}, []string{"--command", "nodriver", "no such program"}},
		{"e.creds", []string{"-b", "qpu0", "--command", "driver", "--sim-base", "1s"}, []string{"--sim-base goes with --sim"}},
		{"e.creds", []string{"-b", "qpu0", "--command", "driver", "--seed", "1"}, []string{"--seed goes with --sim"}},
		{"e.creds", []string{"-b", "qpu0", "--sim", "--sim-base", "soon"}, []string{"--sim-base"}},
		{"e.creds", []string{"-b", "qpu0", "--sim", "--sim-base", "0"}, []string{"--sim-base", "positive"}},
		{"e.creds", []string{"-b", "qpu0", "--sim", "--sim-per-shot", "-1ms"}, []string{"--sim-per-shot"}},
		{"e.creds", []string{"-b", "qpu0", "--sim", "--sim-per-shot", "0"}, []string{"--sim-per-shot", "positive"}},
		{"e.creds", []string{"-b", "qpu0", "--sim", "--seed", "x"}, []string{"seed"}},
	} {
		_, err := parseQPUExecutor(t, tc.creds, tc.args...)
		if err == nil || exitCode(err) != 2 {
			t.Errorf("qpu executor %q = %v; want a usage error", tc.args, err)
			continue
		}
		for _, m := range tc.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("qpu executor %q: error %q does not contain %q", tc.args, err, m)
			}
		}
	}
}

// qpu executor refuses bad arguments before it connects (there is no
// broker here).
func TestQPUExecutorUsageErrorsBeforeDial(t *testing.T) {
	t.Setenv(api.EnvURI, "strata://127.0.0.1:1/root")
	t.Setenv(api.EnvCreds, "/nonexistent/creds")
	for _, args := range [][]string{
		{"qpu", "executor", "--sim"},
		{"qpu", "executor", "-b", "qpu0"},
		{"qpu", "executor", "-b", "qpu0", "--sim", "--sim-base", "x"},
		{"qpu", "executor", "-b", "qpu0", "--command", "/nonexistent/driver"},
		{"qpu", "executor", "-b", "qpu0", "--sim", "--uri", "http://x"},
	} {
		app := newApp()
		app.Writer, app.ErrWriter = io.Discard, io.Discard
		err := app.Run(permuteArgs(app, append([]string{"strata"}, args...)))
		if err == nil || exitCode(err) != 2 {
			t.Errorf("strata %q = %v (exit %d); want a usage error, exit 2", args, err, exitCode(err))
		}
	}
	app := newApp()
	if got, want := permuteArgs(app, splitArgs("strata qpu executor --sim --backend qpu0 --seed 3"))[1:], splitArgs("qpu executor --sim --backend qpu0 --seed 3"); !slices.Equal(got, want) {
		t.Errorf("permuteArgs = %q; want %q", got, want)
	}
}
