package broker_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker"
	"github.com/strata-hpc/strata/client"
)

// A broker embedded in a program: serve the root instance with one
// operation, add a user, and call it as that user.
func Example() {
	dir, _ := os.MkdirTemp("", "strata-example")
	defer os.RemoveAll(dir)

	b, err := broker.New(broker.Options{Listen: "127.0.0.1:0", StateDir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	if err := b.Start(); err != nil {
		panic(err)
	}
	defer b.Shutdown()

	_, err = b.ServeInstance("root", broker.Mux{
		"hello": func(ctx context.Context, req broker.Request) (any, error) {
			return "hello, " + req.User, nil
		},
	})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	rep, err := b.AddUser(ctx, api.UserAddRequest{Name: "alice"})
	if err != nil {
		panic(err)
	}
	creds := filepath.Join(dir, "alice.creds")
	os.WriteFile(creds, []byte(rep.Creds), 0o600)

	c, err := client.Dial(b.URI("root"), client.WithCreds(creds))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	var greeting string
	if err := c.Call(ctx, "hello", nil, &greeting); err != nil {
		panic(err)
	}
	fmt.Println(greeting)
	err = c.Call(ctx, api.OpUserAdd, api.UserAddRequest{Name: "mallory"}, nil)
	fmt.Println(api.CodeOf(err))
	// Output:
	// hello, alice
	// permission_denied
}
