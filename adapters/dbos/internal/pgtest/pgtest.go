// Package pgtest starts a real PostgreSQL server on a free loopback port for
// the tests, with its data in a temporary directory, and stops it when asked.
// The server's binaries (initdb, postgres) are found in the directory that
// LOOPGUARD_PG_BIN names, else on the PATH, else in Debian's
// /usr/lib/postgresql/<version>/bin. Without them, the test is skipped with a
// loud message, or fails when CI=true. PostgreSQL refuses to run as root: as
// root, the server runs as the user postgres (which Debian's package makes).
package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BinEnv names the environment variable that may hold the directory of
// PostgreSQL's binaries.
const BinEnv = "LOOPGUARD_PG_BIN"

const skipMessage = "\n" +
	"*************************************************************\n" +
	"* SKIPPED: PostgreSQL is not installed.                     *\n" +
	"* These tests run against a real PostgreSQL server; install *\n" +
	"*   apt-get install -y postgresql                           *\n" +
	"* or set LOOPGUARD_PG_BIN to the directory of its binaries  *\n" +
	"* (CI installs it and fails instead of skipping).           *\n" +
	"*************************************************************"

// Server is a PostgreSQL server of the tests.
type Server struct {
	// Port is its loopback TCP port.
	Port int

	dir     string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the server has exited
	err     error         // its exit status, once exited is closed
}

// URL returns the URL of database db on the server, as the user postgres,
// who needs no password there.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

var (
	once   sync.Once
	shared *Server
	errBin error // no binaries: skip, or fail on CI
	errRun error // the server did not start
)

// Shared returns the server of the test binary, starting it on first use.
// Stop it with [StopShared] (in TestMain, after m.Run).
func Shared(t testing.TB) *Server {
	t.Helper()
	once.Do(func() {
		bin, err := binDir()
		if err != nil {
			errBin = err
			return
		}
		shared, errRun = start(bin)
	})
	if errBin != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL is not installed, and CI=true: .ci/run should have installed it (%v)", errBin)
		}
		t.Skip(skipMessage + "\n" + errBin.Error())
	}
	if errRun != nil {
		t.Fatalf("starting PostgreSQL: %v", errRun)
	}
	return shared
}

// StopShared stops the shared server, if it was started, and removes its
// data.
func StopShared() {
	if shared != nil {
		shared.Stop()
	}
}

// binDir returns the directory of initdb and postgres.
func binDir() (string, error) {
	if d := os.Getenv(BinEnv); d != "" {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err != nil {
			return "", fmt.Errorf("%s=%s: %w", BinEnv, d, err)
		}
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if p, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// The newest version first: 9.6 < 10 < 15 as numbers, not as text.
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb on the PATH nor in /usr/lib/postgresql/*/bin")
}

// version reads the major version of /usr/lib/postgresql/<version>/bin.
func version(dir string) float64 {
	v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(dir)), 64)
	return v
}

// start makes a cluster in a temporary directory and starts its server.
func start(bin string) (*Server, error) {
	dir, err := os.MkdirTemp("", "loopguard-pg-")
	if err != nil {
		return nil, err
	}
	s, err := startIn(bin, dir)
	if err != nil {
		os.RemoveAll(dir)
	}
	return s, err
}

func startIn(bin, dir string) (*Server, error) {
	cred, err := credential(dir)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--no-sync")
	initdb.Dir = dir // one the user postgres may enter
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "postgres.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the server has its own copy
	s := &Server{Port: port, dir: dir, logPath: logPath, exited: make(chan struct{})}
	// fsync off (-F): the tests crash workers, never the server.
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-h", "127.0.0.1", "-k", dir, "-F", "-c", "max_connections=200")
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if strings.Contains(s.Log(), "ready to accept connections") {
			c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
			if err == nil {
				c.Close()
				return s, nil
			}
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("postgres exited: %v\n%s", s.err, s.Log())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = s.cmd.Process.Kill()
			<-s.exited
			return nil, fmt.Errorf("postgres did not start within 30s\n%s", s.Log())
		}
	}
}

// Log returns what the server wrote to its log.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// credential returns the user to run PostgreSQL as, and gives it dir:
// nil (this process's user) unless this is root, then the user postgres.
func credential(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs the user postgres: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// Stop stops the server (a fast shutdown, then SIGKILL after 10s) and
// removes its data.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	os.RemoveAll(s.dir)
}

// freePort returns a TCP port that is free on the loopback interface.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
