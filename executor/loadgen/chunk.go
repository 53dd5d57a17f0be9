package loadgen

import "errors"

// chunkInfo is what one streamed data payload says.
type chunkInfo struct {
	// tokens counts choices that carry content, reasoning or text.
	tokens int
	// usage is set when the chunk carries a non-null usage object.
	usage                          bool
	promptTokens, completionTokens int
	// cachedTokens is usage.prompt_tokens_details.cached_tokens (-1: absent).
	cachedTokens int
	// capture asks for the text of content-carrying choices in text (raw
	// JSON string bytes, escapes kept, aliasing the input); it survives
	// parseChunk's reset.
	capture bool
	text    [][]byte
	// errMsg is set (raw bytes, aliasing the input) for an error event.
	isError bool
	errMsg  []byte
}

var errBadChunk = errors.New("malformed JSON chunk")

// parseChunk reads one OpenAI-style streaming payload (chat or completions)
// without allocating.
func parseChunk(b []byte, ci *chunkInfo) error {
	*ci = chunkInfo{capture: ci.capture, text: ci.text[:0], cachedTokens: -1}
	s := jscan{b: b}
	if !s.openObject() {
		return errBadChunk
	}
	for first := true; ; first = false {
		k, more, ok := s.nextKey(first)
		if !ok {
			return errBadChunk
		}
		if !more {
			return nil
		}
		var good bool
		switch string(k) {
		case "choices":
			ci.tokens = 0 // the last choices key wins
			good = parseChoices(&s, ci)
		case "usage":
			good = parseUsage(&s, ci)
		case "error":
			ci.isError = true
			good = parseError(&s, ci)
		default:
			good = s.skip(0)
		}
		if !good {
			return errBadChunk
		}
	}
}

func parseChoices(s *jscan, ci *chunkInfo) bool {
	if s.peek() != '[' {
		return s.skip(1) // null or an unexpected type: no choices
	}
	s.i++
	if s.eat(']') {
		return true
	}
	for {
		carries, ok := parseChoice(s, ci)
		if !ok {
			return false
		}
		if carries {
			ci.tokens++
		}
		if s.eat(']') {
			return true
		}
		if !s.eat(',') {
			return false
		}
	}
}

// parseChoice reports whether a choice carries a token: a non-empty
// delta.content, delta.reasoning_content, delta.reasoning, message.* of the
// same names, or text.
func parseChoice(s *jscan, ci *chunkInfo) (bool, bool) {
	if s.peek() != '{' {
		return false, s.skip(1)
	}
	s.i++
	carries := false
	for first := true; ; first = false {
		k, more, ok := s.nextKey(first)
		if !ok {
			return false, false
		}
		if !more {
			return carries, true
		}
		switch string(k) {
		case "text":
			if nonEmptyString(s, &carries, ci) {
				continue
			}
			return false, false
		case "delta", "message":
			if s.peek() != '{' {
				if !s.skip(1) {
					return false, false
				}
				continue
			}
			s.i++
			for f2 := true; ; f2 = false {
				k2, more2, ok2 := s.nextKey(f2)
				if !ok2 {
					return false, false
				}
				if !more2 {
					break
				}
				switch string(k2) {
				case "content":
					if !nonEmptyString(s, &carries, ci) {
						return false, false
					}
				case "reasoning_content", "reasoning":
					if !nonEmptyString(s, &carries, nil) {
						return false, false
					}
				default:
					if !s.skip(1) {
						return false, false
					}
				}
			}
		default:
			if !s.skip(1) {
				return false, false
			}
		}
	}
}

// nonEmptyString reads a string or null, setting *carries for a non-empty
// string and keeping its bytes in ci.text when ci captures text.
func nonEmptyString(s *jscan, carries *bool, ci *chunkInfo) bool {
	if s.peek() == '"' {
		v, ok := s.str()
		if ok && len(v) > 0 {
			*carries = true
			if ci != nil && ci.capture {
				ci.text = append(ci.text, v)
			}
		}
		return ok
	}
	return s.skip(1)
}

func parseUsage(s *jscan, ci *chunkInfo) bool {
	ci.usage, ci.promptTokens, ci.completionTokens, ci.cachedTokens = false, 0, 0, -1 // the last usage key wins
	if s.peek() != '{' {
		return s.skip(1)
	}
	s.i++
	ci.usage = true
	for first := true; ; first = false {
		k, more, ok := s.nextKey(first)
		if !ok {
			return false
		}
		if !more {
			return true
		}
		switch string(k) {
		case "prompt_tokens":
			if ci.promptTokens, ok = s.int(); !ok && !s.skip(1) {
				return false
			}
		case "completion_tokens":
			if ci.completionTokens, ok = s.int(); !ok && !s.skip(1) {
				return false
			}
		case "prompt_tokens_details":
			if !parsePromptDetails(s, ci) {
				return false
			}
		default:
			if !s.skip(1) {
				return false
			}
		}
	}
}

func parseError(s *jscan, ci *chunkInfo) bool {
	if s.null() {
		ci.isError = false
		return true
	}
	if s.peek() == '"' {
		v, ok := s.str()
		ci.errMsg = v
		return ok
	}
	if !s.openObject() {
		return s.skip(0)
	}
	for first := true; ; first = false {
		k, more, ok := s.nextKey(first)
		if !ok {
			return false
		}
		if !more {
			return true
		}
		if string(k) == "message" && s.peek() == '"' {
			v, ok := s.str()
			if !ok {
				return false
			}
			ci.errMsg = v
			continue
		}
		if !s.skip(1) {
			return false
		}
	}
}

// parsePromptDetails reads usage.prompt_tokens_details (null or an object)
// for its cached_tokens.
func parsePromptDetails(s *jscan, ci *chunkInfo) bool {
	if s.peek() != '{' {
		return s.skip(1)
	}
	s.i++
	for first := true; ; first = false {
		k, more, ok := s.nextKey(first)
		if !ok {
			return false
		}
		if !more {
			return true
		}
		if string(k) == "cached_tokens" {
			n, ok := s.int()
			if ok {
				ci.cachedTokens = n
				continue
			}
		}
		if !s.skip(1) {
			return false
		}
	}
}
