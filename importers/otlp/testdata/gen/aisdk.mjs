// The Vercel AI SDK with experimental_telemetry against the scripted model:
// an orchestrator whose first response makes two parallel getWeather calls,
// whose second makes two parallel calls of a research tool that runs a
// sub-agent (generateText again, functionId "researcher"), then answers.
// Exported as OTLP/JSON (aisdk.otlp.jsonl) and OTLP/protobuf (aisdk.otlp.pb).
// Usage: node aisdk.mjs OUT_DIR
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { OTLPTraceExporter as JSONExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { generateText, tool, stepCountIs } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { z } from "zod";
import { startModel, startReceiver, system } from "./server.mjs";

const out = process.argv[2] || "..";
// parents come from the active context, as in an app that calls register()
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

const model = await startModel((body, reply) => {
  const sys = system(body);
  const toolResults = body.messages.filter((m) => m.role === "tool").length;
  if (sys.startsWith("You research one city")) {
    const user = body.messages.find((m) => m.role === "user");
    const city = (typeof user.content === "string" ? user.content : user.content.map((p) => p.text || "").join("")).replace(/^Research /, "");
    if (toolResults === 0) return reply(null, [["lookup", { city }]], [90, 14, 0]);
    return reply(`${city}: mild, 18C, light wind.`, null, [130, 12, 64]);
  }
  if (sys.startsWith("You plan trips")) {
    if (toolResults === 0) return reply(null, [["getWeather", { city: "Paris" }], ["getWeather", { city: "London" }]], [200, 30, 0]);
    if (toolResults === 2) return reply(null, [["research", { city: "Paris" }], ["research", { city: "London" }]], [320, 30, 192]);
    return reply("Go to Paris: it is warmer.", null, [450, 10, 320]);
  }
  throw new Error("no scripted reply for: " + sys.slice(0, 80));
});

const provider = createOpenAICompatible({ name: "scripted", baseURL: model.url, apiKey: "sk-scripted" });
const llm = provider.chatModel("scripted-4o");

async function run(tracer) {
  const telemetry = (functionId) => ({ isEnabled: true, functionId, tracer, recordInputs: true, recordOutputs: true });
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
        tools: { lookup }, stopWhen: stepCountIs(4), experimental_telemetry: telemetry("researcher"),
      });
      return r.text;
    },
  });
  await generateText({
    model: llm, system: "You plan trips.", prompt: "Paris or London this weekend?",
    tools: { getWeather, research }, stopWhen: stepCountIs(5), experimental_telemetry: telemetry("planner"),
  });
}

for (const Exporter of [JSONExporter, ProtoExporter]) {
  const proto = Exporter === ProtoExporter;
  const file = `${out}/aisdk.otlp.jsonl`;
  const receiver = await startReceiver(file);
  const tp = new NodeTracerProvider({
    resource: resourceFromAttributes({ "service.name": "aisdk-trip-planner" }),
    // protobuf: one batch, so the .pb file is one ExportTraceServiceRequest
    spanProcessors: [proto ? new BatchSpanProcessor(new Exporter({ url: receiver.url }), { maxExportBatchSize: 1000, scheduledDelayMillis: 60000 })
      : new SimpleSpanProcessor(new Exporter({ url: receiver.url }))],
  });
  await run(tp.getTracer("ai"));
  await tp.forceFlush();
  await tp.shutdown();
  receiver.srv.close();
  console.log("wrote", proto ? `${out}/aisdk.otlp.pb` : file);
}
model.srv.close();
