package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/storage/postgres"
)

// startNode runs `assay serve` as one node of a cluster: its own data
// directory for the compile cache, the shared PostgreSQL store at dbURL,
// the signing keys in the shared directory keys, and any further args.
func startNode(tb testing.TB, dbURL, keys string, env []string, args ...string) *server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("e2e: starts servers")
	}
	return startServe(tb, tb.TempDir(), append([]string{"--store", "postgres:" + dbURL, "--keys", keys}, args...), env, 60*time.Second)
}

// startCluster starts n nodes on one fresh PostgreSQL database and one key
// directory: the first alone, so that it creates the keys the others load.
// It skips without ASSAY_TEST_POSTGRES.
func startCluster(tb testing.TB, n int, args ...string) (nodes []*server, dbURL string) {
	tb.Helper()
	return startClusterEnv(tb, n, nil, args...)
}

// startClusterEnv is startCluster with more environment for every node.
// Node i's connections to the database are named nodeApp(i)
// (application_name).
func startClusterEnv(tb testing.TB, n int, env []string, args ...string) (nodes []*server, dbURL string) {
	tb.Helper()
	dbURL = pgtest.URL(tb)
	keys := tb.TempDir()
	nodes = make([]*server, n)
	nodes[0] = startNode(tb, withApp(tb, dbURL, nodeApp(0)), keys, env, args...)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() { nodes[i] = startNode(tb, withApp(tb, dbURL, nodeApp(i)), keys, env, args...) })
	}
	wg.Wait()
	for _, s := range nodes {
		if s == nil {
			tb.FailNow()
		}
	}
	return nodes, dbURL
}

// nodeApp is the application_name of node i's database connections.
func nodeApp(i int) string { return fmt.Sprintf("assay-e2e-node%d", i) }

