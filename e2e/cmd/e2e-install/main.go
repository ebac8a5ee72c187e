// Command e2e-install installs the pinned agent CLIs of agentctl's end-to-end
// suite into the cache outside the repository (AGENTCTL_E2E_CACHE, else
// $XDG_CACHE_HOME/agentctl-e2e, else ~/.cache/agentctl-e2e) and prints where
// they are. The tests install on first use anyway; CI runs this first so the
// install time shows on its own line and stays out of the tests' timeouts.
//
//	go run ./e2e/cmd/e2e-install                 # every project
//	go run ./e2e/cmd/e2e-install agents          # one project
//	go run ./e2e/cmd/e2e-install -path just      # install if needed, print the tool's path
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/agentctl/agentctl/e2e/npm"
)

func main() {
	path := flag.String("path", "", "print the path of `TOOL` ("+strings.Join(npm.Tools(), ", ")+"), installing it if needed")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: e2e-install [project…] | e2e-install -path TOOL\nprojects: %s\n", strings.Join(npm.Projects(), " "))
		flag.PrintDefaults()
	}
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *path, flag.Args()); err != nil {
		fmt.Fprintf(os.Stderr, "e2e-install: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, tool string, names []string) error {
	cache, err := npm.CacheDir(os.Getenv)
	if err != nil {
		return err
	}
	in := &npm.Installer{Cache: cache, Log: os.Stderr}
	if tool != "" {
		if len(names) > 0 {
			return fmt.Errorf("-path takes no project names")
		}
		p, err := in.Tool(ctx, tool)
		if err != nil {
			return err
		}
		fmt.Println(p)
		return nil
	}
	if len(names) == 0 {
		names = npm.Projects()
	}
	for _, n := range names {
		dir, err := in.Ensure(ctx, n)
		if err != nil {
			return err
		}
		fmt.Println(dir)
	}
	return nil
}
