module github.com/loopguard/loopguard/adapters/goopenai

go 1.26.0

replace github.com/loopguard/loopguard => ../..

require (
	github.com/google/go-cmp v0.7.0
	github.com/loopguard/loopguard v0.0.0
	github.com/sashabaranov/go-openai v1.43.0
)
