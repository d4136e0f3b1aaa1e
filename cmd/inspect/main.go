// Command inspect records multi-agent LLM runs, draws them, audits their
// topology and lets you question any recorded model call.
package main

import "os"

func main() {
	os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
