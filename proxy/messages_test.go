package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/loopguard/loopguard/proxy"
	"github.com/loopguard/loopguard/proxy/internal/fake"
)

// messagesLoop is an agent's hand-written loop over the Anthropic client,
// as chatLoop is over OpenAI's.
func messagesLoop(t *testing.T, base string, stream bool) (answer string, stop string, requests int, err error) {
	t.Helper()
	client := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(2))
	params := anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 256,
		System:    []anthropic.TextBlockParam{{Text: "You search."}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Find x."))},
	}
	ctx := context.Background()
	for requests < 10 {
		requests++
		var msg anthropic.Message
		if stream {
			s := client.Messages.NewStreaming(ctx, params)
			for s.Next() {
				if err := msg.Accumulate(s.Current()); err != nil {
					return "", "", requests, err
				}
			}
			if err := s.Err(); err != nil {
				return "", "", requests, err
			}
		} else {
			m, err := client.Messages.New(ctx, params)
			if err != nil {
				return "", "", requests, err
			}
			msg = *m
		}
		params.Messages = append(params.Messages, msg.ToParam())
		var results []anthropic.ContentBlockParamUnion
		var text strings.Builder
		for _, b := range msg.Content {
			switch b.Type {
			case "tool_use":
				results = append(results, anthropic.NewToolResultBlock(b.ID, "no results", false))
			case "text":
				text.WriteString(b.Text)
			}
		}
		if len(results) == 0 {
			return text.String(), string(msg.StopReason), requests, nil
		}
		params.Messages = append(params.Messages, anthropic.NewUserMessage(results...))
	}
	return "", "", requests, errors.New("the loop did not end")
}

func TestMessagesPolicies(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "stream"}[stream]
		t.Run("end/"+name, func(t *testing.T) {
			up, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{Policy: proxy.End})
			answer, stop, n, err := messagesLoop(t, srv.URL, stream)
			if err != nil {
				t.Fatal(err)
			}
			if n != 3 || up.Count() != 3 {
				t.Errorf("the loop made %d requests, the model got %d; want 3 and 3", n, up.Count())
			}
			if stop != "end_turn" || !strings.Contains(answer, "search") || !strings.Contains(answer, "not run") {
				t.Errorf("answer %q, stop reason %q: want the refusal's feedback, end_turn", answer, stop)
			}
		})
		t.Run("error/"+name, func(t *testing.T) {
			up, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{Policy: proxy.Error})
			_, _, n, err := messagesLoop(t, srv.URL, stream)
			if err == nil {
				t.Fatal("the loop ended without an error")
			}
			if n != 3 || up.Count() != 3 {
				t.Errorf("the loop made %d requests, the model got %d; want 3 and 3 (no retry)", n, up.Count())
			}
			var apiErr *anthropic.Error
			if !stream && (!errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnprocessableEntity) {
				t.Errorf("error %v: want an *anthropic.Error with status 422", err)
			}
			if !strings.Contains(err.Error(), "not run") {
				t.Errorf("error %q does not carry the refusal's feedback", err)
			}
		})
	}
}
