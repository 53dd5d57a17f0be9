package main

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"
)

// completedLine is the line bashComplete's echo prints: the command line
// as readline left it after the TAB.
var completedLine = regexp.MustCompile(`(?m)^COMPLETED:(.*?)\r?$`)

// bashComplete is the testscript command `bashcomplete LINE`: an
// interactive bash on a pseudo-terminal, with `infercrane completion
// bash` sourced, is typed LINE and a TAB, and the line readline completed
// it to is written to stdout. It is a real shell's completion, word
// splitting included (bash splits "-target=s/a" into three words at the
// "=", which a call of __complete by hand does not show).
func bashComplete(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: bashcomplete LINE")
	}
	bash, err := exec.LookPath("bash") // scripts guard the command with [exec:bash]
	if err != nil {
		ts.Fatalf("no bash: %v", err)
	}
	cmd := exec.Command(bash, "--norc", "--noprofile", "-i")
	cmd.Dir = ts.Getenv("WORK")
	cmd.Env = append(os.Environ(), "PATH="+ts.Getenv("PATH"), "HOME="+ts.Getenv("HOME"), "TERM=dumb", "PS1=$ ", "INPUTRC=/dev/null", "INFERCRANE_TEST=1")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 400})
	if err != nil {
		ts.Fatalf("no pseudo-terminal: %v", err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		tty.Close()
	}()
	// Readline takes the keys in order: the TAB's completion is done
	// before Ctrl-A moves to the start and the echo runs the line.
	if _, err := tty.WriteString("source <(infercrane completion bash)\n" + args[0] + "\t\x01echo COMPLETED:\n"); err != nil {
		ts.Fatalf("typing into bash: %v", err)
	}
	got := make(chan string, 1)
	var out bytes.Buffer
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			out.Write(buf[:n])
			if m := completedLine.FindSubmatch(bytes.ReplaceAll(out.Bytes(), []byte("\r\n"), []byte("\n"))); m != nil {
				got <- string(m[1])
				return
			}
			if err != nil {
				got <- ""
				return
			}
		}
	}()
	select {
	case line := <-got:
		if line == "" {
			ts.Fatalf("bash ended before the completed line; it wrote:\n%s", strings.ReplaceAll(out.String(), "\r", ""))
		}
		ts.Stdout().Write([]byte(line + "\n"))
	case <-time.After(60 * time.Second):
		ts.Fatalf("no completed line from bash within 60 s")
	}
}
