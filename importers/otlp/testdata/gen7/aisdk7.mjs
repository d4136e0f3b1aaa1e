// The AI SDK 7 with its LegacyOpenTelemetry integration (@ai-sdk/otel)
// against the scripted model of ../gen/server.mjs: the scenario of
// ../gen/aisdk.mjs — an orchestrator whose first response makes two
// parallel getWeather calls, whose second makes two parallel calls of a
// research tool that runs a sub-agent (generateText again, functionId
// "researcher"), then answers. AI SDK 7 nests each ai.toolCall span under
// the ai.generateText.doGenerate span of the response that made the call.
// Usage: node aisdk7.mjs OUT_DIR (writes OUT_DIR/aisdk7-legacy.otlp.jsonl
// and its server log OUT_DIR/logs/aisdk7-legacy.jsonl)
import fs from "node:fs";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { generateText, tool, stepCountIs, registerTelemetry } from "ai";
import { LegacyOpenTelemetry } from "@ai-sdk/otel";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { z } from "zod";
import { startModel, startReceiver, system } from "../gen/server.mjs";

const out = process.argv[2] || "..";
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

// log is the scripted server's record of each request it answered.
const log = [];
const model = await startModel((body, reply) => {
  const answer = (text, calls, usage) => {
    const who = system(body).startsWith("You research one city") ? "researcher" : "planner";
    log.push({ seq: log.length + 1, agent: who, calls: (calls || []).map(([n]) => n), text: text || "",
      usage: { input: usage[0], output: usage[1], cached: usage[2] ?? 0 } });
    return reply(text, calls, usage);
  };
  const sys = system(body);
  const toolResults = body.messages.filter((m) => m.role === "tool").length;
  if (sys.startsWith("You research one city")) {
    const user = body.messages.find((m) => m.role === "user");
    const city = (typeof user.content === "string" ? user.content : user.content.map((p) => p.text || "").join("")).replace(/^Research /, "");
    if (toolResults === 0) return answer(null, [["lookup", { city }]], [90, 14, 0]);
    return answer(`${city}: mild, 18C, light wind.`, null, [130, 12, 64]);
  }
  if (sys.startsWith("You plan trips")) {
    if (toolResults === 0) return answer(null, [["getWeather", { city: "Paris" }], ["getWeather", { city: "London" }]], [200, 30, 0]);
    if (toolResults === 2) return answer(null, [["research", { city: "Paris" }], ["research", { city: "London" }]], [320, 30, 192]);
    return answer("Go to Paris: it is warmer.", null, [450, 10, 320]);
  }
  throw new Error("no scripted reply for: " + sys.slice(0, 80));
});

const provider = createOpenAICompatible({ name: "scripted", baseURL: model.url, apiKey: "sk-scripted" });
const llm = provider.chatModel("scripted-4o");

const file = `${out}/aisdk7-legacy.otlp.jsonl`;
const receiver = await startReceiver(file);
const tp = new NodeTracerProvider({
  resource: resourceFromAttributes({ "service.name": "aisdk7-trip-planner" }),
  spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: receiver.url }))],
});
trace.setGlobalTracerProvider(tp);
registerTelemetry(new LegacyOpenTelemetry({ tracer: tp.getTracer("ai") }));

const telemetry = (functionId) => ({ functionId, recordInputs: true, recordOutputs: true });
const lookup = tool({
  description: "Look up a city's weather report.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `${city}: 18C`,
});
const getWeather = tool({
  description: "Get the weather of a city.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => ({ city, celsius: city === "Paris" ? 18 : 14 }),
});
const research = tool({
  description: "Research a city with a sub-agent.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    const r = await generateText({
      model: llm, system: "You research one city.", prompt: `Research ${city}`,
      tools: { lookup }, stopWhen: stepCountIs(4), telemetry: telemetry("researcher"),
    });
    return r.text;
  },
});
await generateText({
  model: llm, system: "You plan trips.", prompt: "Paris or London this weekend?",
  tools: { getWeather, research }, stopWhen: stepCountIs(5), telemetry: telemetry("planner"),
});
await tp.forceFlush();
await tp.shutdown();
receiver.srv.close();
model.srv.close();
fs.mkdirSync(`${out}/logs`, { recursive: true });
fs.writeFileSync(`${out}/logs/aisdk7-legacy.jsonl`, log.map((e) => JSON.stringify(e)).join("\n") + "\n");
console.log("wrote", file);
