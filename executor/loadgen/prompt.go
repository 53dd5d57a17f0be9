package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// promptWords are common lowercase English words that are one token each
// (with or without a leading space) in the BPE tokenizers of the usual
// open models and in the simulated engine's tokenizer, so a prompt of k
// words costs close to k tokens everywhere and calibration converges fast.
var promptWords = strings.Fields(`the of and to in is that for it as was with be by on not he this are or
his from at which but have an they you were her she there one all we their has been if more when
will would who so no out up into do any your what some can time only could new them man other about
than then its also two first may like made these over did such our after most`)

// promptText builds the deterministic prompt of request index under seed:
// words random words from promptWords separated by single spaces. Different
// indexes give different texts from the first word on, so a server's prefix
// cache does not shorten prefill.
func promptText(seed int64, index, words int) string {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(index)+0x9e3779b97f4a7c15))
	var b strings.Builder
	b.Grow(words * 6)
	for i := 0; i < words; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(promptWords[rng.IntN(len(promptWords))])
	}
	return b.String()
}

// Prompts says where a run's prompt texts came from: request i's prompt is
// a function of the prompt seed (Seed with Salt mixed in), i and its
// length alone, so two runs with the same seed, salt and lengths send the
// very same prompts, and a server with prefix caching (vLLM's default)
// serves the second run's from its cache instead of prefilling them. The
// screen's runs never repeat: run n of a lane has seed + n - 1 and the
// lane's id as its salt (executor.RunSpecFor).
type Prompts struct {
	Seed int64  `json:"seed"`
	Salt string `json:"salt,omitempty"`
	// Drawn marks a seed drawn for this run (bench without --seed): no
	// other run draws the same, so its prompts repeat no earlier run's.
	Drawn bool `json:"drawn,omitempty"`
}

// Repeats says, in words, which runs send the same prompts as this one.
func (p Prompts) Repeats() string {
	if p.Drawn {
		return "drawn for this run: its prompts repeat no other run's (--seed " + strconv.FormatInt(p.Seed, 10) + " sends them again)"
	}
	salt := ""
	if p.Salt != "" {
		salt = ", salt " + p.Salt
	}
	return "fixed: every run with seed " + strconv.FormatInt(p.Seed, 10) + salt + " and these lengths sends the same prompts, which a server's prefix cache then serves instead of prefilling (leave --seed out to draw one per run)"
}

// PromptSeed is the seed of the prompt texts a run of cfg sends: runs with
// equal prompt seeds (and lengths) send the same prompts.
func PromptSeed(cfg Config) int64 { return promptSeed(cfg) }

// promptSeed is the seed of a run's prompt texts: cfg.Seed, with
// cfg.PromptSalt's FNV-1a hash mixed in when set.
func promptSeed(cfg Config) int64 {
	if cfg.PromptSalt == "" {
		return cfg.Seed
	}
	h := fnv.New64a()
	h.Write([]byte(cfg.PromptSalt))
	return cfg.Seed ^ int64(h.Sum64())
}

// Calibration methods.
const (
	// CalibrateTokenize: word counts were fitted with the server's /tokenize,
	// chat template included.
	CalibrateTokenize = "tokenize"
	// CalibrateApproximate: the server has no /tokenize; a prompt of N tokens
	// is N words (one token per word), and for chat the template's tokens
	// come on top (they are not known without the tokenizer).
	CalibrateApproximate = "approximate"
)

// Calibration records how prompts of one target length were sized.
type Calibration struct {
	Method string `json:"method"`
	// TargetTokens is the requested prompt length; Words the word count
	// chosen; MeasuredTokens what /tokenize reported for a probe prompt of
	// that many words (0 when approximated).
	TargetTokens   int `json:"target_tokens"`
	Words          int `json:"words"`
	MeasuredTokens int `json:"measured_tokens,omitempty"`
	// Calls is the number of /tokenize requests made.
	Calls int `json:"calls"`
	// Derived marks a length sized from the template overhead that exact
	// calibrations of other lengths agreed on, without a call of its own.
	Derived bool `json:"derived,omitempty"`
}

