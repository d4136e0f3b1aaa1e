package kimicli

import (
	"context"
	"os"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

func TestDump(t *testing.T) {
	p := os.Getenv("KIMI_DUMP")
	if p == "" {
		t.Skip()
	}
	ss, err := Format{}.Read(context.Background(), p, importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + importerstest.Dump(ss[0]))
}
