package cliapp

import (
	"fmt"

	"github.com/urfave/cli/v2"
)

// completionCommand prints a shell's completion script. The bash and zsh
// scripts ask strata itself what may come next (urfave/cli's hidden
// --generate-bash-completion flag), so they follow the commands and flags
// of the strata that runs them; fish's is generated from the commands.
func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script for bash, zsh or fish",
		UsageText: "strata completion bash|zsh|fish",
		Description: "Load it in the shell's startup file, for instance:\n" +
			"  bash: source <(strata completion bash)        (in ~/.bashrc)\n" +
			"  zsh:  source <(strata completion zsh)         (in ~/.zshrc, after compinit)\n" +
			"  fish: strata completion fish > ~/.config/fish/completions/strata.fish",
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErr(fmt.Errorf("'strata completion' takes one shell, bash, zsh or fish; got %d arguments", c.NArg()))
			}
			switch shell := c.Args().First(); shell {
			case "bash":
				fmt.Fprint(c.App.Writer, bashCompletion)
			case "zsh":
				fmt.Fprint(c.App.Writer, zshCompletion)
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return fmt.Errorf("making the fish completion script: %w", err)
				}
				fmt.Fprint(c.App.Writer, s)
			default:
				return usageErr(fmt.Errorf("no completion for shell %q: give bash, zsh or fish", shell))
			}
			return nil
		},
	}
}

// bashCompletion is urfave/cli's bash script for strata: it runs the words
// typed so far with --generate-bash-completion and offers what comes back.
const bashCompletion = `# bash completion for strata: source <(strata completion bash)
_strata_bash_autocomplete() {
  local cur opts
  COMPREPLY=()
  cur="${COMP_WORDS[COMP_CWORD]}"
  if [[ "$cur" == "-"* ]]; then
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" "$cur" --generate-bash-completion 2>/dev/null)
  else
    opts=$("${COMP_WORDS[@]:0:$COMP_CWORD}" --generate-bash-completion 2>/dev/null)
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  return 0
}
complete -o bashdefault -o default -F _strata_bash_autocomplete strata
`

// zshCompletion is urfave/cli's zsh script for strata, as bashCompletion.
const zshCompletion = `#compdef strata
# zsh completion for strata: source <(strata completion zsh)
_strata() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} "$cur" --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}
compdef _strata strata
`

// manCommand prints strata's manual page, made from the commands
// themselves so that it never lags behind them.
func manCommand() *cli.Command {
	return &cli.Command{
		Name:         "man",
		Usage:        "print the manual page of strata (roff): strata man | man -l -",
		UsageText:    "strata man",
		OnUsageError: onUsageError,
		Action:       manAction,
	}
}
