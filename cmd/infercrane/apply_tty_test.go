package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"
)

// ttySpec is a screen whose apply on the simulated engine runs for about
// nine seconds: some 60 frames of the live display at its refresh rate,
// which a display that scrolls prints as some 150 lines (and a 4-minute
// apply as 1,000 and more); one that redraws leaves the same few lines
// however long the apply runs.
const ttySpec = `
model "q" {
  id          = "Qwen/Qwen3-0.6B"
  revision    = "c1899de289a04d12100db370d81485cdf75e47ca"
  max_context = 4096
}

gpu "l40s" {
  type = "L40S"
}

executor "slow" {
  type   = "sim"
  timing = "constant"
  ttft   = "20ms"
  itl    = "25ms"
}

shape "chat" {
  input_tokens      = 64
  output_tokens     = 40
  template_headroom = 32
  concurrency       = 2
  requests          = 4
}

screen "tty" {
  models   = [model.q]
  shapes   = [shape.chat]
  gpus     = [gpu.l40s]
  executor = executor.slow
  runs     = 3
  seed     = 1
}
`

// TestApplyOnATerminalRedraws runs apply on a pseudo-terminal, as an
// operator does: the live display redraws in place (cursor control, and
// the screen it leaves has fewer than 100 lines however long the apply
// ran), and the end of the apply (teardown, lane finished, apply finished,
// the per-lane summary) is on that screen, after the bars. Before, mpb was
// handed the redacting writer, took it for a file, and printed every frame
// below the last (issue 26: 1,013 lines for a 4-minute apply, the summary
// lost in 3 of 4 trials).
func TestApplyOnATerminalRedraws(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.hcl"), []byte(ttySpec), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("infercrane", "apply", "-auto-approve", dir)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "NO_COLOR=1")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 60, Cols: 200})
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	var raw bytes.Buffer
	_, err = io.Copy(&raw, tty) // until the child exits (EIO on Linux)
	if err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatal(err)
	}
	tty.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("apply: %v\n%s", err, raw.String())
	}
	out := raw.Bytes()
	if !cursorUp.Match(out) {
		t.Errorf("the display moved the cursor up never: it scrolls instead of redrawing\n%q", screenTail(out))
	}
	screen := emulate(out)
	if len(screen) >= 100 {
		t.Errorf("apply left %d lines on the terminal, want under 100 (%d frames' newlines written)", len(screen), bytes.Count(out, []byte("\n")))
	}
	text := strings.Join(screen, "\n")
	at := func(re string) int {
		loc := regexp.MustCompile(re).FindStringIndex(text)
		if loc == nil {
			t.Fatalf("the screen has no line like %q:\n%s", re, text)
		}
		return loc[0]
	}
	teardown, lane := at(`Tore down `), at(`Lane \S+ \(tty/q/chat/l40s\) finished\.`)
	finished, summary := at(`Apply finished in [\d.]+s: 3 run\(s\) completed, 0 failed\.`), at(`  tty/q/chat/l40s \(\w+\): 3/3 runs`)
	if !(teardown < finished && lane < finished && finished < summary) {
		t.Errorf("the end of the apply is out of order (teardown %d, lane %d, finished %d, summary %d):\n%s", teardown, lane, finished, summary, text)
	}
	if bar := strings.LastIndex(text, " run "); bar > finished {
		t.Errorf("a run bar is drawn after the summary:\n%s", text)
	}
	for _, want := range []string{"Run 3/3 of lane", "Screen tty:"} {
		if !strings.Contains(text, want) {
			t.Errorf("the screen lacks %q:\n%s", want, text)
		}
	}
}

var (
	cursorUp = regexp.MustCompile(`\x1b\[(\d+)A`)
	escape   = regexp.MustCompile(`\x1b\[([\d;?]*)([A-Za-z])`)
)

// emulate plays a terminal's output onto a screen of lines (an unbounded
// one: the scrollback is kept) and returns the lines, trailing empty ones
// left out. It knows what mpb and the CLI write: text, \r, \n, cursor up
// (ESC[nA), erase below (ESC[J) and erase line (ESC[K); other escapes
// (colours) are dropped.
func emulate(out []byte) []string {
	var lines [][]rune
	row, col := 0, 0
	line := func() *[]rune {
		for len(lines) <= row {
			lines = append(lines, nil)
		}
		return &lines[row]
	}
	for i := 0; i < len(out); {
		if m := escape.FindSubmatchIndex(out[i:]); m != nil && m[0] == 0 {
			arg, cmd := string(out[i+m[2]:i+m[3]]), out[i+m[4]]
			n, _ := strconv.Atoi(arg)
			switch cmd {
			case 'A':
				row = max(row-max(n, 1), 0)
			case 'J':
				l := line()
				*l = (*l)[:min(col, len(*l))]
				lines = lines[:row+1]
			case 'K':
				l := line()
				*l = (*l)[:min(col, len(*l))]
			}
			i += m[1]
			continue
		}
		r, size := []rune(string(out[i:min(i+4, len(out))])), 1
		if len(r) > 0 {
			size = len(string(r[0]))
		}
		switch c := r[0]; c {
		case '\n':
			row, col = row+1, 0
			line()
		case '\r':
			col = 0
		default:
			l := line()
			for len(*l) < col {
				*l = append(*l, ' ')
			}
			if col < len(*l) {
				(*l)[col] = c
			} else {
				*l = append(*l, c)
			}
			col++
		}
		i += size
	}
	var s []string
	for _, l := range lines {
		s = append(s, strings.TrimRight(string(l), " "))
	}
	for len(s) > 0 && s[len(s)-1] == "" {
		s = s[:len(s)-1]
	}
	return s
}

func screenTail(b []byte) []byte {
	return b[max(0, len(b)-2000):]
}
