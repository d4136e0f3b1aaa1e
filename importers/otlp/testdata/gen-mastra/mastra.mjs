// A Mastra workflow traced over OTLP (@mastra/observability with
// @mastra/otel-exporter) against a scripted OpenAI-compatible model on
// 127.0.0.1: a workflow whose first step runs two steps in parallel (each
// asks the model once), then, after the join, a step that runs an agent
// with a tool. Usage: node mastra.mjs OUT_DIR (writes
// OUT_DIR/mastra-workflow.otlp.jsonl and the model's log
// OUT_DIR/logs/mastra-workflow.jsonl)
import fs from "node:fs";
import http from "node:http";
import { z } from "zod";
import { Mastra } from "@mastra/core/mastra";
import { Agent } from "@mastra/core/agent";
import { createTool } from "@mastra/core/tools";
import { createWorkflow, createStep } from "@mastra/core/workflows";
import { Observability } from "@mastra/observability";
import { OtelExporter } from "@mastra/otel-exporter";
import { startReceiver, system } from "../gen/server.mjs";

const out = process.argv[2] || "..";
const name = "mastra-workflow";
const log = [];
let n = 0;

// The scripted model: Chat Completions, streamed (SSE) or not.
function script(body) {
  const sys = system(body);
  const user = body.messages.filter((m) => m.role === "user").map((m) => typeof m.content === "string" ? m.content : (m.content || []).map((p) => p.text || "").join("")).join(" ");
  const tools = body.messages.filter((m) => m.role === "tool").length;
  if (sys.includes("You are the writer")) {
    if (tools === 0) return { agent: "writer", calls: [["lookup", { city: "Paris" }]], usage: [200, 20, 0] };
    return { agent: "writer", text: "Paris it is: 18C and sunny.", usage: [260, 12, 128] };
  }
  if (user.includes("weather in Paris")) return { agent: "helper", text: "Paris: 18C.", usage: [40, 6, 0] };
  if (user.includes("weather in London")) return { agent: "helper", text: "London: 14C.", usage: [40, 6, 0] };
  throw new Error("no scripted reply for: " + (sys + user).slice(0, 120));
}

const model = await new Promise((resolve) => {
  const srv = http.createServer((req, res) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", async () => {
      const body = JSON.parse(data || "{}");
      let r;
      try { r = script(body); } catch (e) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: String(e) } }));
        return;
      }
      await new Promise((ok) => setTimeout(ok, 30));
      n++;
      log.push({ seq: log.length + 1, agent: r.agent, calls: (r.calls || []).map(([c]) => c), text: r.text || "",
        usage: { input: r.usage[0], output: r.usage[1], cached: r.usage[2] } });
      const calls = (r.calls || []).map(([fn, args], i) => ({ id: `call_${n}_${i}`, type: "function", function: { name: fn, arguments: JSON.stringify(args) } }));
      const usage = { prompt_tokens: r.usage[0], completion_tokens: r.usage[1], total_tokens: r.usage[0] + r.usage[1], prompt_tokens_details: { cached_tokens: r.usage[2] } };
      const base = { id: `chatcmpl-${n}`, created: 1767225600 + n, model: "scripted-4o" };
      const finish = calls.length ? "tool_calls" : "stop";
      if (!body.stream) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ ...base, object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: r.text || null, ...(calls.length ? { tool_calls: calls } : {}) }, finish_reason: finish }], usage }));
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (o) => res.write(`data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", ...o })}\n\n`);
      if (r.text) chunk({ choices: [{ index: 0, delta: { role: "assistant", content: r.text }, finish_reason: null }] });
      calls.forEach((c, i) => chunk({ choices: [{ index: 0, delta: { tool_calls: [{ index: i, ...c }] }, finish_reason: null }] }));
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: finish }] });
      chunk({ choices: [], usage });
      res.end("data: [DONE]\n\n");
    });
  });
  srv.listen(0, "127.0.0.1", () => resolve({ srv, url: `http://127.0.0.1:${srv.address().port}/v1` }));
});

const receiver = await startReceiver(`${out}/${name}.otlp.jsonl`);
const llm = { id: "scripted/scripted-4o", url: model.url, apiKey: "sk-scripted" };

const lookup = createTool({
  id: "lookup", description: "Look up a city's weather.",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `${city}: 18C, sunny`,
});
const helper = new Agent({ name: "helper", id: "helper", instructions: "You answer weather questions in one line.", model: llm });
const writer = new Agent({ name: "writer", id: "writer", instructions: "You are the writer. Pick a city.", model: llm, tools: { lookup } });

const ask = (city) => createStep({
  id: `weather-${city.toLowerCase()}`, inputSchema: z.object({ question: z.string() }), outputSchema: z.object({ text: z.string() }),
  execute: async ({ mastra }) => {
    const r = await mastra.getAgent("helper").generate(`What is the weather in ${city}?`);
    return { text: r.text };
  },
});
const decide = createStep({
  id: "decide", inputSchema: z.any(), outputSchema: z.object({ text: z.string() }),
  execute: async ({ mastra, inputData }) => {
    const r = await mastra.getAgent("writer").generate(`Paris or London? ${JSON.stringify(inputData)}`);
    return { text: r.text };
  },
});
const trip = createWorkflow({ id: "trip", inputSchema: z.object({ question: z.string() }), outputSchema: z.object({ text: z.string() }) })
  .parallel([ask("Paris"), ask("London")])
  .then(decide)
  .commit();

const mastra = new Mastra({
  agents: { helper, writer },
  workflows: { trip },
  observability: new Observability({
    configs: {
      otel: {
        serviceName: "mastra-trip",
        exporters: [new OtelExporter({ provider: { custom: { endpoint: receiver.url, protocol: "http/json" } } })],
      },
    },
  }),
});

const run = await mastra.getWorkflow("trip").createRun();
const res = await run.start({ inputData: { question: "Paris or London this weekend?" } });
if (res.status !== "success") throw new Error("workflow: " + JSON.stringify(res).slice(0, 400));
await mastra.shutdown?.();
await new Promise((r) => setTimeout(r, 1500));
receiver.srv.close();
model.srv.close();
// the exporter sends its logs to the receiver too: keep the traces
const file = `${out}/${name}.otlp.jsonl`;
fs.writeFileSync(file, fs.readFileSync(file, "utf8").split("\n").filter((l) => l.includes('"resourceSpans"')).join("\n") + "\n");
fs.mkdirSync(`${out}/logs`, { recursive: true });
fs.writeFileSync(`${out}/logs/${name}.jsonl`, log.map((e) => JSON.stringify(e)).join("\n") + "\n");
console.log("wrote", `${out}/${name}.otlp.jsonl`);
