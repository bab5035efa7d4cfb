package fake

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	oresp "github.com/openai/openai-go/v3/responses"
)

func responsesClient(url string) openai.Client {
	return openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0))
}

var responsesParams = oresp.ResponseNewParams{
	Model: "gpt-test",
	Input: oresp.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
}

// sdkCall is what the SDK reads of a function_call item.
type sdkCall struct{ ItemID, CallID, Name, Args, Status string }

func sdkCalls(r *oresp.Response) (text string, calls []sdkCall) {
	for _, it := range r.Output {
		if it.Type == "function_call" {
			calls = append(calls, sdkCall{it.ID, it.CallID, it.Name, it.Arguments.OfString, string(it.Status)})
		}
	}
	return r.OutputText(), calls
}

var fakeReply = Reply{
	Text:        "Let me look that up.",
	Calls:       []Call{{Name: "search", Args: `{"q":"go"}`}, {ID: "call_x", Name: "fetch", Args: `{"url":"https://go.dev"}`}},
	InputTokens: 12, OutputTokens: 7,
}

var fakeCalls = []sdkCall{
	{"fc_fake0_0", "call_0_0", "search", `{"q":"go"}`, "completed"},
	{"fc_fake0_1", "call_x", "fetch", `{"url":"https://go.dev"}`, "completed"},
}

func TestResponsesJSON(t *testing.T) {
	s := New(func(string, int, []byte) Reply { return fakeReply })
	defer s.Close()
	c := responsesClient(s.URL)
	r, err := c.Responses.New(context.Background(), responsesParams)
	if err != nil {
		t.Fatal(err)
	}
	text, calls := sdkCalls(r)
	if text != fakeReply.Text || r.ID != "resp_fake0" || r.Status != "completed" || r.Model != "gpt-test" {
		t.Errorf("text %q id %q status %q model %q", text, r.ID, r.Status, r.Model)
	}
	if diff := cmp.Diff(fakeCalls, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if r.Usage.InputTokens != 12 || r.Usage.OutputTokens != 7 || r.Usage.TotalTokens != 19 {
		t.Errorf("usage %+v", r.Usage)
	}
	if got := s.Requests(); len(got) != 1 || got[0].API != "responses" || got[0].Path != "/v1/responses" {
		t.Errorf("requests %+v", got)
	}
}

// TestResponsesStream reads the fake's stream with the SDK and its
// accumulator: the events are well formed and ordered, their text and
// calls are those of response.completed, and that is the JSON response.
func TestResponsesStream(t *testing.T) {
	s := New(func(string, int, []byte) Reply { return fakeReply })
	defer s.Close()
	c := responsesClient(s.URL)
	st := c.Responses.NewStreaming(context.Background(), responsesParams)
	var (
		types []string
		acc   oresp.ResponseAccumulator
		final *oresp.Response
		text  strings.Builder
		seq   int64 = -1
	)
	for st.Next() {
		ev := st.Current()
		types = append(types, ev.Type)
		if ev.SequenceNumber != seq+1 {
			t.Errorf("%s: sequence_number %d after %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		var ws oresp.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &ws); err != nil {
			t.Fatal(err)
		}
		if err := acc.AddEvent(ws); err != nil {
			t.Fatalf("accumulator: %s: %v", ev.Type, err)
		}
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			final = &r
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"response.created", "response.in_progress",
		"response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.completed"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if final == nil {
		t.Fatal("no response.completed")
	}
	got, calls := sdkCalls(final)
	if got != fakeReply.Text || text.String() != fakeReply.Text {
		t.Errorf("text: completed %q, deltas %q", got, text.String())
	}
	if diff := cmp.Diff(fakeCalls, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	snap := acc.Snapshot()
	if snap.TerminalEvent != "response.completed" || snap.OutputText() != fakeReply.Text || len(snap.Output) != 3 {
		t.Errorf("accumulator: %+v", snap)
	}
	for i, o := range snap.Output[1:] {
		if o.CallID != fakeCalls[i].CallID || o.Arguments != fakeCalls[i].Args {
			t.Errorf("accumulated call %d: %+v", i, o)
		}
	}
	// The stream's final response is the JSON response.
	whole, _ := responses_(t, fakeReply)
	var a, b any
	json.Unmarshal(whole, &a)
	json.Unmarshal([]byte(final.RawJSON()), &b)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("response.completed differs from the JSON response (-json +stream):\n%s", diff)
	}
}

func responses_(t *testing.T, rep Reply) ([]byte, [][]byte) {
	t.Helper()
	for i := range rep.Calls {
		if rep.Calls[i].ID == "" {
			rep.Calls[i].ID = callID("responses", 0, i)
		}
	}
	return responses("gpt-test", 0, rep, false)
}

func TestResponsesTextOnlyAndDrop(t *testing.T) {
	s := New(func(_ string, n int, _ []byte) Reply {
		if n == 1 {
			return Reply{Text: "a b", DropAfter: 3}
		}
		return Reply{Text: "done"}
	})
	defer s.Close()
	c := responsesClient(s.URL)
	r, err := c.Responses.New(context.Background(), responsesParams)
	if err != nil {
		t.Fatal(err)
	}
	if text, calls := sdkCalls(r); text != "done" || calls != nil || len(r.Output) != 1 {
		t.Errorf("text %q calls %v output %d", text, calls, len(r.Output))
	}
	st := c.Responses.NewStreaming(context.Background(), responsesParams)
	n := 0
	for st.Next() {
		if st.Current().Type == "response.completed" {
			t.Error("a dropped stream completed")
		}
		n++
	}
	if n != 3 {
		t.Errorf("%d events before the drop, want 3", n)
	}
}
