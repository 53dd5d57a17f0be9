package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infercrane/infercrane/planner/load"
)

// checkWorkload rejects a workload the load generator cannot send.
func checkWorkload(cfg Config) error {
	w := cfg.Workload
	if !w.Active() {
		return nil
	}
	if err := w.Validate(); err != nil {
		return err
	}
	switch {
	case cfg.TraceFile != "":
		return fmt.Errorf("a trace replay takes its lengths from the trace; drop the workload's lengths, prefix and session")
	case cfg.Requests < 1:
		return fmt.Errorf("a workload with lengths, prefix or session needs a request count (the draws are stratified over it)")
	case w.Session != nil && cfg.RequestRate > 0:
		return fmt.Errorf("sessions run closed loop (each turn waits for the answer to the last); drop request_rate or the session")
	case w.Session != nil && cfg.API != "chat":
		return fmt.Errorf("sessions need the chat API (their turns are chat messages); set api = \"chat\"")
	}
	return nil
}

// planWorkload draws the run's requests and sizes their prompts: every
// distinct length is calibrated, and prefix prompts learn how many tokens
// the chat template puts before the user's text.
func (r *runner) planWorkload(ctx context.Context) error {
	w, c := r.cfg.Workload, r.cfg
	r.seq = w.Sequence(c.Seed, c.Requests, c.InputTokens, c.OutputTokens)
	// A warm-up bounded by time alone cycles through draws of its own.
	k := c.Warmup
	if k == 0 && c.WarmupDurationMs > 0 {
		k = max(4*c.Concurrency, 64)
	}
	r.warm = w.Warmup(c.Seed, k, c.InputTokens, c.OutputTokens)
	var targets []int
	for _, q := range append(slices.Clip(r.warm), r.seq...) {
		targets = append(targets, q.Input-q.History)
	}
	if err := r.cal.calibrateMany(ctx, targets); err != nil {
		return err
	}
	if w.Prefix != nil && r.chat {
		h, err := r.cal.templateHeader(ctx)
		if err != nil {
			return err
		}
		r.header = h
	}
	return nil
}

// workloadRequest returns the drawn request behind a job.
func (r *runner) workloadRequest(sizeIndex int, warmup bool) load.Request {
	if warmup {
		return r.warm[sizeIndex%len(r.warm)]
	}
	return r.seq[sizeIndex]
}

// workloadJob builds a request of a workload without sessions: a prompt of
// the drawn length whose first Shared tokens are its prefix group's.
func (r *runner) workloadJob(index, sizeIndex int, warmup bool) *job {
	q := r.workloadRequest(sizeIndex, warmup)
	cal, _ := r.cal.calibrate(context.Background(), q.Input) // cached by planWorkload
	text := promptText(r.promptSeed, index, cal.Words)
	if q.Group >= 0 {
		shared := min(max(q.Shared-r.header, 0), cal.Words-1)
		text = sharedPromptText(r.promptSeed, q.Group, shared, index, cal.Words)
	}
	return &job{index: index, warmup: warmup, input: q.Input, output: q.Output, shared: q.Shared,
		body: buildBody(&r.cfg, r.chat, text, q.Output)}
}

// sharedPromptText is a prompt of words words whose first shared words are
// prefix group group's (the same for every request of the group under
// seed) and whose rest is request index's own. The first three own words
// spell index in base len(promptWords) (the first never the group's next
// word), so no two requests of a run share more than their group's prefix.
func sharedPromptText(seed int64, group, shared, index, words int) string {
	g := rand.New(rand.NewPCG(uint64(seed), 0x9f0e_0000_0000+uint64(group)))
	own := rand.New(rand.NewPCG(uint64(seed), uint64(index)+0x9e3779b97f4a7c15))
	v := len(promptWords)
	var b strings.Builder
	b.Grow(words * 6)
	for i := 0; i < shared; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(promptWords[g.IntN(v)])
	}
	groupNext := g.IntN(v)
	spell := []int{(groupNext + 1 + index%(v-1)) % v, (index / (v - 1)) % v, (index / ((v - 1) * v)) % v}
	for i := shared; i < words; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		k := own.IntN(v)
		if i-shared < len(spell) {
			k = spell[i-shared]
		}
		b.WriteString(promptWords[k])
	}
	return b.String()
}

