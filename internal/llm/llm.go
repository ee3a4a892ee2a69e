// Package llm is a client of an OpenAI-compatible chat completions endpoint
// (POST {url}/chat/completions, as llama.cpp's server, vLLM and Ollama
// speak it; docs/voicebot.md#conversations-the-agent-step): a conversation
// and function tools in, the reply streamed back as server-sent events and
// handed on sentence by sentence, so a caller can speak the first sentence
// while the model writes the next. Everything read is bounded in bytes and
// in time.
package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
)

// MaxReplyBytes bounds what one reply may send, events and all: a model
// that talks on, or a server that never ends its stream, fails the reply
// rather than fill memory.
const MaxReplyBytes = 256 << 10

// Client talks to one endpoint with one model.
type Client struct {
	url, model, key string
	timeout         time.Duration
	http            *http.Client
}

// New is a client of the endpoint whose base is url (such as
// http://127.0.0.1:8080/v1; /chat/completions is added), asking model, with
// key as its bearer token when not empty, each reply bounded by timeout.
func New(url, model, key string, timeout time.Duration) *Client {
	return &Client{url: strings.TrimRight(url, "/") + "/chat/completions", model: model, key: key,
		timeout: timeout, http: &http.Client{}}
}

// Message is one message of the conversation: role "system", "user" or
// "assistant".
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Tool is a function the model may call: its name, what it is for, and
// its parameters as a JSON schema.
type Tool struct {
	Name        string
	Description string
	Parameters  map[string]any
}

// Call is a tool the model called, with its arguments (JSON text).
type Call struct {
	Name      string
	Arguments string
}

// Reply is what the model answered: its text, and the tools it called.
type Reply struct {
	Text  string
	Calls []Call
}

// Chat sends the conversation and streams the reply: each sentence of its
// text goes to sentence as soon as it is complete (the rest at the end);
// an error from sentence stops the reply. It fails on a transport error,
// a status other than 2xx, a reply past MaxReplyBytes, or the timeout.
func (c *Client) Chat(ctx context.Context, msgs []Message, tools []Tool, sentence func(string) error) (Reply, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, fmt.Errorf("llm: no whole reply within %s", c.timeout))
	defer cancel()
	body, err := json.Marshal(request{Model: c.model, Messages: msgs, Tools: toolsJSON(tools), Stream: true})
	if err != nil {
		return Reply{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return Reply{}, fmt.Errorf("llm: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return Reply{}, c.fail(ctx, err)
	}
	defer resp.Body.Close()
	r := &limited{r: resp.Body, left: MaxReplyBytes}
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return Reply{}, fmt.Errorf("llm: %s answered %s: %s", c.url, resp.Status, strings.TrimSpace(string(msg)))
	}
	var rep Reply
	br := bufio.NewReader(r)
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" || startsObject(br) {
		err = c.whole(br, &rep, sentence) // a server that does not stream
	} else {
		err = c.stream(br, &rep, sentence)
	}
	if r.left <= 0 {
		err = errTooLong // whatever the cut made of the last event
	}
	if err != nil {
		return rep, c.fail(ctx, err)
	}
	return rep, nil
}

// startsObject says whether the body is one JSON object, whatever its
// Content-Type says: its first byte past white space is {.
func startsObject(br *bufio.Reader) bool {
	for {
		b, err := br.Peek(1)
		if err != nil {
			return false
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			br.ReadByte()
		default:
			return b[0] == '{'
		}
	}
}

// fail names the timeout when it is why err happened.
func (c *Client) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return fmt.Errorf("llm: %w", err)
}

type request struct {
	Model    string     `json:"model"`
	Messages []Message  `json:"messages"`
	Tools    []toolJSON `json:"tools,omitempty"`
	Stream   bool       `json:"stream"`
}

type toolJSON struct {
	Type     string `json:"type"`
	Function struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		Parameters  map[string]any `json:"parameters"`
	} `json:"function"`
}

func toolsJSON(tools []Tool) []toolJSON {
	var out []toolJSON
	for _, t := range tools {
		j := toolJSON{Type: "function"}
		j.Function.Name, j.Function.Description, j.Function.Parameters = t.Name, t.Description, t.Parameters
		out = append(out, j)
	}
	return out
}

