// Command inspect records multi-agent LLM runs, draws them, audits their
// topology and lets you question any recorded model call.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

func main() {
	os.Exit(profiled(os.Getenv("INSPECT_CPUPROFILE"), func() int {
		return Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	}))
}

// profiled runs main, writing a CPU profile of the whole process to file
// when it is set (INSPECT_CPUPROFILE: README's Speed section reads the
// commands' profiles with `go tool pprof`).
func profiled(file string, main func() int) int {
	if file == "" {
		return main()
	}
	f, err := os.Create(file)
	if err != nil {
		fmt.Fprintf(os.Stderr, "inspect: INSPECT_CPUPROFILE: %v\n", err)
		return ExitUsage
	}
	defer f.Close()
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "inspect: INSPECT_CPUPROFILE: %v\n", err)
		return ExitUsage
	}
	defer pprof.StopCPUProfile()
	return main()
}
