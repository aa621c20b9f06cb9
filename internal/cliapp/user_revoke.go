package cliapp

import (
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/when"
)

// userLifecycleCommands are 'strata user del' and 'strata user revoke'.
func userLifecycleCommands() []*cli.Command {
	return []*cli.Command{
		{
			Name:      "del",
			Usage:     "delete a user and revoke their credentials",
			UsageText: "strata user del NAME [--json]",
			Description: "Forgets NAME (and their admin rights) and revokes their credentials: clients\n" +
				"connected with them are cut off at once, and they connect no more.",
			Flags: []cli.Flag{jsonFlag()},
			Action: func(c *cli.Context) error {
				return runUserLifecycle(c, "del", api.OpUserDel, "deleted; their credentials are revoked")
			},
		},
		{
			Name:      "revoke",
			Usage:     "revoke a user's credentials",
			UsageText: "strata user revoke NAME [--json]",
			Description: "Revokes NAME's current credentials: clients connected with them are cut off\n" +
				"at once, and they connect no more. The user stays known; 'strata user add NAME\n" +
				"--force' issues new credentials.\n\n" +
				"NAME may be a node agent's (role agent in 'strata user list'): its connection\n" +
				"is closed, the nodes it serves go down at once with the reason, and it may\n" +
				"not register again until 'strata user add NAME --agent --force' issues new\n" +
				"credentials. Other agents are not touched.",
			Flags: []cli.Flag{jsonFlag()},
			Action: func(c *cli.Context) error {
				return runUserLifecycle(c, "revoke", api.OpUserRevoke, "'s credentials are revoked")
			},
		},
	}
}

func runUserLifecycle(c *cli.Context, verb, op, done string) error {
	if c.NArg() != 1 {
		return usageErr(fmt.Errorf("'strata user %s' takes one user name, got %d arguments", verb, c.NArg()))
	}
	name := c.Args().First()
	if err := parseUserName(name); err != nil {
		return usageErr(err)
	}
	return show(c, op, api.UserRequest{Name: name},
		func(u *api.User) any { return u },
		func(w io.Writer, u *api.User) error {
			sep := " "
			if done[0] == '\'' {
				sep = ""
			}
			kind := "user"
			if u.Role == api.UserRoleAgent {
				kind = "agent"
			}
			_, err := fmt.Fprintf(w, "%s %s%s%s\n", kind, name, sep, done)
			return err
		})
}

// parseExpires reads --expires: a duration such as 90d, or "" for none.
func parseExpires(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	d, err := when.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	if d < time.Second || d > api.MaxCredsLife {
		return 0, fmt.Errorf("%s is out of range: give 1s to %s", s, api.FormatLimit(api.MaxCredsLife))
	}
	return int64(d / time.Second), nil
}
