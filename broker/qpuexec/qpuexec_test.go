package qpuexec

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/qpu"
)

func TestDriverCommand(t *testing.T) {
	e := &executor{log: slog.New(slog.DiscardHandler)}
	tests := []struct {
		name    string
		script  string
		counts  map[string]int
		errPart string
	}{
		{"histogram", `read p; echo "shots $STRATA_QPU_SHOTS of $p" >&2; echo '{"counts":{"00":'$STRATA_QPU_SHOTS'}}'`, map[string]int{"00": 7}, ""},
		{"fails", `echo broken >&2; exit 3`, nil, "failed"},
		{"not JSON", `echo hello`, nil, "no JSON histogram"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.o = Options{Command: []string{"sh", "-c", tc.script}}
			counts, log, err := e.device(context.Background(), api.ExecTask{ID: 1, Shots: 7, Payload: []byte("bell\n")})
			if tc.errPart != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errPart) {
					t.Fatalf("err %v, want one with %q", err, tc.errPart)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(counts, tc.counts) || !strings.Contains(log, "shots 7 of bell") {
				t.Fatalf("counts %v, log %q, err %v", counts, log, err)
			}
		})
	}
}

// TestSimDeviceLetsGo: a simulated job lets go of the device when told to.
func TestSimDeviceLetsGo(t *testing.T) {
	e := &executor{o: Options{Sim: true, SimBase: time.Hour}, log: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, _, err := e.device(ctx, api.ExecTask{ID: 1, Shots: 10, Payload: []byte("h q0")}); err == nil || err.Error() != "let go before the end" {
		t.Fatalf("a cancelled simulated job: %v", err)
	}
}

// TestSimDeviceRuns: the simulated device simulates (a Bell pair gives
// only 00 and 11), the same job gives the same counts, and a payload it
// cannot read fails at once, with the line and the reason.
func TestSimDeviceRuns(t *testing.T) {
	e := &executor{o: Options{Sim: true, SimBase: time.Millisecond, SimPerShot: time.Nanosecond, Seed: 3}, log: slog.New(slog.DiscardHandler)}
	bell := api.ExecTask{ID: 7, Shots: 1000, Payload: []byte("h q0; cx q0 q1")}
	counts, log, err := e.device(context.Background(), bell)
	if err != nil || len(counts) != 2 || counts["00"]+counts["11"] != 1000 || counts["00"] < 400 || counts["11"] < 400 || log != "simulated device, seed 3" {
		t.Fatalf("a Bell pair: %v, %q, %v", counts, log, err)
	}
	if again, _, _ := e.device(context.Background(), bell); !reflect.DeepEqual(again, counts) {
		t.Errorf("the same job gave %v, then %v", counts, again)
	}
	e.o.SimBase = time.Hour
	start := time.Now()
	_, _, err = e.device(context.Background(), api.ExecTask{ID: 8, Shots: 10, Payload: []byte("h q0\nfoo q1")})
	want := `the simulated device cannot run this circuit: line 2: unknown gate "foo"; supported: ` + qpu.Supported
	if err == nil || err.Error() != want || time.Since(start) > time.Minute {
		t.Errorf("a bad payload: %v\nwant %s", err, want)
	}
}

func writeCreds(t *testing.T, role api.Role) string {
	t.Helper()
	akp, _ := nkeys.CreateAccount()
	ukp, _ := nkeys.CreateUser()
	upub, _ := ukp.PublicKey()
	uc := jwt.NewUserClaims(upub)
	uc.Name = "someone"
	uc.Tags.Add(api.RoleTag + string(role))
	tok, err := uc.Encode(akp)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := ukp.Seed()
	data, _ := jwt.FormatUserConfig(tok, seed)
	f := filepath.Join(t.TempDir(), "x.creds")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestRunRefusesBadConfiguration(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		o    Options
		want string
	}{
		{Options{Sim: true}, "no backend"},
		{Options{Backend: "qpu0"}, "no device"},
		{Options{Backend: "qpu0", Sim: true, Creds: "/nonexistent"}, "cannot read credentials"},
		{Options{Backend: "qpu0", Sim: true, Creds: writeCreds(t, api.RoleUser)}, "not an executor's"},
	}
	for _, tc := range tests {
		if err := Run(ctx, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%+v): %v, want an error with %q", tc.o, err, tc.want)
		}
	}
	if name, err := credsName(writeCreds(t, api.RoleExecutor)); err != nil || name != "someone" {
		t.Errorf("executor credentials: %q, %v", name, err)
	}
}
