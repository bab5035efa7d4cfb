// @openai/agents' own loop: run() of an Agent with one tool, its model
// the Responses model or the Chat Completions model
// (LOOPGUARD_API=responses or chat) over an openai client whose base URL
// is the proxy. The framework calls the model, runs the tool, and ends
// the run at the first answer without tool calls (its final output).
import OpenAI from 'openai';
import { z } from 'zod';
import {
  Agent,
  run,
  tool,
  setDefaultOpenAIClient,
  setTracingDisabled,
  OpenAIResponsesModel,
  OpenAIChatCompletionsModel,
} from '@openai/agents';
import { baseURL, stream, api, maxRequests, report, countingFetch, search, main } from './common.mjs';

setTracingDisabled(true);
const client = new OpenAI({ baseURL: baseURL + '/v1', apiKey: 'sk-test', fetch: countingFetch, timeout: 20_000 });
setDefaultOpenAIClient(client);

let model;
switch (api) {
  case 'responses':
    model = new OpenAIResponsesModel(client, 'gpt-test');
    break;
  case 'chat':
    model = new OpenAIChatCompletionsModel(client, 'gpt-test');
    break;
  default:
    throw new Error(`LOOPGUARD_API ${api}: want responses or chat`);
}

const searchTool = tool({
  name: 'search',
  description: 'Search the web.',
  parameters: z.object({ q: z.string() }),
  execute: async (args) => search(args),
});

// The agent's model is the SDK's, counted: each call is one model request
// of the framework's loop.
const counted = {
  getResponse(request) {
    report.requests++;
    return model.getResponse(request);
  },
  getStreamedResponse(request) {
    report.requests++;
    return model.getStreamedResponse(request);
  },
};

const agent = new Agent({ name: 'searcher', instructions: 'You search.', model: counted, tools: [searchTool] });

// finishOf is the finish reason of the model's last response, from what
// the framework kept of it (providerData: the SDK's response object).
function finishOf(raw) {
  const p = raw?.providerData;
  return p?.choices?.[0]?.finish_reason ?? p?.status ?? null;
}

// streamFinish is the finish reason of a raw event of the model's stream,
// as the framework passes it on, or undefined.
function streamFinish(e) {
  if (e?.type === 'response.completed' || e?.type === 'response.incomplete' || e?.type === 'response.failed') {
    return e.response?.status;
  }
  return e?.choices?.[0]?.finish_reason ?? undefined;
}

main(async () => {
  let result;
  if (stream) {
    result = await run(agent, 'Find x.', { stream: true, maxTurns: maxRequests });
    let finish = null;
    for await (const ev of result) {
      if (ev.type === 'raw_model_stream_event' && ev.data.type === 'model') {
        finish = streamFinish(ev.data.event) ?? finish;
      }
    }
    await result.completed;
    if (result.error) throw result.error;
    report.finish = finish;
  } else {
    result = await run(agent, 'Find x.', { maxTurns: maxRequests });
  }
  report.text = result.finalOutput ?? null;
  if (!stream) report.finish = finishOf(result.rawResponses.at(-1));
});
