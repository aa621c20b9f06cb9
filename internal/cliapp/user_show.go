package cliapp

import (
	"cmp"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
)

func userShowCommand() *cli.Command {
	return &cli.Command{
		Name:      "show",
		Usage:     "show one user: name, role, Unix account and when they were added",
		UsageText: "strata user show NAME [--json]",
		Flags:     []cli.Flag{jsonFlag()},
		Action:    runUserShow,
	}
}

func runUserShow(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr(fmt.Errorf("'%s' takes one user name, got %q", cmdName(c), c.Args().Slice()))
	}
	name := c.Args().First()
	if err := api.ValidateUser(name); err != nil {
		return usageErr(err)
	}
	var rep api.UsersReply
	if err := callOnce(c, api.OpUsers, nil, &rep); err != nil {
		return err
	}
	for _, u := range rep.Users {
		if u.Name != name {
			continue
		}
		if c.Bool("json") {
			return printJSON(c.App.Writer, u)
		}
		return printUser(c.App.Writer, u)
	}
	return fmt.Errorf("no user %s; 'strata user list' shows who there is, 'strata user add %s' adds them", name, name)
}

// printUser writes one user as "field: value" lines.
func printUser(w io.Writer, u api.User) error {
	if u.Role == api.UserRoleAgent {
		_, err := fmt.Fprintf(w, "name:     %s\nrole:     %s\nnodes:    %s\ncreated:  %s\n", u.Name, u.Role, u.Nodes, createdText(u.Created))
		return err
	}
	_, err := fmt.Fprintf(w, "name:     %s\nrole:     %s\nunix:     %s\ncreated:  %s\n", u.Name, u.Role, cmp.Or(u.Unix, u.Name), createdText(u.Created))
	return err
}

// createdText is when a user was added, in local time: "-" if unknown
// (users recorded by an older broker may lack it).
func createdText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.RFC3339)
}
