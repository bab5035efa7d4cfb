// An agent's hand-written loop over @anthropic-ai/sdk's Messages: send the
// messages, append the assistant's content, answer every tool_use with a
// tool_result, and end at the first message without tool_use blocks.
import Anthropic from '@anthropic-ai/sdk';
import { baseURL, stream, maxRequests, searchSchema, report, countingFetch, search, main } from './common.mjs';

const client = new Anthropic({ baseURL, apiKey: 'sk-ant-test', fetch: countingFetch, timeout: 20_000 });
const tools = [{ name: 'search', description: 'Search the web.', input_schema: searchSchema }];

main(async () => {
  const messages = [{ role: 'user', content: 'Find x.' }];
  while (report.requests < maxRequests) {
    report.requests++;
    const params = { model: 'claude-test', max_tokens: 1024, system: 'You search.', messages, tools };
    const msg = stream
      ? await client.messages.stream(params).finalMessage()
      : await client.messages.create(params);
    messages.push({ role: 'assistant', content: msg.content });
    const uses = msg.content.filter((b) => b.type === 'tool_use');
    if (uses.length === 0) {
      report.text = msg.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
      report.finish = msg.stop_reason;
      return;
    }
    messages.push({
      role: 'user',
      content: uses.map((u) => ({ type: 'tool_result', tool_use_id: u.id, content: search(u.input) })),
    });
  }
  throw new Error('the loop did not end');
});
