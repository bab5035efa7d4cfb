// Package redistest starts a real redis-server on a free loopback port for
// tests, and stops it when the test ends. Without redis-server on the PATH,
// the test is skipped with a loud message, or fails when CI=true.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const skipMessage = "\n" +
	"*************************************************************\n" +
	"* SKIPPED: redis-server is not installed.                   *\n" +
	"* These tests run against a real Redis; install it with     *\n" +
	"*   apt-get install -y redis-server                         *\n" +
	"* (CI installs it and fails instead of skipping).           *\n" +
	"*************************************************************"

var warnOnce sync.Once

// Server is a redis-server process of the test.
type Server struct {
	// Addr is its loopback address, host:port.
	Addr string

	t    testing.TB
	bin  string
	dir  string
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// Start starts redis-server on a free loopback port, with its data in a
// temporary directory. Persist makes it write an append-only file synced on
// every write, so that a killed server restarts with every acknowledged
// write; without it, nothing is written to disk.
func Start(t testing.TB, persist bool) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is not installed, and CI=true: .ci/run should have installed it (%v)", err)
		}
		// Printed on standard error too, once, so that it shows without -v.
		warnOnce.Do(func() { fmt.Fprintln(os.Stderr, skipMessage) })
		t.Skip(skipMessage)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{
		Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		t:    t, bin: bin, dir: t.TempDir(),
	}
	s.args = []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--daemonize", "no", "--protected-mode", "yes", "--loglevel", "warning",
		"--logfile", filepath.Join(s.dir, "redis.log")}
	if persist {
		s.args = append(s.args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		s.args = append(s.args, "--appendonly", "no")
	}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// Client returns a go-redis client of the server, with context deadlines
// honoured, closed when the test ends.
func (s *Server) Client(o *redis.Options) *redis.Client {
	if o == nil {
		o = &redis.Options{}
	}
	o.Addr = s.Addr
	o.ContextTimeoutEnabled = true
	c := redis.NewClient(o)
	s.t.Cleanup(func() { c.Close() })
	return c
}

func (s *Server) start() {
	s.t.Helper()
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.Stop()
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			s.t.Fatalf("redis-server on %s did not answer within 10s: %v\n%s", s.Addr, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill kills the server with SIGKILL, as a crash would, and waits for it.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// Restart starts the server again on the same port and directory (after
// Kill), and waits until it answers.
func (s *Server) Restart() { s.start() }

// Stop stops the server (SIGTERM, then SIGKILL after 5s) and waits for it.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// AOF returns the path of the append-only files' directory.
func (s *Server) AOF() string { return filepath.Join(s.dir, "appendonlydir") }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
