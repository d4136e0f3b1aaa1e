package store

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/record"
)

// The crash and reader tests run this test binary again as a child process:
// STORE_TEST_CHILD selects what the child does.
func TestMain(m *testing.M) {
	switch os.Getenv("STORE_TEST_CHILD") {
	case "writer":
		os.Exit(childWriter(os.Getenv("STORE_TEST_DB")))
	case "reader":
		os.Exit(childReader(os.Getenv("STORE_TEST_DB"), os.Getenv("STORE_TEST_RUN")))
	}
	os.Exit(m.Run())
}

func openRaw(path string) (*sql.DB, error) { return sql.Open("sqlite3", path) }

// childWriter records a run forever, printing "run <id>" once and then
// "done <seq>" after each node is finished, until it is killed.
func childWriter(path string) int {
	ctx := context.Background()
	db, err := Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rec, err := db.CreateRun(ctx, &record.Run{Tasks: []string{"crash me"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("run %s\n", rec.RunID())
	reqs, _ := conversation(200)
	for i := 0; ; i++ {
		n := &record.Node{Kind: record.KindLLM, Agent: "a", LLM: &record.LLM{Model: "m", Request: reqs[i%len(reqs)]}}
		if err := rec.StartNode(ctx, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		n.LLM.Calls = []string{"read_file"}
		n.LLM.Response = []byte(`{"choices":[]}`)
		if err := rec.FinishNode(ctx, n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("done %d\n", n.Seq)
		// Leave the next node open for a moment, so the kill often lands on one.
		open := &record.Node{Kind: record.KindTool, Agent: "a", Tool: &record.Tool{Name: "read_file", Args: `{}`}}
		if err := rec.StartNode(ctx, open); err != nil {
			return 1
		}
		time.Sleep(time.Millisecond)
		if err := rec.FinishNode(ctx, open); err != nil {
			return 1
		}
		fmt.Printf("done %d\n", open.Seq)
	}
}

// childReader reads the run's nodes over and over while another process
// writes, printing the count it saw each time, and stops after 200 reads.
func childReader(path, run string) int {
	ctx := context.Background()
	db, err := Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; i < 200; i++ {
		r, err := db.LoadRun(ctx, run)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		count := 0
		if err := db.ScanNodes(ctx, r, func(*record.Node) error { count++; return nil }); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("saw %d\n", count)
		time.Sleep(2 * time.Millisecond)
	}
	return 0
}

func TestKill9_LosesNoFinishedNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	_, path := openTemp(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STORE_TEST_CHILD=writer", "STORE_TEST_DB="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	var runID string
	var done []int64
	for sc.Scan() {
		line := sc.Text()
		if id, ok := strings.CutPrefix(line, "run "); ok {
			runID = id
			continue
		}
		seq, _ := strconv.ParseInt(strings.TrimPrefix(line, "done "), 10, 64)
		done = append(done, seq)
		if len(done) == 300 {
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	for sc.Scan() { // lines printed before the kill landed
		seq, _ := strconv.ParseInt(strings.TrimPrefix(sc.Text(), "done "), 10, 64)
		done = append(done, seq)
	}
	cmd.Wait()
	if runID == "" || len(done) < 300 {
		t.Fatalf("child wrote run %q and %d nodes before dying", runID, len(done))
	}

	ctx := context.Background()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.IntegrityCheck(ctx); err != nil || v != "ok" {
		t.Fatalf("integrity_check = %q, %v", v, err)
	}
	run, err := db.LoadRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != record.StatusInterrupted {
		t.Errorf("run status = %s, want interrupted", run.Status)
	}
	status := map[int64]record.Status{}
	if err := db.ScanNodes(ctx, run, func(n *record.Node) error { status[n.Seq] = n.Status; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, seq := range done {
		if status[seq] != record.StatusOK {
			t.Fatalf("finished node n%d reads %q after the kill, want ok", seq, status[seq])
		}
	}
	for seq, s := range status {
		if s == record.StatusRunning {
			t.Errorf("n%d still reads running in an interrupted run", seq)
		}
	}
	// Every finished llm request still rebuilds.
	for _, seq := range done[:20] {
		if seq%2 == 1 {
			if _, err := db.Request(ctx, runID, seq); err != nil {
				t.Errorf("request of n%d after the kill: %v", seq, err)
			}
		}
	}
	t.Logf("killed after %d finished nodes; %d nodes on disk", len(done), len(status))
}

func TestSecondProcessReadsWhileRunWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	ctx := context.Background()
	db, path := openTemp(t)
	rec := newRun(t, db)
	if err := rec.AddNode(ctx, &record.Node{Kind: record.KindUser, Text: "go"}); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STORE_TEST_CHILD=reader", "STORE_TEST_DB="+path, "STORE_TEST_RUN="+rec.RunID())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	// The writers write until the reader has made its reads, at most 40
	// nodes ahead of each read it made: the run grows between reads however
	// slow the machine, and each read scans a bounded run (unpaced writers on
	// a loaded machine made each scan longer than the last, and the 200 reads
	// took longer than the deadline). Should the reader hang, it is killed
	// after three minutes and the writers stop, rather than fill the disk: a
	// stuck reader once let them write 30 GB.
	deadline := time.AfterFunc(3*time.Minute, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	var wg sync.WaitGroup
	var written sync.Map
	var reads, nodes atomic.Int64
	for w := 0; w < 8; w++ { // several goroutines write while the other process reads
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if nodes.Load() >= (reads.Load()+1)*40 {
					time.Sleep(time.Millisecond)
					continue
				}
				nodes.Add(1)
				n := &record.Node{Kind: record.KindTool, Agent: "a", Tool: &record.Tool{Name: "read_file", Args: fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)}}
				if err := rec.StartNode(ctx, n); err != nil {
					t.Error(err)
					return
				}
				if err := rec.FinishNode(ctx, n); err != nil {
					t.Error(err)
					return
				}
				written.Store(n.Seq, true)
				time.Sleep(time.Millisecond)
			}
		}(w)
	}
	sc := bufio.NewScanner(out)
	var counts []int
	for sc.Scan() {
		c, _ := strconv.Atoi(strings.TrimPrefix(sc.Text(), "saw "))
		counts = append(counts, c)
		reads.Add(1)
	}
	close(stop)
	wg.Wait()
	killed := !deadline.Stop()
	waitErr := cmd.Wait()
	if killed {
		t.Fatalf("the reader process made %d reads in three minutes and was killed\n%s", len(counts), stderr.String())
	}
	if waitErr != nil {
		t.Fatalf("reader process failed: %v\n%s", waitErr, stderr.String())
	}
	if len(counts) != 200 {
		t.Fatalf("reader made %d reads, want 200", len(counts))
	}
	grew := 0
	for i := 1; i < len(counts); i++ {
		if counts[i] < counts[i-1] {
			t.Fatalf("reader saw %d nodes after %d: a read went back in time", counts[i], counts[i-1])
		}
		if counts[i] > counts[i-1] {
			grew++
		}
	}
	if grew < 10 {
		t.Errorf("the reader saw the run grow only %d times in 200 reads; reads did not overlap the writes", grew)
	}
}