// withApp returns the PostgreSQL URL dbURL with its connections named app.
func withApp(tb testing.TB, dbURL, app string) string {
	tb.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestMultiNode runs three `assay serve` processes on one PostgreSQL
// database with shared signing keys. Concurrent clients drive whole escrow
// cases with every step on another node; accept and dispute race on the
// same contracts from different nodes, and verdicts on the same Matters;
// one node is killed with SIGKILL in the middle of the load. Then every
// acknowledged write is read back through each surviving node, every
// race had exactly one winner, every receipt verifies against the keys any
// node publishes, and the ledger sums to zero.
func TestMultiNode(t *testing.T) {
	t.Parallel()
	nodes, dbURL := startCluster(t, 3, "--matters-auth", "open")
	client := &http.Client{Timeout: 20 * time.Second}

	// The keys every node publishes are the same.
	var published []byte
	for i, s := range nodes {
		r := s.get(t, "/.well-known/assay-keys")
		if r.status != http.StatusOK {
			t.Fatalf("node %d keys: %d %s", i, r.status, r.body)
		}
		if i == 0 {
			published = r.body
		} else if !bytes.Equal(r.body, published) {
			t.Fatalf("node %d publishes other keys:\n%s\nnode 0:\n%s", i, r.body, published)
		}
	}
	keys, err := receipt.ParseKeys(published)
	if err != nil {
		t.Fatal(err)
	}
	verifier := receipt.NewVerifier(keys)

	// alive is the nodes not killed; requests go round them.
	var killed atomic.Int32
	killed.Store(-1)
	node := func(i int) *server {
		if k := int(killed.Load()); k >= 0 && i%len(nodes) == k {
			i++
		}
		return nodes[i%len(nodes)]
	}
	post := func(s *server, path, body string) (int, map[string]any) {
		resp, err := client.Post(s.base+path, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, nil // the node is gone: nothing acknowledged
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, nil
		}
		var out map[string]any
		_ = json.Unmarshal(data, &out)
		return resp.StatusCode, out
	}

	// 1. Load: whole cases, each step on the next node, from 12 clients;
	// node 2 is killed once 60 cases are decided.
	var (
		mu     sync.Mutex
		acks   = map[string]ack{}
		done   atomic.Int64
		stop   atomic.Bool
		wg     sync.WaitGroup
		record = func(id string, a ack) { mu.Lock(); acks[id] = a; mu.Unlock() }
	)
	for c := range 12 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				step := c + i
				st, created := post(node(step), "/contracts", fmt.Sprintf(
					`{"buyer":"did:multi:b%d","seller":"did:multi:s%d","price":%d,"acceptance":{"assertions":[{"path":"rows","op":"gte","value":3}]}}`,
					c, i%7, 10+i))
				if st != http.StatusOK {
					continue
				}
				id, _ := created["contract_id"].(string)
				record(id, ack{status: "created"})
				if st, _ := post(node(step+1), "/contracts/"+id+"/fund", `{}`); st != http.StatusOK {
					continue
				}
				record(id, ack{status: "funded"})
				if st, _ := post(node(step+2), "/contracts/"+id+"/deliver", fmt.Sprintf(`{"deliverable":{"rows":%d},"evidence":{}}`, i%5)); st != http.StatusOK {
					continue
				}
				record(id, ack{status: "delivered"})
				action, body := "/accept", `{}`
				if i%2 == 1 {
					action, body = "/dispute", `{"reason":"multinode"}`
				}
				st, rec := post(node(step+3), "/contracts/"+id+action, body)
				if st != http.StatusOK {
					continue
				}
				rid, _ := rec["id"].(string)
				record(id, ack{status: "decided", receipt: rid})
				done.Add(1)
			}
		})
	}

	// 2. Races, while the load runs: accept and dispute of one delivered
	// contract sent at once to three nodes; one verdict per Matter.
	raceContracts := func(n int) (winners map[string]string) {
		winners = map[string]string{}
		for k := range n {
			id := nodes[k%2].deliveredCase(t, "did:multi:race", `{"assertions":[{"path":"rows","op":"gte","value":3}]}`, `{"rows":3}`)
			type result struct {
				status int
				action string
				body   map[string]any
			}
			results := make([]result, 3)
			var rw sync.WaitGroup
			for j, action := range []string{"/accept", "/dispute", "/accept"} {
				rw.Go(func() {
					body := `{}`
					if action == "/dispute" {
						body = `{"reason":"race"}`
					}
					st, out := post(node(j), "/contracts/"+id+action, body)
					results[j] = result{st, action, out}
				})
			}
			rw.Wait()
			wins := 0
			for _, r := range results {
				switch r.status {
				case http.StatusOK:
					wins++
					rid, _ := r.body["id"].(string)
					winners[id] = rid
					record(id, ack{status: "decided", receipt: rid})
				case http.StatusConflict:
				default:
					t.Errorf("race on %s: %s answered %d %v", id, r.action, r.status, r.body)
				}
			}
			if wins != 1 {
				t.Errorf("race on %s: %d winners, want 1: %+v", id, wins, results)
			}
		}
		return winners
	}
	winners := raceContracts(15)

	const matters = "/api/v1/economic/matters"
	matterIDs := map[string]string{} // matter id -> the verdict that won
	for k := range 10 {
		open := `{"requester_id":"multi-requester",` + strings.TrimPrefix(matterOpen(time.Now().Add(time.Hour), fmt.Sprintf("multi-open-%d", k)), "{")
		st, opened := post(nodes[k%3], matters+"/open", open)
		if st != http.StatusCreated {
			t.Fatalf("open a matter: %d %v", st, opened)
		}
		id := opened["matter"].(map[string]any)["matter_id"].(string)
		var (
			wins  atomic.Int32
			won   atomic.Value
			races sync.WaitGroup
		)
		for j := range 6 {
			races.Go(func() {
				ok := j%2 == 0
				st, body := post(node(j), matters+"/verdict", fmt.Sprintf(
					`{"matter_id":"%s","solver_id":"solver-%d","solver_kind":"model","action_digest":"%s","verdict":{"ok":%v},"idempotency_key":"mv-%d-%d"}`,
					id, j, mattersDigest, ok, k, j))
				switch {
				case st == http.StatusOK:
					wins.Add(1)
					won.Store(fmt.Sprint(ok))
				case st == http.StatusConflict:
				default:
					t.Errorf("verdict on %s: %d %v", id, st, body)
				}
			})
		}
		races.Wait()
		if wins.Load() != 1 {
			t.Errorf("matter %s: %d verdicts won, want 1", id, wins.Load())
			continue
		}
		matterIDs[id] = won.Load().(string)
	}

	// 3. Kill node 2 once the load is well under way.
	deadline := time.Now().Add(60 * time.Second)
	for done.Load() < 60 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polls the count of decided cases
	}
	if err := nodes[2].cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-nodes[2].exited
	killed.Store(2)
	// The survivors keep serving: more races and load after the kill.
	atKill := done.Load()
	for id, w := range raceContracts(5) {
		winners[id] = w
	}
	// and the load goes on through them: 20 more cases decided.
	for deadline := time.Now().Add(30 * time.Second); done.Load() < atKill+20 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // polls the count of decided cases
	}
	stop.Store(true)
	wg.Wait()
	if done.Load() == 0 {
		t.Fatalf("no case was decided\n%s", nodes[0].out)
	}
	t.Logf("killed node 2 after %d decided cases, %d in all; %d contracts acknowledged", atKill, done.Load(), len(acks))
	if done.Load() < atKill+20 {
		t.Errorf("the survivors decided %d cases after the kill, want 20", done.Load()-atKill)
	}

	// 4. Every acknowledged write, read back through each survivor.
	survivors := nodes[:2]
	missing, verified := 0, 0
	for id, a := range acks {
		for n, s := range survivors {
			r := s.get(t, "/contracts/"+id)
			if r.status != http.StatusOK {
				t.Errorf("node %d: contract %s (acknowledged %s) is missing: %d", n, id, a.status, r.status)
				missing++
				continue
			}
			got, _ := r.obj(t)["status"].(string)
			if rank(got) < rank(a.status) {
				t.Errorf("node %d: contract %s acknowledged %s, found %s", n, id, a.status, got)
			}
			if w, ok := winners[id]; ok {
				// The contract holds the winner's receipt as its last.
				var c struct{ Receipts []string }
				_ = json.Unmarshal(r.body, &c)
				if len(c.Receipts) == 0 || !strings.HasSuffix(w, strings.TrimPrefix(c.Receipts[len(c.Receipts)-1], "urn:assay:receipt:")) {
					t.Errorf("node %d: contract %s: receipt %s won the race, but the contract's receipts are %v", n, id, w, c.Receipts)
				}
			}
			if a.receipt == "" {
				continue
			}
			rid := strings.TrimPrefix(a.receipt, "urn:assay:receipt:")
			rr := s.get(t, "/receipts/"+rid)
			if rr.status != http.StatusOK {
				t.Errorf("node %d: receipt %s of contract %s is missing: %d", n, a.receipt, id, rr.status)
				continue
			}
			if v := verifier.Verify(rr.body); !v.Valid {
				t.Errorf("node %d: receipt %s does not verify against the published keys: %s", n, a.receipt, v.Reason)
			} else {
				verified++
			}
		}
		if missing > 10 {
			t.Fatal("too many missing contracts")
		}
	}
	if verified == 0 {
		t.Error("no receipt was verified")
	}
	if len(matterIDs) == 0 {
		t.Error("no matter had a verdict")
	}
	for id, ok := range matterIDs {
		for n, s := range survivors {
			r := s.get(t, matters+"/"+id)
			m, _ := r.obj(t)["matter"].(map[string]any)
			if r.status != http.StatusOK || m == nil {
				t.Errorf("node %d: matter %s: %d %s", n, id, r.status, r.body)
				continue
			}
			if v, _ := json.Marshal(m["verdict"]); !strings.Contains(string(v), `"ok":`+ok) {
				t.Errorf("node %d: matter %s holds verdict %s, but %s won", n, id, v, ok)
			}
			rc := s.get(t, matters+"/"+id+"/receipts")
			list, _ := rc.obj(t)["receipts"].([]any)
			if len(list) < 2 {
				t.Errorf("node %d: matter %s has %d receipts", n, id, len(list))
			}
			for _, x := range list {
				b, _ := json.Marshal(x)
				if v := verifier.Verify(b); !v.Valid {
					t.Errorf("node %d: a receipt of matter %s does not verify: %s", n, id, v.Reason)
				}
			}
		}
	}

	// 5. The ledger sums to zero, as every node reports it and as the
	// database holds it.
	for n, s := range survivors {
		if l := s.get(t, "/ledger").obj(t); l["balanced"] != true {
			t.Errorf("node %d: ledger %v", n, l)
		}
	}
	db, err := postgres.Open(context.Background(), dbURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ledgerAtZero(t, db, done.Load())
}

