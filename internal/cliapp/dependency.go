package cliapp

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/strata-hpc/strata/api"
)

// dependency is what a --dependency string asks for.
type dependency struct {
	AfterOK, AfterAny, AfterNotOK []api.JobID
	Singleton                     bool
}

// parseDependency reads Slurm's --dependency syntax, for the kinds Strata
// has: "afterok:12:13,afterany:14", "afternotok:15", "singleton". Items are
// comma-separated and must all hold. Slurm's '?' (any one of them), "after"
// (after the other job started), "aftercorr", "afterburstbuffer" and
// "expand" are refused with what to use instead.
func parseDependency(s string) (dependency, error) {
	var d dependency
	if strings.Contains(s, "?") {
		return dependency{}, fmt.Errorf("%q: '?' (any one of) is not supported: Strata needs every item, separated by commas", s)
	}
	if strings.TrimSpace(s) == "" {
		return dependency{}, fmt.Errorf("empty dependency: give afterok:ID, afterany:ID, afternotok:ID or singleton")
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		kind, ids, hasIDs := strings.Cut(item, ":")
		var dst *[]api.JobID
		switch kind {
		case "singleton":
			if hasIDs {
				return dependency{}, fmt.Errorf("%q: singleton takes no job IDs", item)
			}
			d.Singleton = true
			continue
		case "afterok":
			dst = &d.AfterOK
		case "afterany":
			dst = &d.AfterAny
		case "afternotok":
			dst = &d.AfterNotOK
		case "after", "aftercorr", "afterburstbuffer", "expand":
			return dependency{}, fmt.Errorf("%q: %s is not supported: use afterok, afterany, afternotok or singleton", item, kind)
		case "":
			return dependency{}, fmt.Errorf("%q has an empty item: separate items with single commas, as in afterok:12,afterany:13", s)
		default:
			return dependency{}, fmt.Errorf("%q: unknown dependency kind %q: use afterok:ID, afterany:ID, afternotok:ID or singleton", item, kind)
		}
		if !hasIDs {
			return dependency{}, fmt.Errorf("%q names no job: give %s:ID[:ID...]", item, kind)
		}
		for _, f := range strings.Split(ids, ":") {
			id, err := parseJobID(f)
			if err != nil {
				return dependency{}, fmt.Errorf("in %q: %w", item, err)
			}
			*dst = append(*dst, id)
		}
	}
	return d, nil
}

// exportEnv returns the environment a job gets under --export spec, from
// env (the submitter's): ALL (or "") is all of env, NONE nothing, and a
// comma list of NAME (taken from env; skipped when unset, as Slurm does)
// and NAME=VALUE items only those, or, when the list holds ALL, those on
// top of all of env. The broker adds the STRATA_ variables in any case.
// env is not modified.
func exportEnv(spec string, env map[string]string) (map[string]string, error) {
	switch spec {
	case "", "ALL":
		return env, nil
	case "NONE":
		return map[string]string{}, nil
	}
	items := strings.Split(spec, ",")
	out := map[string]string{}
	if slices.Contains(items, "ALL") {
		out = maps.Clone(env)
	}
	for _, it := range items {
		switch it {
		case "ALL":
			continue
		case "NONE":
			return nil, fmt.Errorf("%q: NONE cannot be listed with other items: give NONE alone, or the variables to pass", spec)
		case "":
			return nil, fmt.Errorf("%q has an empty item: separate items with single commas, as in ALL,DEBUG=1", spec)
		}
		name, value, set := strings.Cut(it, "=")
		if !envName(name) {
			return nil, fmt.Errorf("%q: %q is not a variable name: use letters, digits and '_', not starting with a digit", spec, name)
		}
		if set {
			out[name] = value
		} else if v, ok := env[name]; ok {
			out[name] = v
		}
	}
	return out, nil
}

// envName reports whether s is a portable environment variable name.
func envName(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
