package wire_test

import (
	"fmt"

	"github.com/loopguard/loopguard/proxy/internal/wire"
)

// A response asks for two calls; the guard refused the first. Rewrite
// takes it out and puts the feedback in its place.
func ExampleMessages_Rewrite() {
	body := []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5",` +
		`"content":[{"type":"tool_use","id":"toolu_a","name":"ls","input":{"dir":"/"}},` +
		`{"type":"tool_use","id":"toolu_b","name":"pwd","input":{}}],` +
		`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`)
	api := wire.Messages{}
	out, err := api.ParseResponse(body)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range out.Calls {
		fmt.Printf("%s %s %s\n", c.ID, c.Name, c.Args)
	}
	rewritten, err := api.Rewrite(body, []int{0}, "ls(/) again: stopped.")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(rewritten))
	all, _ := api.Rewrite(body, []int{0, 1}, "Stopped.")
	fmt.Println(string(all))
	// Output:
	// toolu_a ls {"dir":"/"}
	// toolu_b pwd {}
	// {"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ls(/) again: stopped."},{"type":"tool_use","id":"toolu_b","name":"pwd","input":{}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}
	// {"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Stopped."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}
}
