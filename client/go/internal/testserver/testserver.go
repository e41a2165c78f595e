// Package testserver starts a real runjournal server for integration tests:
// `$RUNJOURNAL_PYTHON -m runjournal_server.cli serve --listen 127.0.0.1:0
// --data-dir <tmp>` (RUNJOURNAL_PYTHON defaults to /work/main/.venv/bin/python),
// reading its first stdout line "runjournal listening on ADDR". When the
// server cannot start the test is skipped, except under CI=true, where it
// fails.
package testserver

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Python is the interpreter that runs the server.
func Python() string {
	if p := os.Getenv("RUNJOURNAL_PYTHON"); p != "" {
		return p
	}
	return "/work/main/.venv/bin/python"
}

func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("server unavailable under CI: "+format, args...)
	}
	t.Skipf("server unavailable: "+format, args...)
}

// Start starts a file-backend server in a temporary directory, stopped when
// the test ends, and returns its address. extra are more serve flags.
func Start(t testing.TB, extra ...string) string {
	t.Helper()
	python := Python()
	if _, err := exec.LookPath(python); err != nil {
		unavailable(t, "%s: %v", python, err)
	}
	args := append([]string{"-m", "runjournal_server.cli", "serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir()}, extra...)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Stderr = os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		unavailable(t, "start: %v", err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		for sc.Scan() {
		}
	}()
	select {
	case line, ok := <-lines:
		const prefix = "runjournal listening on "
		if !ok || !strings.HasPrefix(line, prefix) {
			unavailable(t, "first line %q", line)
		}
		return strings.TrimSpace(strings.TrimPrefix(line, prefix))
	case <-time.After(60 * time.Second):
		unavailable(t, "no listening line within 60s")
	}
	return ""
}