// TestMultiNode_Replays queues replays in the shared database and shows
// every node's worker running them; then it kills one node with SIGKILL
// in the middle of a second batch, and the jobs it held are run by the
// others once their lease runs out, every one recorded once.
func TestMultiNode_Replays(t *testing.T) {
	t.Parallel()
	checker := filepath.Join("..", "fixtures", "checkers", "rows.wasm")
	warmCache(t, checker) // the three nodes load it compiled, not each compiling it at once
	nodes, dbURL := startClusterEnv(t, 3, []string{"ASSAY_REPLAY_SLOTS=2", "ASSAY_REPLAY_LEASE=2s"})
	nodesUp := 3
	run := func(count int) (res struct {
		Count   int
		ByNode  map[string]int `json:"by_node"`
		Kinds   map[string]int
		Retaken int
		Errors  int
	}) {
		out, err := exec.Command(binary, "bench", "replays", "--store", "postgres:"+dbURL, "--base", nodes[0].base,
			"--checker", checker, "--count", fmt.Sprint(count), "--nodes", fmt.Sprint(nodesUp), "--json").Output()
		if err != nil {
			t.Fatalf("assay bench replays: %v\n%s", err, out)
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if res.Count != count || res.Kinds["pass"] != count || res.Errors != 0 {
			t.Fatalf("unexpected result: %s", out)
		}
		return res
	}
	began := time.Now()
	first := run(60)
	t.Logf("first batch: %v in %v", first.ByNode, time.Since(began))
	if len(first.ByNode) != 3 {
		t.Errorf("60 replays ran on %d nodes, want 3: %v", len(first.ByNode), first.ByNode)
	}

	// POST /replays?spread=true on a node that runs no worker of its own:
	// the batch is done by the others, through the queue, with the outcomes
	// the same batch gets run in one place.
	front := startNode(t, dbURL, t.TempDir(), []string{"ASSAY_REPLAY_SLOTS=-1"})
	module, err := os.ReadFile(checker)
	if err != nil {
		t.Fatal(err)
	}
	var artifacts []string
	for i := range 24 {
		artifacts = append(artifacts, fmt.Sprintf(`{"min_rows":%d,"rows":[{"id":"a"},{"id":"b"}]}`, i%4))
	}
	body := fmt.Sprintf(`{"checker":{"sha256":%q},"artifacts":[%s],"no_memo":true}`, checkers.SHA256(module), strings.Join(artifacts, ","))
	// A trigger records every claim, release and completion of a job, with
	// its worker and attempt, so that the test sees the batch go through
	// the queue to the other nodes' workers, and later which jobs node 2
	// held when it died, though the batch deletes its jobs when done.
	audit, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer audit.Close(context.Background())
	_, err = audit.Exec(context.Background(), `
		CREATE TABLE e2e_jobs (seq bigserial, id text, worker text, attempt int, event text);
		CREATE FUNCTION e2e_jobs() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
			IF NEW.done IS NOT NULL AND OLD.done IS NULL THEN
				INSERT INTO e2e_jobs (id, worker, attempt, event) VALUES (NEW.id, NEW.result_by, NEW.attempt, 'done');
			ELSIF NEW.token <> 0 AND NEW.token IS DISTINCT FROM OLD.token THEN
				INSERT INTO e2e_jobs (id, worker, attempt, event) VALUES (NEW.id, NEW.worker, NEW.attempt, 'claim');
			ELSIF NEW.token = 0 AND OLD.token <> 0 THEN
				INSERT INTO e2e_jobs (id, worker, attempt, event) VALUES (OLD.id, OLD.worker, OLD.attempt, 'release');
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER e2e_jobs AFTER UPDATE ON assay_queue FOR EACH ROW EXECUTE FUNCTION e2e_jobs();`)
	if err != nil {
		t.Fatal(err)
	}
	spread := front.post(t, "/replays?spread=true", body)
	local := nodes[0].post(t, "/replays", body)
	if spread.status != http.StatusOK || local.status != http.StatusOK {
		t.Fatalf("POST /replays: spread %d %s; local %d %s", spread.status, spread.body, local.status, local.body)
	}
	var gotSpread, gotLocal struct {
		Count    int
		Outcomes []map[string]any
	}
	_ = json.Unmarshal(spread.body, &gotSpread)
	_ = json.Unmarshal(local.body, &gotLocal)
	if gotSpread.Count != 24 || len(gotSpread.Outcomes) != 24 || len(gotLocal.Outcomes) != 24 {
		t.Fatalf("spread %s\nlocal %s", spread.body, local.body)
	}
	for i := range gotLocal.Outcomes {
		delete(gotSpread.Outcomes[i], "wall_ns")
		delete(gotLocal.Outcomes[i], "wall_ns")
		if want := map[bool]string{true: "pass", false: "fail"}[i%4 <= 2]; gotSpread.Outcomes[i]["kind"] != want ||
			fmt.Sprint(gotSpread.Outcomes[i]) != fmt.Sprint(gotLocal.Outcomes[i]) {
			t.Errorf("artifact %d: spread %v, local %v, want %s", i, gotSpread.Outcomes[i], gotLocal.Outcomes[i], want)
		}
	}
	var jobs, byFront, workers int
	err = audit.QueryRow(context.Background(), `SELECT count(*), count(*) FILTER (WHERE worker LIKE $1), count(DISTINCT worker)
		FROM e2e_jobs WHERE event = 'done' AND id LIKE 'api-%'`, fmt.Sprintf("%%:%d", front.cmd.Process.Pid)).Scan(&jobs, &byFront, &workers)
	if err != nil {
		t.Fatal(err)
	}
	if jobs != 24 || byFront != 0 {
		t.Errorf("the spread batch: %d jobs done through the queue (want 24), %d by the node without a worker", jobs, byFront)
	}
	t.Logf("POST /replays?spread=true: 24 replays by %d workers", workers)
	if r := front.post(t, "/replays?spread=true", strings.Replace(body, checkers.SHA256(module), strings.Repeat("0", 64), 1)); r.status != http.StatusNotFound || r.code(t) != "checker_not_found" {
		t.Errorf("spread batch of an unknown checker: %d %s", r.status, r.body)
	}

	// Kill node 2 while it holds jobs of the next batch: they must be
	// retaken by the others once its lease (2 s) runs out.
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	victim := fmt.Sprintf("%%:%d", nodes[2].cmd.Process.Pid)
	held := func() (n int) {
		err := conn.QueryRow(context.Background(),
			`SELECT count(*) FROM assay_queue WHERE worker LIKE $1 AND done IS NULL AND id NOT LIKE '%-warm%'`, victim).Scan(&n)
		if err != nil {
			t.Error(err)
		}
		return n
	}
	// busy counts node 2's statements the database is running.
	busy := func() (n int) {
		err := conn.QueryRow(context.Background(),
			`SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle'`, nodeApp(2)).Scan(&n)
		if err != nil {
			t.Error(err)
		}
		return n
	}
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if held() == 0 {
				continue
			}
			// Stopped, and once the database has run the statements it
			// sent (results of jobs it finished among them), node 2
			// claims and finishes nothing more: it is killed if it
			// still holds a job then, else let go on.
			_ = nodes[2].cmd.Process.Signal(syscall.SIGSTOP)
			for quiet := time.Now().Add(time.Second); busy() > 0 && time.Now().Before(quiet); {
				time.Sleep(time.Millisecond) // polls node 2's statements
			}
			if busy() == 0 && held() > 0 {
				_ = nodes[2].cmd.Process.Kill() // SIGKILL
				<-nodes[2].exited
				return
			}
			_ = nodes[2].cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	nodesUp = 1 // the batch runs while node 2 dies
	second := run(200)
	<-killed
	if nodes[2].cmd.ProcessState == nil {
		t.Fatalf("node 2 was not killed holding a job")
	}

	// What node 2 held when it died: the jobs of the batch whose last
	// event by node 2 is its claim (not its result, which a statement
	// sent before the kill may still have recorded, nor a release).
	// Each was retaken after its lease and finished by another node; every
	// job of the batch was finished once; and the results the batch saw
	// as retaken are the jobs finished on a later attempt.
	rows, err := audit.Query(context.Background(), `
		WITH last AS (
			SELECT DISTINCT ON (id) id, event FROM e2e_jobs
			WHERE worker LIKE $1 AND id LIKE 'bench-%' AND id NOT LIKE '%-warm%'
			ORDER BY id, seq DESC)
		SELECT last.id, count(d.id), coalesce(min(d.worker), ''), coalesce(min(d.attempt), 0)
		FROM last LEFT JOIN e2e_jobs d ON d.id = last.id AND d.event = 'done'
		WHERE last.event = 'claim' GROUP BY last.id`, victim)
	if err != nil {
		t.Fatal(err)
	}
	heldAtDeath := 0
	for rows.Next() {
		var id, worker string
		var done, attempt int
		if err := rows.Scan(&id, &done, &worker, &attempt); err != nil {
			t.Fatal(err)
		}
		heldAtDeath++
		if done != 1 || strings.HasSuffix(worker, victim[1:]) || attempt < 2 {
			t.Errorf("job %s, held by node 2 when it died: finished %d times, last by %q on attempt %d; want once, by another node, retaken", id, done, worker, attempt)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var finished, distinct, retaken int
	err = audit.QueryRow(context.Background(), `
		SELECT count(*), count(DISTINCT id), count(*) FILTER (WHERE attempt > 1) FROM e2e_jobs
		WHERE event = 'done' AND id LIKE 'bench-%' AND id NOT LIKE '%-warm%'`).Scan(&finished, &distinct, &retaken)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the kill: %v; node 2 died holding %d jobs; %d results came from a retake", second.ByNode, heldAtDeath, second.Retaken)
	if heldAtDeath == 0 {
		t.Errorf("node 2 died holding no job of the batch")
	}
	if finished != 200 || distinct != 200 {
		t.Errorf("the batch's 200 jobs were finished %d times, %d of them at least once", finished, distinct)
	}
	if second.Retaken != retaken {
		t.Errorf("%d results came from a retake, but %d jobs were finished on a later attempt", second.Retaken, retaken)
	}
}

// TestBenchCourt_Nodes runs the load generator over three nodes on one
// PostgreSQL database: every case decided, clients spread over the nodes,
// and the ledger balanced as each node reports it.
func TestBenchCourt_Nodes(t *testing.T) {
	t.Parallel()
	nodes, _ := startCluster(t, 3)
	bases := []string{nodes[0].base, nodes[1].base, nodes[2].base}
	out, err := exec.Command(binary, "bench", "court", "--base", strings.Join(bases, ","), "--clients", "9", "--cases", "60", "--json").Output()
	if err != nil {
		t.Fatalf("assay bench court: %v\n%s", err, out)
	}
	var res struct {
		Nodes, Cases, Accepted, Disputed, Errors int
		CasesPerSec                              float64 `json:"cases_per_sec"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Nodes != 3 || res.Cases != 60 || res.Accepted != 30 || res.Disputed != 30 || res.Errors != 0 || res.CasesPerSec <= 0 {
		t.Fatalf("unexpected result: %s", out)
	}
	for i, s := range nodes {
		if l := s.get(t, "/ledger").obj(t); l["balanced"] != true {
			t.Errorf("node %d: ledger after the load: %v", i, l)
		}
	}
}