// calibrator sizes prompts for target token counts, caching per target.
type calibrator struct {
	client  *http.Client
	base    string
	model   string
	apiKey  string
	chat    bool
	seed    int64
	mu      sync.Mutex
	noTok   bool // the server has no /tokenize
	byToken map[int]Calibration
}

var errNoTokenize = errors.New("the server has no /tokenize")

// count asks /tokenize for the token count of a prompt of text, rendered
// with the chat template (and generation prompt) for the chat API.
func (c *calibrator) count(ctx context.Context, text string) (int, error) {
	var req any
	if c.chat {
		req = map[string]any{"model": c.model, "add_generation_prompt": true,
			"messages": []map[string]string{{"role": "user", "content": text}}}
	} else {
		req = map[string]any{"model": c.model, "prompt": text}
	}
	body, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/tokenize", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		hr.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.client.Do(hr)
	if err != nil {
		return 0, fmt.Errorf("tokenize: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		return 0, errNoTokenize
	case resp.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("tokenize: HTTP %d: %s", resp.StatusCode, truncate(string(b), 200))
	}
	var out struct {
		Count *int `json:"count"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Count == nil {
		return 0, errNoTokenize
	}
	return *out.Count, nil
}

// calibrate returns the calibration for target tokens: the word count whose
// probe prompt the server counts as exactly target tokens, or the closest
// not above it (closest above when even one word is too many). It falls
// back to the approximation when the server has no /tokenize.
func (c *calibrator) calibrate(ctx context.Context, target int) (Calibration, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cal, ok := c.byToken[target]; ok {
		return cal, nil
	}
	cal := Calibration{Method: CalibrateApproximate, TargetTokens: target, Words: max(1, target)}
	if c.noTok || target < 1 {
		c.byToken[target] = cal
		return cal, nil
	}
	tried := map[int]int{}
	k := max(1, target)
	// Start from an earlier calibration's overhead when there is one.
	for _, prev := range c.byToken {
		if prev.Method == CalibrateTokenize {
			k = max(1, target-(prev.MeasuredTokens-prev.Words))
			break
		}
	}
	bestK, bestC := 0, 0
	better := func(cc int) bool {
		if bestK == 0 {
			return true
		}
		dn, db := target-cc, target-bestC
		if (dn >= 0) != (db >= 0) {
			return dn >= 0
		}
		return abs(dn) < abs(db)
	}
	for range 12 {
		n, err := c.count(ctx, promptText(c.seed, -1, k))
		cal.Calls++
		if errors.Is(err, errNoTokenize) {
			c.noTok = true
			c.byToken[target] = cal
			return cal, nil
		}
		if err != nil {
			return cal, fmt.Errorf("calibrate a %d-token prompt: %w; check that the server is up and answering at %s", target, err, c.base)
		}
		tried[k] = n
		if better(n) {
			bestK, bestC = k, n
		}
		if n == target {
			break
		}
		// Secant step over the two closest points, one token a word at first.
		slope := 1.0
		if len(tried) > 1 {
			for k2, n2 := range tried {
				if k2 != k && n2 != n {
					slope = float64(n-n2) / float64(k-k2)
					break
				}
			}
			if slope <= 0 {
				slope = 1
			}
		}
		next := max(1, k+int(float64(target-n)/slope+0.5*sign(target-n)))
		if _, seen := tried[next]; seen {
			// Oscillating: walk one word from the best point.
			next = bestK + int(sign(target-bestC))
			if _, seen := tried[next]; seen || next < 1 {
				break
			}
		}
		k = next
	}
	cal.Method, cal.Words, cal.MeasuredTokens = CalibrateTokenize, bestK, bestC
	c.byToken[target] = cal
	return cal, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func sign(x int) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
