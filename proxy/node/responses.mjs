// An agent's hand-written loop over openai's Responses API: send the
// input items, append the response's output items, run every function
// call and append its output, and end at the first response without calls.
import OpenAI from 'openai';
import { baseURL, stream, maxRequests, searchSchema, report, countingFetch, search, main } from './common.mjs';

const client = new OpenAI({ baseURL: baseURL + '/v1', apiKey: 'sk-test', fetch: countingFetch, timeout: 20_000 });
const tools = [{ type: 'function', name: 'search', description: 'Search the web.', parameters: searchSchema, strict: true }];

main(async () => {
  const input = [{ role: 'user', content: 'Find x.' }];
  while (report.requests < maxRequests) {
    report.requests++;
    const params = { model: 'gpt-test', instructions: 'You search.', input, tools };
    const response = stream
      ? await client.responses.stream(params).finalResponse()
      : await client.responses.create(params);
    input.push(...response.output);
    const calls = response.output.filter((item) => item.type === 'function_call');
    if (calls.length === 0) {
      report.text = response.output_text;
      report.finish = response.status;
      return;
    }
    for (const call of calls) {
      input.push({ type: 'function_call_output', call_id: call.call_id, output: search(JSON.parse(call.arguments)) });
    }
  }
  throw new Error('the loop did not end');
});
