package main

import (
	"bytes"
	"io"
	"strings"
)

// ANSI escapes used on terminals.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
)

// colorOn reports whether output to w gets colour: w is a terminal (or
// FORCE_COLOR is set), TERM is not dumb, and neither -no-color nor NO_COLOR
// was given.
func (env *cliEnv) colorOn(w io.Writer) bool {
	if env.NoColor || env.Getenv("NO_COLOR") != "" {
		return false
	}
	if f := env.Getenv("FORCE_COLOR"); f != "" && f != "0" {
		return true
	}
	_, ok := terminalOf(w)
	return ok && env.Getenv("TERM") != "dumb"
}

// colored returns w, wrapped to colour plan and diagnostic lines when
// colour is on (see colorLine).
func (env *cliEnv) colored(w io.Writer) io.Writer { return env.coloredTo(w, w) }

// coloredTo is colored for output to out that ends up on dest (out
// buffers dest): colour is on or off by dest.
func (env *cliEnv) coloredTo(dest, out io.Writer) io.Writer {
	if !env.colorOn(dest) {
		return out
	}
	return &colorWriter{w: out}
}

// colorWriter colours whole lines by how they start.
type colorWriter struct {
	w   io.Writer
	buf []byte
}

func (c *colorWriter) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	for {
		i := bytes.IndexByte(c.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(c.buf[:i])
		c.buf = c.buf[i+1:]
		if _, err := io.WriteString(c.w, colorLine(line)+"\n"); err != nil {
			return len(p), err
		}
	}
}

// Flush writes a last unterminated line.
func (c *colorWriter) Flush() {
	if len(c.buf) > 0 {
		_, _ = io.WriteString(c.w, colorLine(string(c.buf)))
		c.buf = nil
	}
}

// colorLine colours a plan or diagnostic line: lanes to run green, reruns
// yellow, drops red, errors red, warnings yellow, summary lines bold.
func colorLine(line string) string {
	t := strings.TrimLeft(line, " ")
	var code string
	switch {
	case strings.HasPrefix(t, "+ "):
		code = ansiGreen
	case strings.HasPrefix(t, "~ "):
		code = ansiYellow
	case strings.HasPrefix(t, "- drop"):
		code = ansiRed
	case strings.HasPrefix(t, "Error:"), strings.HasPrefix(t, "FAIL"):
		code = ansiBold + ansiRed
	case strings.HasPrefix(t, "Warning:"), strings.HasPrefix(t, "INCONCLUSIVE"):
		code = ansiBold + ansiYellow
	case strings.HasPrefix(line, "Plan:"), strings.HasPrefix(line, "Apply finished"), strings.HasPrefix(line, "No changes"):
		code = ansiBold
	default:
		return line
	}
	return code + line + ansiReset
}
