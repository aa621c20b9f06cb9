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
	if _, _, err := e.device(ctx, api.ExecTask{ID: 1, Shots: 10, Payload: []byte("p")}); err == nil {
		t.Fatal("a cancelled simulated job reported success")
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
