package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/strata-hpc/strata/api"
)

// TestRuntimeResvDeleteSeries: a user cannot delete a series and nothing
// changes; an admin deletes every occurrence in one request, and only them.
func TestRuntimeResvDeleteSeries(t *testing.T) {
	b, _ := runtime(t, "")
	ctx := context.Background()
	admin, alice := userClient(t, b, "admin"), userClient(t, b, "alice")
	start := time.Now().Truncate(time.Second).Add(time.Hour)
	for i, name := range []string{"wk-1", "wk-2", "wk-3", "wk"} {
		s := start.Add(time.Duration(i) * 24 * time.Hour)
		if err := admin.Call(ctx, api.OpResvCreate, api.ResvCreateRequest{Name: name, Start: s, End: s.Add(time.Hour), Nodes: 1}, nil); err != nil {
			t.Fatal(err)
		}
	}
	states := func() string {
		var list api.ResvsReply
		if err := admin.Call(ctx, api.OpResvList, nil, &list); err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, rv := range list.Resvs {
			out += fmt.Sprintf("%s=%s ", rv.Name, rv.State)
		}
		return out
	}
	before := states()
	if err := alice.Call(ctx, api.OpResvDeleteSeries, api.ResvRequest{Name: "wk"}, nil); !errors.Is(err, api.ErrPermissionDenied) {
		t.Fatalf("a user deleting a series: %v, want permission denied", err)
	}
	if got := states(); got != before {
		t.Fatalf("a refused series delete changed %q into %q", before, got)
	}
	var rep api.ResvsReply
	if err := admin.Call(ctx, api.OpResvDeleteSeries, api.ResvRequest{Name: "wk"}, &rep); err != nil {
		t.Fatal(err)
	}
	got := ""
	for _, rv := range rep.Resvs {
		got += rv.Name + "=" + rv.State + " "
	}
	if want := "wk-1=cancelled wk-2=cancelled wk-3=cancelled "; got != want {
		t.Fatalf("deleted %q, want %q", got, want)
	}
	if got, want := states(), "wk-1=cancelled wk-2=cancelled wk-3=cancelled wk=pending "; got != want {
		t.Fatalf("after the series delete: %q, want %q", got, want)
	}
	if err := admin.Call(ctx, api.OpResvDeleteSeries, api.ResvRequest{Name: "wk"}, nil); !errors.Is(err, api.ErrConflict) {
		t.Fatalf("deleting a series again: %v, want conflict", err)
	}
}
