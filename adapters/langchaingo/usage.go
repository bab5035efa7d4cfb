package langchaingo

import (
	"context"
	"math"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/loopguard/loopguard/guard"
)

// Model returns llm, reporting the token usage of each of its responses to
// the guarded agent whose Plan asked for them, so that each step holds the
// usage of its model calls and the guard's token budgets apply. Give the
// agent the returned model in place of llm:
//
//	agent := agents.NewOpenAIFunctionsAgent(lglangchaingo.Model(llm), tools)
//	executor := agents.NewExecutor(lglangchaingo.Wrap(g, agent))
//
// The usage is read from each response with [UsageFromResponse]; the calls
// of one Plan are summed. A call outside a guarded Plan reports nothing.
// langchaingo's callbacks hook for a response (HandleLLMGenerateContentEnd)
// would see the same response, but not every provider calls it (its
// Anthropic model, as of v0.1.14, does not), and a model is what every
// agent takes.
func Model(llm llms.Model) llms.Model { return usageModel{llm} }

// usageModel is a model whose responses' usage goes to the Plan that asked.
type usageModel struct{ llms.Model }

// GenerateContent asks the model and adds the response's usage to the
// Plan's.
func (m usageModel) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	resp, err := m.Model.GenerateContent(ctx, messages, options...)
	if u, ok := ctx.Value(usageKey{}).(*planUsage); ok && resp != nil {
		u.add(UsageFromResponse(resp))
	}
	return resp, err
}

// Call asks for one completion through GenerateContent, so that its usage
// is reported too.
func (m usageModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// usageKey is the context key of a Plan's usage.
type usageKey struct{}

// planUsage sums the usage of one Plan's model calls.
type planUsage struct {
	mu sync.Mutex
	u  guard.Usage
}

func (p *planUsage) add(u guard.Usage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.u.InputTokens += u.InputTokens
	p.u.OutputTokens += u.OutputTokens
	p.u.TotalTokens += u.TotalTokens
}

func (p *planUsage) get() guard.Usage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.u
}

// The keys of a choice's GenerationInfo that langchaingo's providers put
// the token counts under: OpenAI, Google AI and Ollama use the first three,
// Anthropic the next two, Bedrock the last two.
var (
	inputKeys  = []string{"PromptTokens", "InputTokens", "input_tokens"}
	outputKeys = []string{"CompletionTokens", "OutputTokens", "output_tokens"}
	totalKeys  = []string{"TotalTokens"}
)

// UsageFromResponse returns the token usage of a model's response, read
// from the GenerationInfo of its first choice that reports any: its input
// tokens (PromptTokens, InputTokens or input_tokens), output tokens
// (CompletionTokens, OutputTokens or output_tokens) and total tokens
// (TotalTokens; zero when the provider gives none, and the guard then
// counts input plus output). Every choice of a response repeats the
// response's usage, so the choices are not summed. Counts of any integer
// or floating-point type are read; other values, and negative ones, are
// ignored. A response without usage gives the zero Usage.
func UsageFromResponse(resp *llms.ContentResponse) guard.Usage {
	if resp == nil {
		return guard.Usage{}
	}
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		in, okIn := count(c.GenerationInfo, inputKeys)
		out, okOut := count(c.GenerationInfo, outputKeys)
		total, okTotal := count(c.GenerationInfo, totalKeys)
		if okIn || okOut || okTotal {
			return guard.Usage{InputTokens: in, OutputTokens: out, TotalTokens: total}
		}
	}
	return guard.Usage{}
}

// count returns the first of keys that info holds as a count.
func count(info map[string]any, keys []string) (int64, bool) {
	for _, k := range keys {
		if n, ok := toCount(info[k]); ok {
			return n, true
		}
	}
	return 0, false
}

// toCount returns v as a token count, if it is a number that is one.
func toCount(v any) (int64, bool) {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case uint:
		n = int64(min(uint64(x), math.MaxInt64))
	case uint32:
		n = int64(x)
	case uint64:
		n = int64(min(x, math.MaxInt64))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) || x != math.Trunc(x) || x >= math.MaxInt64 {
			return 0, false
		}
		n = int64(x)
	default:
		return 0, false
	}
	return n, n >= 0
}
