package testsvc

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestTestsvcRedis stores and reads a key through go-redis, and wants the
// second call to return the same server.
func TestTestsvcRedis(t *testing.T) {
	addr := Redis(t)
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "testsvc:greeting", "hello", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Get(ctx, "testsvc:greeting").Result(); err != nil || got != "hello" {
		t.Errorf("GET: %q, %v; want hello", got, err)
	}
	// Nothing is saved: no snapshot, no append-only file.
	if got, err := c.ConfigGet(ctx, "save").Result(); err != nil || got["save"] != "" {
		t.Errorf("CONFIG GET save: %v, %v; want empty", got, err)
	}
	pid := redis.srv.Pid()
	if again := Redis(t); again != addr || redis.srv.Pid() != pid {
		t.Errorf("second call: %s (pid %d); first %s (pid %d)", again, redis.srv.Pid(), addr, pid)
	}
}

// TestTestsvcPostgres queries the server through pgx, checks its
// throwaway settings, and wants the second call to return the same server.
func TestTestsvcPostgres(t *testing.T) {
	dsn := Postgres(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var sum int
	var fsync, listen string
	if err := c.QueryRow(ctx, "SELECT $1::int + 1, current_setting('fsync'), current_setting('listen_addresses')", 41).Scan(&sum, &fsync, &listen); err != nil {
		t.Fatal(err)
	}
	if sum != 42 || fsync != "off" || listen != "127.0.0.1" {
		t.Errorf("41+1 = %d, fsync %q, listen_addresses %q; want 42, off, 127.0.0.1", sum, fsync, listen)
	}
	pid := postgres.srv.Pid()
	if again := Postgres(t); again != dsn || postgres.srv.Pid() != pid {
		t.Errorf("second call: %s (pid %d); first %s (pid %d)", again, postgres.srv.Pid(), dsn, pid)
	}
}

// orphanEnv makes the test binary, run by TestTestsvcOrphan, start both
// servers and exit without stopping them.
const orphanEnv = "TESTSVC_ORPHAN_CHILD"

// TestTestsvcOrphan runs this binary as a child that starts both servers
// and exits without Main's Stop, as a binary that crashes or is killed
// does, and wants both server processes to end with it (Pdeathsig) and
// their ports closed.
func TestTestsvcOrphan(t *testing.T) {
	if os.Getenv(orphanEnv) != "" {
		// The child: report what it started, and leave.
		fmt.Printf("orphans: %d %s %s %d %s %s\n",
			postgresPid(t), hostPort(t, Postgres(t)), postgres.srv.Dir(),
			redisPid(t), Redis(t), redis.srv.Dir())
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestTestsvcOrphan$", "-test.v") // -test.v: a skip says SKIP
	cmd.Env = append(os.Environ(), orphanEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if bytes.Contains(out, []byte("SKIP")) {
		t.Skipf("the child skipped:\n%s", out)
	}
	var pgPid, rdPid int
	var pgAddr, pgDir, rdAddr, rdDir string
	i := bytes.Index(out, []byte("orphans: "))
	if i < 0 {
		t.Fatalf("child's output has no orphans line:\n%s", out)
	}
	line, _, _ := strings.Cut(string(out[i:]), "\n")
	if _, err := fmt.Sscanf(line, "orphans: %d %s %s %d %s %s", &pgPid, &pgAddr, &pgDir, &rdPid, &rdAddr, &rdDir); err != nil {
		t.Fatalf("child's output: %v\n%s", err, out)
	}
	t.Cleanup(func() { os.RemoveAll(pgDir); os.RemoveAll(rdDir) }) // the child had no Stop to remove them
	for _, p := range []struct {
		pid  int
		addr string
	}{{pgPid, pgAddr}, {rdPid, rdAddr}} {
		deadline := time.Now().Add(10 * time.Second) // PostgreSQL's immediate shutdown takes milliseconds
		for processLives(p.pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if processLives(p.pid) {
			t.Errorf("server pid %d (%s) outlived its test binary", p.pid, p.addr)
		}
		if err := tcpAnswers(p.addr); err == nil {
			t.Errorf("%s still accepts connections after its test binary ended", p.addr)
		}
	}
}

func postgresPid(t *testing.T) int { Postgres(t); return postgres.srv.Pid() }
func redisPid(t *testing.T) int    { Redis(t); return redis.srv.Pid() }

// processLives reports whether pid is a process that has not ended (a
// zombie, ended but not yet reaped by its new parent, has).
func processLives(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')') // the command's name, in parentheses, may hold spaces
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z' && b[i+2] != 'X'
}

// hostPort is addr's host:port, addr a DSN or already host:port.
func hostPort(t *testing.T, addr string) string {
	t.Helper()
	if !strings.Contains(addr, "://") {
		return addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// tcpAnswers reports whether a TCP connection to addr is accepted.
func tcpAnswers(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}
