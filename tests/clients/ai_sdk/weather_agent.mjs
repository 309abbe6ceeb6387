// The Vercel AI SDK's default OpenAI provider, `openai(model)`, which calls the Responses API,
// run against the proxy: one weather tool executed, then a text answer (two steps).
// Usage: PROXY_URL=http://127.0.0.1:8000/v1 node weather_agent.mjs generate|stream|stateless
// (stateless: generate with `store: false`, every earlier item sent whole, none by reference)
// PROXY_URL may list several proxies, comma-separated: the requests take turns among them, as a
// Service spreads them over replicas.
// Prints one JSON line: the final text, every step's tool calls and results, and the finish.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

// Two steps suffice (the call, then the answer); a third would mean the proxy lost the result.
const MAX_STEPS = 3;

const proxies = process.env.PROXY_URL.split(",");
let requests = 0;
// Each request to the first proxy's URL goes to the next proxy in turn.
const takingTurns = (url, init) =>
  fetch(String(url).replace(proxies[0], proxies[requests++ % proxies.length]), init);
const openai = createOpenAI({ baseURL: proxies[0], apiKey: "unused", fetch: takingTurns });
const options = {
  model: openai("test-model"),
  system: "Answer weather questions with the tool.",
  prompt: "What is the weather in Paris?",
  tools: {
    get_weather: tool({
      description: "Current weather for a city.",
      inputSchema: z.object({ city: z.string() }),
      execute: async ({ city }) => `sunny in ${city}`,
    }),
  },
  stopWhen: stepCountIs(MAX_STEPS),
};

async function run(mode) {
  if (mode === "generate") {
    return await generateText(options);
  }
  if (mode === "stateless") {
    return await generateText({ ...options, providerOptions: { openai: { store: false } } });
  }
  const result = streamText({ ...options, onError: ({ error }) => { throw error; } });
  let streamed = "";
  for await (const text of result.textStream) {
    streamed += text; // every step's text, the last step's at the end
  }
  const text = await result.text;
  if (!streamed.endsWith(text)) {
    throw new Error(`streamed ${JSON.stringify(streamed)} does not end in ${JSON.stringify(text)}`);
  }
  return { text, steps: await result.steps, finishReason: await result.finishReason };
}

const result = await run(process.argv[2]);
console.log(
  JSON.stringify({
    text: result.text,
    finishReason: result.finishReason,
    steps: result.steps.map((step) => ({
      toolCalls: step.toolCalls.map(({ toolName, input }) => ({ toolName, input })),
      toolResults: step.toolResults.map(({ toolName, output }) => ({ toolName, output })),
    })),
  }),
);
