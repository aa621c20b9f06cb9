package client

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/natssetup"
	"github.com/strata-hpc/strata/internal/natstest"
)

// WithInProcessServer connects through the server's in-process
// connection, not the URI's host (which nothing listens on here), and
// the client works as over TCP.
func TestWithInProcessServer(t *testing.T) {
	cl := natstest.Start(t, natstest.Config{NoJetStream: true})
	sg, err := natssetup.LoadSigner(filepath.Join(cl.StateDir, "keys"))
	if err != nil || sg == nil {
		t.Fatalf("signer: %v", err)
	}
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = "alice"
	uc.IssuerAccount = sg.Account
	uc.Tags.Add(api.RoleTag + string(api.RoleUser))
	uc.Pub.Allow.Add("strata.>")
	uc.Sub.Allow.Add(api.RoleUser.InboxPrefix("alice") + ".>")
	tok, err := uc.Encode(sg.Key)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	text, err := jwt.FormatUserConfig(tok, seed)
	if err != nil {
		t.Fatal(err)
	}
	creds := filepath.Join(t.TempDir(), "alice.creds")
	if err := os.WriteFile(creds, text, 0o600); err != nil {
		t.Fatal(err)
	}

	// A whoami responder, through nats.go with the broker's credentials.
	subject, err := api.RequestSubject("alice", api.RootPath, api.OpWhoami)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(cl.URL(), nats.UserCredentials(cl.Creds))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Subscribe(subject, func(m *nats.Msg) {
		b, _ := api.EncodeReply(api.WhoamiReply{User: "alice"})
		m.Respond(b)
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()

	c, err := Dial("strata://127.0.0.1:1/root", WithCreds(creds), WithInProcessServer(cl.Server(0)), WithTimeout(30*time.Second))
	if err != nil {
		t.Fatalf("Dial in process: %v", err)
	}
	defer c.Close()
	w, err := c.Whoami(context.Background())
	if err != nil || w.User != "alice" {
		t.Fatalf("Whoami = %+v, %v", w, err)
	}
	// Without the option, the same URI reaches no server.
	if _, err := Dial("strata://127.0.0.1:1/root", WithCreds(creds)); code(err) != api.CodeUnavailable {
		t.Errorf("Dial over TCP to a closed port: %v, want unavailable", err)
	}
}
