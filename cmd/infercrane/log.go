package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

// setupLog points the default slog logger where INFERCRANE_LOG and
// INFERCRANE_LOG_PATH say: nothing is logged when both are unset; with
// INFERCRANE_LOG=LEVEL (debug, info, warn, error; Terraform's trace means
// debug) the log goes to stderr, or is appended to INFERCRANE_LOG_PATH when
// that is set (at debug level unless INFERCRANE_LOG names another).
func setupLog(env *cliEnv) (closeLog func(), err error) {
	levelName := strings.ToLower(strings.TrimSpace(env.Getenv("INFERCRANE_LOG")))
	path := env.Getenv("INFERCRANE_LOG_PATH")
	if levelName == "" && path == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
		return func() {}, nil
	}
	var level slog.Level
	switch levelName {
	case "", "trace", "debug", "1", "true":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	case "warn", "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	case "off", "0", "false":
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
		return func() {}, nil
	default:
		return nil, fmt.Errorf("INFERCRANE_LOG=%s is not a log level; use debug, info, warn, error or off", levelName)
	}
	var w io.Writer = env.Stderr
	closeLog = func() {}
	if path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("INFERCRANE_LOG_PATH: %v; give a file in a writable directory", err)
		}
		w, closeLog = env.secrets.Writer(f), func() { f.Close() }
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})))
	return closeLog, nil
}
