package cliapp

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
)

func userCommand() *cli.Command {
	return &cli.Command{
		Name:  "user",
		Usage: "manage users (admins)",
		Subcommands: append([]*cli.Command{
			{
				Name:      "add",
				Usage:     "create a user and write their credentials file",
				UsageText: "strata user add NAME [--admin | --executor | --agent [--nodes HOSTLIST]] [--unix ACCOUNT] [-o FILE] [--force]",
				Description: "Asks the root instance for credentials for NAME and writes them to FILE\n" +
					"(default NAME.creds in the current directory; '-' for stdout) with mode 0600.\n" +
					"An existing file is never overwritten, nor an existing user given new\n" +
					"credentials, without --force (their old credentials stay valid). The user\n" +
					"saves the file as ~/.config/strata/LOGIN.creds or points STRATA_CREDS at it.\n\n" +
					"--executor issues credentials for a QPU executor named NAME instead: they may\n" +
					"only speak the executor protocol ('strata qpu executor --creds FILE'), not\n" +
					"submit or look at jobs.\n\n" +
					"The user's jobs run as the Unix account of the same name on the nodes, or as\n" +
					"--unix ACCOUNT; with --force the recorded account stays unless --unix is given.\n\n" +
					"--agent issues credentials for a node agent named NAME ('strata agent'), for\n" +
					"the nodes of --nodes (default: the node named NAME): it may hear only those\n" +
					"nodes' commands and speak only for them. Agents are listed with the users\n" +
					"(role agent) and share their names; 'strata user revoke NAME' cuts off one\n" +
					"agent (a stolen node) and takes its nodes down at once.",
				Flags: []cli.Flag{
					&cli.BoolFlag{Name: "admin", Usage: "make the user an administrator"},
					&cli.BoolFlag{Name: "executor", Usage: "credentials for a QPU executor ('strata qpu executor'), which may only speak the executor protocol"},
					&cli.BoolFlag{Name: "agent", Usage: "credentials for a node agent ('strata agent'), which may only serve the nodes of --nodes"},
					&cli.StringFlag{Name: "nodes", Usage: "with --agent: the nodes the agent may serve, a hostlist (default: the node named NAME)"},
					&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "the credentials file (default NAME.creds; '-' for stdout)"},
					&cli.BoolFlag{Name: "force", Usage: "overwrite the file, and issue new credentials to an existing user (revoking the old ones)"},
					&cli.StringFlag{Name: "expires", Usage: "the credentials stop working after this long, e.g. 90d (default: never)"},
					&cli.StringFlag{Name: "unix", Usage: "the Unix account the user's jobs run as (default: the user's name)"},
				},
				Action: runUserAdd,
			},
			{
				Name:      "list",
				Usage:     "list the users the broker knows",
				UsageText: "strata user list [--json]",
				Flags:     []cli.Flag{jsonFlag()},
				Action:    runUserList,
			},
			userShowCommand(),
		}, userLifecycleCommands()...),
	}
}

// credsFile is where user add writes credentials: the file itself, or a
// temporary file beside it that replaces it at commit (--force). It is
// opened before the broker is asked, so that credentials are never issued
// that cannot be saved.
type credsFile struct {
	path string
	f    *os.File
	tmp  bool
}

func openCredsFile(path string, force bool) (*credsFile, error) {
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("%s exists: not overwriting it; give another file with -o, or --force", path)
		}
		if err != nil {
			return nil, fmt.Errorf("cannot create the credentials file: %w", err)
		}
		return &credsFile{path: path, f: f}, nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory; give a file with -o", path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot create the credentials file: %w", err)
	}
	return &credsFile{path: path, f: f, tmp: true}, nil
}

// commit writes the credentials and puts the file in place.
func (c *credsFile) commit(creds string) error {
	_, err := io.WriteString(c.f, creds)
	if err == nil {
		err = c.f.Chmod(0o600)
	}
	if err == nil {
		err = c.f.Sync()
	}
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && c.tmp {
		err = os.Rename(c.f.Name(), c.path)
	}
	if err != nil {
		os.Remove(c.f.Name())
		return fmt.Errorf("the credentials were issued but could not be saved to %s (%w); run again with --force", c.path, err)
	}
	return nil
}

// abort removes the file.
func (c *credsFile) abort() {
	c.f.Close()
	os.Remove(c.f.Name())
}

