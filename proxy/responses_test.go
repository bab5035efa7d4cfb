package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/loopguard/loopguard/proxy"
	"github.com/loopguard/loopguard/proxy/internal/fake"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// responsesLoop is an agent's hand-written loop over the OpenAI Responses
// API. With chained set it sends only the new items and names the previous
// response (previous_response_id), as an agent does when the upstream keeps
// the history; otherwise it sends the whole input each time.
func responsesLoop(t *testing.T, base string, stream, chained bool) (answer string, status string, requests int, err error) {
	t.Helper()
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("sk-test"), option.WithMaxRetries(2))
	input := []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage("Find x.", responses.EasyInputMessageRoleUser),
	}
	params := responses.ResponseNewParams{Model: "gpt-test", Instructions: openai.String("You search.")}
	ctx := context.Background()
	for requests < 10 {
		requests++
		params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: input}
		var resp responses.Response
		if stream {
			s := client.Responses.NewStreaming(ctx, params)
			for s.Next() {
				if ev := s.Current(); ev.Type == "response.completed" {
					resp = ev.Response
				}
			}
			if err := s.Err(); err != nil {
				return "", "", requests, err
			}
		} else {
			r, err := client.Responses.New(ctx, params)
			if err != nil {
				return "", "", requests, err
			}
			resp = *r
		}
		var outputs []responses.ResponseInputItemUnionParam
		if chained {
			input = nil
			params.PreviousResponseID = openai.String(resp.ID)
		}
		for _, item := range resp.Output {
			if item.Type != "function_call" {
				continue
			}
			if !chained {
				input = append(input, responses.ResponseInputItemParamOfFunctionCall(item.AsFunctionCall().Arguments, item.CallID, item.Name))
			}
			out := responses.ResponseInputItemParamOfFunctionCallOutput("no results")
			out.OfFunctionCallOutput.CallID = openai.String(item.CallID)
			outputs = append(outputs, out)
		}
		if len(outputs) == 0 {
			return resp.OutputText(), string(resp.Status), requests, nil
		}
		input = append(input, outputs...)
	}
	return "", "", requests, errors.New("the loop did not end")
}

func TestResponsesPolicies(t *testing.T) {
	for _, chained := range []bool{false, true} {
		for _, stream := range []bool{false, true} {
			name := map[bool]string{false: "input", true: "previous_response_id"}[chained] + "/" + map[bool]string{false: "json", true: "stream"}[stream]
			t.Run("end/"+name, func(t *testing.T) {
				up, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{Policy: proxy.End})
				answer, status, n, err := responsesLoop(t, srv.URL, stream, chained)
				if err != nil {
					t.Fatal(err)
				}
				if n != 3 || up.Count() != 3 {
					t.Errorf("the loop made %d requests, the model got %d; want 3 and 3", n, up.Count())
				}
				if status != "completed" || !strings.Contains(answer, "search") || !strings.Contains(answer, "not run") {
					t.Errorf("answer %q, status %q: want the refusal's feedback, completed", answer, status)
				}
			})
			t.Run("error/"+name, func(t *testing.T) {
				up, srv, _ := start(t, fake.Loop("search", `{"q":"x"}`), proxy.Options{Policy: proxy.Error})
				_, _, n, err := responsesLoop(t, srv.URL, stream, chained)
				if err == nil {
					t.Fatal("the loop ended without an error")
				}
				if n != 3 || up.Count() != 3 {
					t.Errorf("the loop made %d requests, the model got %d; want 3 and 3 (no retry)", n, up.Count())
				}
				var apiErr *openai.Error
				if !stream && (!errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnprocessableEntity) {
					t.Errorf("error %v: want an *openai.Error with status 422", err)
				}
			})
		}
	}
}
