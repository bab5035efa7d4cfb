// An agent's hand-written loop over openai's Chat Completions: send the
// history, run every tool call the model asks for, append the results,
// and end at the first answer without tool calls.
import OpenAI from 'openai';
import { baseURL, stream, maxRequests, searchSchema, report, countingFetch, search, main } from './common.mjs';

const client = new OpenAI({ baseURL: baseURL + '/v1', apiKey: 'sk-test', fetch: countingFetch, timeout: 20_000 });
const tools = [{ type: 'function', function: { name: 'search', description: 'Search the web.', parameters: searchSchema } }];

main(async () => {
  const messages = [
    { role: 'system', content: 'You search.' },
    { role: 'user', content: 'Find x.' },
  ];
  while (report.requests < maxRequests) {
    report.requests++;
    const params = { model: 'gpt-test', messages, tools };
    const completion = stream
      ? await client.chat.completions.stream(params).finalChatCompletion()
      : await client.chat.completions.create(params);
    const choice = completion.choices[0];
    const msg = choice.message;
    messages.push({ role: 'assistant', content: msg.content, tool_calls: msg.tool_calls });
    if (!msg.tool_calls?.length) {
      report.text = msg.content;
      report.finish = choice.finish_reason;
      return;
    }
    for (const call of msg.tool_calls) {
      messages.push({ role: 'tool', tool_call_id: call.id, content: search(JSON.parse(call.function.arguments)) });
    }
  }
  throw new Error('the loop did not end');
});
