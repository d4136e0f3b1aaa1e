package kimicode

import (
	"path/filepath"

	"github.com/inspect-dev/inspect/importers"
	"testing"

	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestStoredRun_Unchanged imports every session the tests build and a
// generated 1 MB session (importerstest.BigKimiCode: sub-agents with task
// records, nested ones, compactions), and requires the stored run — every
// node, request and response — to be the one testdata/stored holds,
// written by the importer that read journals whole (commit "kimicode:
// goldens of the stored runs"): reading a session as it streams must
// record the same run. The real sample's is importers/all's.
func TestStoredRun_Unchanged(t *testing.T) {
	f := Format{}
	t.Run("swarm", func(t *testing.T) {
		dir := swarmSession(t)
		importerstest.SameStoredRun(t, "swarm", f, dir, filepath.Dir(dir), false)
	})
	t.Run("unlinked", func(t *testing.T) {
		dir := unlinkedSession(t)
		importerstest.SameStoredRun(t, "unlinked", f, dir, filepath.Dir(dir), false)
	})
	t.Run("edges", func(t *testing.T) {
		dir := edgesSession(t)
		importerstest.SameStoredRun(t, "edges", f, dir, filepath.Dir(dir), false)
	})
	t.Run("big", func(t *testing.T) {
		dir := t.TempDir()
		p, err := importerstest.BigKimiCode(dir, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		checkRaw(t, p, readOne(t, p, importers.Options{}))
		importerstest.SameStoredRun(t, "big-1MB", f, p, dir, true)
	})
}

// edgesSession writes: two calls resuming one sub-agent (each gets the
// turns of its own window), a background call whose sub-agent's own end
// decides its outcome, a fork call (inherit), a task naming a sub-agent
// whose journal is missing, a sub-agent no call names that started
// between the trunk's turns, and a response whose usage came after its
// tool result.
func edgesSession(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "edges")
	main := newJournal("main").
		prompt(0, "look twice").step(10, "s1").usage(100, tokens(10, 1, 0, 0)).
		call(200, "s1", "c1", "Agent", `{"description":"first","prompt":"look"}`).
		result(2000, "c1", "agent_id: agent-0\nactual_subagent_type: explore\nstatus: completed\n\n[summary]\nlooked", false).
		stepEnd(2010, "s1", tokens(10, 1, 0, 0)).
		step(2100, "s2").text(2200, "s2", "once").usage(2300, tokens(20, 2, 0, 0)).stepEnd(2310, "s2", tokens(20, 2, 0, 0)).
		ended(2400, "completed", "").
		prompt(4000, "again").step(4010, "s3").
		call(4100, "s3", "c2", "Agent", `{"description":"second","prompt":"again","resume":"agent-0"}`).
		call(4110, "s3", "c3", "Agent", `{"description":"behind","prompt":"watch","run_in_background":true}`).
		call(4120, "s3", "c4", "Agent", `{"description":"inherit","prompt":"carry on","fork":true}`).
		rec(4130, "task.started", taskRec("task.started", "t4", "agent-7", "c4", "running", 4130, 0, "")).
		result(4200, "c3", "agent_id: agent-1\nstatus: running", false).
		usage(4300, tokens(30, 3, 5, 0)).
		rec(4900, "task.terminated", taskRec("task.terminated", "t4", "agent-7", "c4", "failed", 4130, 4900, "boom")).
		result(4910, "c4", "failed", true).
		result(6000, "c2", "agent_id: agent-0\nstatus: completed\n\n[summary]\nlooked again", false).
		stepEnd(6010, "s3", tokens(30, 3, 5, 0)).
		step(6100, "s4").call(6110, "s4", "r1", "Read", `{"path":"x"}`).
		result(6200, "r1", "x body", false).usage(6300, tokens(40, 4, 0, 0)).stepEnd(6310, "s4", tokens(40, 4, 0, 0)).
		step(6400, "s5").text(6410, "s5", "twice").usage(6420, tokens(50, 5, 0, 0)).stepEnd(6430, "s5", tokens(50, 5, 0, 0)).
		ended(6500, "completed", "")
	write(t, filepath.Join(dir, "agents", "main", "wire.jsonl"), main.b.String())
	write(t, filepath.Join(dir, "agents", "agent-0", "wire.jsonl"), newJournal("agent-0").
		prompt(300, "look").step(310, "a").text(320, "a", "looked").usage(330, tokens(5, 1, 0, 0)).ended(340, "completed", "").
		prompt(4300, "again").step(4310, "b").text(4320, "b", "looked again").usage(4330, tokens(6, 1, 0, 0)).ended(5900, "completed", "").b.String())
	write(t, filepath.Join(dir, "agents", "agent-1", "wire.jsonl"), newJournal("agent-1").
		prompt(4250, "watch").step(4260, "w").call(4270, "w", "g1", "Glob", `{"pattern":"*"}`).
		result(4280, "g1", "a\nb", false).usage(4290, tokens(7, 1, 0, 0)).stepEnd(4295, "w", tokens(7, 1, 0, 0)).
		step(4296, "w2").text(4297, "w2", "seen").usage(4298, tokens(8, 1, 0, 0)).ended(7000, "completed", "").b.String())
	write(t, filepath.Join(dir, "agents", "agent-9", "wire.jsonl"), newJournal("coder").
		prompt(3000, "stray").step(3010, "z").text(3020, "z", "hi").usage(3030, tokens(5, 1, 0, 0)).ended(3040, "completed", "").b.String())
	write(t, filepath.Join(dir, "state.json"), `{"title":"edges","agents":{"main":{"type":"main","parentAgentId":null},"agent-0":{"type":"sub","parentAgentId":"main"},"agent-1":{"type":"sub","parentAgentId":"main"}}}`)
	return dir
}