func runUserAdd(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr(fmt.Errorf("'strata user add' takes one user name, got %d arguments", c.NArg()))
	}
	name := c.Args().First()
	if err := parseUserName(name); err != nil {
		return usageErr(err)
	}
	out := c.String("output")
	if c.IsSet("output") && out == "" {
		return flagErr("-o/--output", fmt.Errorf("empty file name; give a file, or '-' for stdout"))
	}
	if out == "" {
		out = name + ".creds"
	}
	expires, err := parseExpires(c.String("expires"))
	if err != nil {
		return flagErr("--expires", err)
	}
	if c.IsSet("unix") {
		if c.Bool("executor") {
			return usageErr(fmt.Errorf("--unix and --executor exclude each other: QPU executors run no jobs on nodes"))
		}
		if err := api.ValidateUnixAccount(c.String("unix")); err != nil {
			return flagErr("--unix", err)
		}
	}
	if c.Bool("executor") && c.Bool("admin") {
		return usageErr(fmt.Errorf("--admin and --executor exclude each other: executor credentials may only speak the executor protocol; give one"))
	}
	if c.Bool("agent") && (c.Bool("admin") || c.Bool("executor")) {
		return usageErr(fmt.Errorf("--agent excludes --admin and --executor: agent credentials may only speak the agent protocol; give one"))
	}
	if c.IsSet("nodes") && !c.Bool("agent") {
		return flagErr("--nodes", fmt.Errorf("only agent credentials serve nodes; add --agent"))
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	var file *credsFile
	if out != "-" {
		if file, err = openCredsFile(out, c.Bool("force")); err != nil {
			return err
		}
	}
	var rep api.UserAddReply
	if err := call(c, cl, api.OpUserAdd, api.UserAddRequest{Name: name, Admin: c.Bool("admin"), Force: c.Bool("force"), Executor: c.Bool("executor"), Agent: c.Bool("agent"), Nodes: c.String("nodes"), ExpiresS: expires, Unix: c.String("unix")}, &rep); err != nil {
		if file != nil {
			file.abort()
		}
		return err
	}
	if file == nil {
		_, err := io.WriteString(c.App.Writer, rep.Creds)
		return err
	}
	if err := file.commit(rep.Creds); err != nil {
		return err
	}
	role, serving, until := "user", "", ""
	switch {
	case c.Bool("executor"):
		role = "QPU executor"
	case c.Bool("agent"):
		role = "node agent"
		serving = ", serving " + rep.Nodes
	case rep.Admin:
		role = "admin"
	}
	if !rep.Expires.IsZero() {
		until = ", valid until " + rep.Expires.Local().Format(time.RFC3339)
	}
	unix := ""
	if rep.Unix != "" && rep.Unix != rep.Name {
		unix = "; jobs run as Unix account " + rep.Unix
	}
	fmt.Fprintf(c.App.Writer, "wrote %s: credentials for %s %s%s (mode 0600%s)%s\n", out, role, rep.Name, serving, until, unix)
	return nil
}

func runUserList(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	return show(c, api.OpUsers, nil,
		func(rep *api.UsersReply) any { return nonNil(rep.Users) },
		func(w io.Writer, rep *api.UsersReply) error {
			tw := newTable(w)
			fmt.Fprintln(tw, "NAME\tROLE\tUNIX\tCREATED\tEXPIRES\tCREDENTIALS")
			for _, u := range rep.Users {
				expires, creds := "-", "-"
				if !u.Expires.IsZero() {
					expires = u.Expires.Local().Format(time.RFC3339)
				}
				if u.Key != "" {
					creds = "valid"
				}
				unix := cmp.Or(u.Unix, u.Name)
				if u.Role == api.UserRoleAgent {
					unix = "-" // runs no jobs of its own; 'user show' gives its nodes
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.Name, u.Role, unix, createdText(u.Created), expires, creds)
			}
			return tw.Flush()
		})
}

func whoamiCommand() *cli.Command {
	return &cli.Command{
		Name:      "whoami",
		Usage:     "print who the broker takes you for, and where",
		UsageText: "strata whoami [--json]",
		Flags:     []cli.Flag{jsonFlag()},
		Action:    runWhoami,
	}
}

func runWhoami(c *cli.Context) error {
	if err := noArgs(c); err != nil {
		return err
	}
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	w, err := cl.Whoami(ctxOf(c))
	if err != nil {
		return err
	}
	if w.URI == "" {
		w.URI = cl.URI()
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, w)
	}
	admin := ""
	if w.Admin {
		admin = " (admin)"
	}
	fmt.Fprintf(c.App.Writer, "%s%s at %s\n", w.User, admin, w.URI)
	return nil
}