// toolCall is a tool call as a choice's message or delta carries it; a
// stream sends its name and arguments in pieces, by index.
type toolCall struct {
	Index    int `json:"index"`
	Function struct {
		Name      string    `json:"name"`
		Arguments arguments `json:"arguments"`
	} `json:"function"`
}

// arguments are a tool call's arguments: JSON text in a string, as the
// protocol has them, or, from servers that send the object itself, that
// object's text.
type arguments string

func (a *arguments) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*a = arguments(s)
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	*a = arguments(b)
	return nil
}

type message struct {
	Content   string     `json:"content"`
	ToolCalls []toolCall `json:"tool_calls"`
}

type chunk struct {
	Choices []struct {
		Delta   message `json:"delta"`
		Message message `json:"message"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// stream reads server-sent events, one JSON chunk per data line, until
// [DONE] or the end of the body.
func (c *Client) stream(r io.Reader, rep *Reply, sentence func(string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxReplyBytes)
	var text strings.Builder
	spoken := 0 // text[:spoken] went to sentence
	calls := map[int]*Call{}
	var order []int
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue // comments, event names, blank separators
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var ch chunk
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			return fmt.Errorf("an event that is not a chat completion chunk: %.100q", data)
		}
		if ch.Error != nil {
			return fmt.Errorf("the stream failed: %s", ch.Error.Message)
		}
		for _, choice := range ch.Choices {
			text.WriteString(choice.Delta.Content)
			for _, tc := range choice.Delta.ToolCalls {
				call := calls[tc.Index]
				if call == nil {
					call = &Call{}
					calls[tc.Index] = call
					order = append(order, tc.Index)
				}
				call.Name += tc.Function.Name
				call.Arguments += string(tc.Function.Arguments)
			}
		}
		for {
			end := SentenceEnd(text.String()[spoken:])
			if end < 0 {
				break
			}
			if err := say(sentence, text.String()[spoken:spoken+end]); err != nil {
				return err
			}
			spoken += end
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := say(sentence, text.String()[spoken:]); err != nil {
		return err
	}
	rep.Text = strings.TrimSpace(text.String())
	for _, i := range order {
		rep.Calls = append(rep.Calls, *calls[i])
	}
	return nil
}

// whole reads a reply that came as one JSON document.
func (c *Client) whole(r io.Reader, rep *Reply, sentence func(string) error) error {
	var ch chunk
	if err := json.NewDecoder(r).Decode(&ch); err != nil {
		return fmt.Errorf("a reply that is not a chat completion: %w", err)
	}
	if ch.Error != nil {
		return errors.New(ch.Error.Message)
	}
	if len(ch.Choices) == 0 {
		return errors.New("a reply without choices")
	}
	m := ch.Choices[0].Message
	rep.Text = strings.TrimSpace(m.Content)
	for _, tc := range m.ToolCalls {
		rep.Calls = append(rep.Calls, Call{Name: tc.Function.Name, Arguments: string(tc.Function.Arguments)})
	}
	for rest := rep.Text; rest != ""; {
		end := SentenceEnd(rest)
		if end < 0 {
			end = len(rest)
		}
		if err := say(sentence, rest[:end]); err != nil {
			return err
		}
		rest = rest[end:]
	}
	return nil
}

func say(sentence func(string) error, s string) error {
	if s = strings.TrimSpace(s); s == "" || sentence == nil {
		return nil
	}
	return sentence(s)
}

// SentenceEnd is the length of text's first whole sentence: up to a . ! ?
// or … (and any quotes or brackets closing it) followed by white space, or
// a line's end; -1 when text holds no whole sentence yet. "9.5" or "v.v."
// at the end of what has come so far do not end one: the next character
// may be a digit.
func SentenceEnd(text string) int {
	for i, r := range text {
		switch r {
		case '\n':
			return i + 1
		case '.', '!', '?', '…':
			j := i + len(string(r))
			for j < len(text) && strings.ContainsRune(`.!?"')]»”’`, rune(text[j])) {
				j++
			}
			if j < len(text) && (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r') {
				return j
			}
		}
	}
	return -1
}

// limited is a reader that fails, rather than ends, past its bound: a
// reply cut silently could read as whole.
type limited struct {
	r    io.Reader
	left int64
}

var errTooLong = fmt.Errorf("the reply is longer than %d bytes", MaxReplyBytes)

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errTooLong
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
