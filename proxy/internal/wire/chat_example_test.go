package wire_test

import (
	"fmt"

	"github.com/loopguard/loopguard/proxy/internal/wire"
)

// The proxy reads a Chat Completions request, judges the calls of the
// response, and removes the one the guard refused.
func ExampleChat() {
	api := wire.Chat{}
	req, err := api.ParseRequest([]byte(`{"model":"gpt-4o","messages":[
		{"role":"user","content":"find it"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"q\":\"it\"}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"nothing"}
	],"metadata":{"session_id":"run-7"}}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(req.Model, req.Session, len(req.Items), api.Assistant(req.Items[1]))

	body := []byte(`{"id":"chatcmpl-2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"search","arguments":"{\"q\":\"it\"}"}}]},"finish_reason":"tool_calls"}]}`)
	out, err := api.ParseResponse(body)
	if err != nil {
		panic(err)
	}
	fmt.Println(out.Calls[0].Name, out.Finish)
	body, err = api.Rewrite(body, []int{0}, "Stopped: search was called again with the same arguments.")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(body))
	// Output:
	// gpt-4o run-7 3 true
	// search tool_calls
	// {"id":"chatcmpl-2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Stopped: search was called again with the same arguments."},"finish_reason":"stop"}]}
}