// sessionLoop runs multi-turn sessions closed loop: workers take whole
// sessions, and each turn is sent once the answer to the previous one is
// in, carrying the conversation so far.
func (r *runner) sessionLoop(ctx context.Context, first, workers int, warmup bool, deadline time.Time) {
	reqs := r.seq
	if warmup {
		reqs = r.warm
	}
	var starts []int // index of each session's first turn, then len(reqs)
	for i, q := range reqs {
		if q.Turn == 0 {
			starts = append(starts, i)
		}
	}
	starts = append(starts, len(reqs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rec Record
			for ctx.Err() == nil {
				s := int(next.Add(1) - 1)
				if s >= len(starts)-1 {
					return
				}
				var history []chatMsg
				for i := starts[s]; i < starts[s+1] && ctx.Err() == nil; i++ {
					if !deadline.IsZero() && !time.Now().Before(deadline) {
						return
					}
					q := reqs[i]
					cal, _ := r.cal.calibrate(context.Background(), q.Input-q.History)
					msgs := append(slices.Clip(history), chatMsg{Role: "user", Content: promptText(r.promptSeed, first+i, cal.Words)})
					var answer []byte
					j := &job{index: first + i, warmup: warmup, input: q.Input, output: q.Output,
						shared: q.History, session: q.Session, turn: q.Turn, answer: &answer,
						body: buildChatBody(&r.cfg, msgs, q.Output)}
					r.inflight.Add(1)
					r.c.do(ctx, j, &rec)
					r.inflight.Add(-1)
					ok := rec.OK()
					r.store(&rec)
					if !ok {
						break // a failed turn ends its session: there is no answer to carry on
					}
					history = append(msgs, chatMsg{Role: "assistant", Content: string(answer)})
				}
			}
		}()
	}
	wg.Wait()
}

// calibrateMany sizes prompts for every target length. A prompt of k
// prompt words is k tokens plus the template's fixed overhead in the usual
// tokenizers, so after calibrating the shortest, median and longest
// targets exactly, the others are derived from the overhead when those
// three agree on it (Calibration.Derived), and calibrated one by one when
// they do not.
func (c *calibrator) calibrateMany(ctx context.Context, targets []int) error {
	distinct := slices.Compact(slices.Sorted(slices.Values(targets)))
	if len(distinct) == 0 {
		return nil
	}
	probes := slices.Compact([]int{distinct[0], distinct[len(distinct)/2], distinct[len(distinct)-1]})
	overhead, linear := 0, true
	for i, t := range probes {
		cal, err := c.calibrate(ctx, t)
		if err != nil {
			return err
		}
		o := cal.MeasuredTokens - cal.Words
		linear = linear && cal.Method == CalibrateTokenize && cal.MeasuredTokens == t && (i == 0 || o == overhead)
		overhead = o
	}
	c.mu.Lock()
	approx := c.noTok
	c.mu.Unlock()
	for _, t := range distinct {
		switch {
		case approx || !linear:
			if _, err := c.calibrate(ctx, t); err != nil {
				return err
			}
		default:
			c.mu.Lock()
			if _, ok := c.byToken[t]; !ok && t-overhead >= 1 {
				c.byToken[t] = Calibration{Method: CalibrateTokenize, TargetTokens: t, Words: t - overhead,
					MeasuredTokens: t, Derived: true}
			}
			c.mu.Unlock()
			if _, err := c.calibrate(ctx, t); err != nil { // the few too short to derive
				return err
			}
		}
	}
	return nil
}

// templateHeader returns how many tokens the chat template puts before
// the user's text: the common prefix of the token ids of two one-message
// prompts that differ from their first word. It is 0 when the server's
// /tokenize returns no token ids (a prefix then shares the template's
// header on top of the shape's shared_tokens).
func (c *calibrator) templateHeader(ctx context.Context) (int, error) {
	c.mu.Lock()
	noTok := c.noTok
	c.mu.Unlock()
	if noTok {
		return 0, nil
	}
	a, err := c.tokenIDs(ctx, "the end")
	if err != nil || a == nil {
		return 0, err
	}
	b, err := c.tokenIDs(ctx, "of end")
	if err != nil || b == nil {
		return 0, err
	}
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n, nil
}

// tokenIDs asks /tokenize for the token ids of a one-message chat prompt;
// nil when the server does not return them.
func (c *calibrator) tokenIDs(ctx context.Context, text string) ([]int, error) {
	body, _ := json.Marshal(map[string]any{"model": c.model, "add_generation_prompt": true,
		"messages": []map[string]string{{"role": "user", "content": text}}})
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.client.Do(hr)
	if err != nil {
		return nil, fmt.Errorf("tokenize: %w; check that the server is up and answering at %s", err, c.base)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, nil
	}
	var out struct {
		Tokens []int `json:"tokens"`
	}
	if json.Unmarshal(b, &out) != nil {
		return nil, nil
	}
	return out.Tokens, nil
}
