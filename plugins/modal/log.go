package modal

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// runLog is a deployment's log file in the state directory: the sandbox's own
// output and the executor's notes, one line each, timestamped.
type runLog struct {
	mu         sync.Mutex
	w          io.WriteCloser
	path       string
	deployment string
	progress   func(deployment, line string)
}

// openLog opens LOGDIR/modal-DEPLOYMENT.log for appending (no file when
// logDir is empty).
func openLog(logDir, deployment string, progress func(string, string)) (*runLog, error) {
	l := &runLog{deployment: deployment, progress: progress}
	if logDir == "" {
		l.w = nopCloser{io.Discard}
		return l, nil
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("modal executor: creating the log directory: %w", err)
	}
	l.path = filepath.Join(logDir, "modal-"+safeName(deployment)+".log")
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("modal executor: opening the log: %w", err)
	}
	l.w = f
	return l, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// line writes one line with a source prefix.
func (l *runLog) line(source, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w == nil {
		return
	}
	fmt.Fprintf(l.w, "%s [%s] %s\n", time.Now().UTC().Format("15:04:05.000"), source, strings.TrimRight(text, "\r\n"))
}

// note records an executor message and reports it as progress.
func (l *runLog) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.line("infercrane", msg)
	if l.progress != nil {
		l.progress(l.deployment, msg)
	}
}

// copyLines copies r into the log line by line until EOF, calling each on
// every line as well.
func (l *runLog) copyLines(source string, r io.Reader, each func(string)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		l.line(source, sc.Text())
		if each != nil {
			each(sc.Text())
		}
	}
}

// where names the log for error messages.
func (l *runLog) where() string {
	if l.path == "" {
		return "the deployment's log"
	}
	return l.path
}

func (l *runLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.w != nil {
		l.w.Close()
		l.w = nil
	}
}

// tail keeps the last n lines it was given.
type tail struct {
	mu    sync.Mutex
	n     int
	lines []string
}

func (t *tail) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, s)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
