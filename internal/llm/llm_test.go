package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// event is one server-sent event of a chat completion stream.
func event(w io.Writer, delta string) {
	fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":%s}]}\n\n", delta)
	w.(http.Flusher).Flush()
}

func TestChatStreamsSentences(t *testing.T) {
	spoken := make(chan string, 10)
	var got struct {
		Model    string    `json:"model"`
		Messages []Message `json:"messages"`
		Stream   bool      `json:"stream"`
		Tools    []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string         `json:"name"`
				Parameters map[string]any `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	var auth, path string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth, path = r.Header.Get("Authorization"), r.URL.Path
		json.NewDecoder(r.Body).Decode(&got)
		w.Header().Set("Content-Type", "text/event-stream")
		event(w, `{"role":"assistant","content":""}`)
		event(w, `{"content":"Dạ, em chào "}`)
		event(w, `{"content":"anh Lan. Lịch hẹn lúc 9.5"}`)
		// The first sentence is spoken before the rest is written.
		select {
		case s := <-spoken:
			spoken <- s
		case <-time.After(10 * time.Second):
			t.Error("the first sentence was not handed on while the stream went on")
		}
		event(w, `{"content":" giờ ạ! Anh có đến"}`)
		event(w, `{"content":" không?"}`)
		event(w, `{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"end_call","arguments":""}}]}`)
		event(w, `{"tool_calls":[{"index":0,"function":{"arguments":"{\"result\":"}}]}`)
		event(w, `{"tool_calls":[{"index":0,"function":{"arguments":"\"confirmed\"}"}}]}`)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	c := New(srv.URL+"/v1/", "qwen", "sk-test", 10*time.Second)
	tools := []Tool{{Name: "end_call", Description: "End the call.", Parameters: map[string]any{"type": "object"}}}
	rep, err := c.Chat(context.Background(), []Message{{"system", "Be brief."}, {"user", "A lô"}}, tools, func(s string) error {
		spoken <- s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	close(spoken)
	var sentences []string
	for s := range spoken {
		sentences = append(sentences, s)
	}
	if want := []string{"Dạ, em chào anh Lan.", "Lịch hẹn lúc 9.5 giờ ạ!", "Anh có đến không?"}; strings.Join(sentences, "|") != strings.Join(want, "|") {
		t.Errorf("sentences %q, want %q", sentences, want)
	}
	if rep.Text != "Dạ, em chào anh Lan. Lịch hẹn lúc 9.5 giờ ạ! Anh có đến không?" ||
		len(rep.Calls) != 1 || rep.Calls[0] != (Call{"end_call", `{"result":"confirmed"}`}) {
		t.Errorf("reply %+v", rep)
	}
	if path != "/v1/chat/completions" || auth != "Bearer sk-test" || got.Model != "qwen" || !got.Stream ||
		len(got.Messages) != 2 || got.Messages[1] != (Message{"user", "A lô"}) ||
		len(got.Tools) != 1 || got.Tools[0].Type != "function" || got.Tools[0].Function.Name != "end_call" {
		t.Errorf("request to %s (%q): %+v", path, auth, got)
	}
}

// A server that answers one JSON document instead of a stream is read
// too, whatever its Content-Type, and arguments sent as an object.
func TestChatWholeReply(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, `  {"choices":[{"message":{"role":"assistant","content":null,
			"tool_calls":[{"id":"c","type":"function","function":{"name":"end_call","arguments":{"result":"confirmed"}}}]}}]}`)
	}))
	defer srv.Close()
	rep, err := New(srv.URL, "m", "", time.Minute).Chat(context.Background(), nil, nil, nil)
	if err != nil || rep.Text != "" || len(rep.Calls) != 1 || rep.Calls[0] != (Call{"end_call", `{"result":"confirmed"}`}) {
		t.Errorf("reply %+v, %v", rep, err)
	}
}

func TestChatWholeJSONReply(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		fmt.Fprint(w, `{"choices":[{"message":{"role":"assistant","content":"Cảm ơn anh. Chào anh.",
			"tool_calls":[{"id":"c","type":"function","function":{"name":"end_call","arguments":"{\"result\":\"declined\"}"}}]}}]}`)
	}))
	defer srv.Close()
	var sentences []string
	rep, err := New(srv.URL, "m", "", time.Minute).Chat(context.Background(), nil, nil, func(s string) error {
		sentences = append(sentences, s)
		return nil
	})
	if err != nil || len(sentences) != 2 || len(rep.Calls) != 1 || rep.Calls[0].Name != "end_call" {
		t.Errorf("reply %+v, sentences %q, %v", rep, sentences, err)
	}
}

func TestChatFailures(t *testing.T) {
	for name, c := range map[string]struct {
		handler http.HandlerFunc
		timeout time.Duration
		want    string
	}{
		"status": {func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "model not loaded", http.StatusServiceUnavailable)
		}, time.Minute, "503 Service Unavailable: model not loaded"},
		"too long": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for range MaxReplyBytes / 40 {
				event(w, `{"content":"blah blah blah "}`)
			}
		}, time.Minute, "longer than 262144 bytes"},
		"timeout": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			event(w, `{"content":"Dạ"}`)
			<-r.Context().Done() // never ends the stream
		}, 200 * time.Millisecond, "no whole reply within 200ms"},
		"junk": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: <html>\n\n")
		}, time.Minute, "not a chat completion chunk"},
		"stream error": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, `data: {"error":{"message":"context too long"}}`+"\n\n")
		}, time.Minute, "context too long"},
	} {
		srv := httptest.NewServer(c.handler)
		_, err := New(srv.URL, "m", "", c.timeout).Chat(context.Background(), nil, nil, nil)
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	// Nothing listening.
	if _, err := New("http://127.0.0.1:1", "m", "", time.Minute).Chat(context.Background(), nil, nil, nil); err == nil {
		t.Error("no server: no error")
	}
}

func TestSentenceEnd(t *testing.T) {
	for text, want := range map[string]int{
		"Dạ. Vâng":      len("Dạ."),
		"Thật sao?\" Ừ": len("Thật sao?\""),
		"Lúc 9.5":       -1,
		"Chào anh.":     -1, // the next piece may go on with a digit or a letter
		"Một\nHai":      len("Một\n"),
		"Vâng… được":    len("Vâng…"),
	} {
		if got := SentenceEnd(text); got != want {
			t.Errorf("SentenceEnd(%q) = %d, want %d", text, got, want)
		}
	}
}
