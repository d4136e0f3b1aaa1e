// LangGraph JS traced by OpenLLMetry (Traceloop's SDK, its LangChain and
// OpenAI instrumentations) against the scripted model of ../gen/server.mjs:
// the supervisor of ../gen/langgraph.mjs, handing off (transfer_to_*) to a
// researcher and a math expert. OpenLLMetry writes many of its spans as
// traces of their own. Usage: node traceloop.mjs OUT_DIR (writes
// OUT_DIR/openllmetry-langgraph-supervisor.otlp.jsonl and the model's log
// OUT_DIR/logs/openllmetry-langgraph-supervisor.jsonl)
import fs from "node:fs";
import * as traceloop from "@traceloop/node-server-sdk";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import OpenAI from "openai";
import { startModel, startReceiver, lastMessage, system } from "../gen/server.mjs";

const out = process.argv[2] || "..";
const name = "openllmetry-langgraph-supervisor";
const log = [];
const model = await startModel((body, reply) => {
  const sys = system(body);
  const last = body.messages[body.messages.length - 1];
  const answer = (agent, text, calls, usage) => {
    log.push({ seq: log.length + 1, agent, calls: (calls || []).map(([n]) => n), text: text || "",
      usage: { input: usage[0], output: usage[1], cached: usage[2] ?? 0 } });
    return reply(text, calls, usage);
  };
  if (sys.startsWith("You are a team supervisor")) {
    const transfers = body.messages.filter((m) => m.role === "tool" && /transfer_back_to_supervisor|Successfully transferred back/.test(m.content || "")).length;
    if (transfers === 0) return answer("supervisor", null, [["transfer_to_research_expert", {}]], [120, 12, 0]);
    if (transfers === 1) return answer("supervisor", null, [["transfer_to_math_expert", {}]], [260, 12, 128]);
    return answer("supervisor", "Together the FAANG companies had 1,977,586 employees in 2024.", null, [330, 18, 256]);
  }
  if (sys.startsWith("You are a world class researcher")) {
    if (last.role === "tool" && !/transferred/.test(last.content)) return answer("research_expert", "Meta 67,317; Apple 164,000; Amazon 1,551,000; Netflix 14,000; Google 181,269.", null, [240, 40, 0]);
    return answer("research_expert", null, [["web_search", { query: "FAANG headcount 2024" }]], [150, 20, 0]);
  }
  if (sys.startsWith("You are a math expert")) {
    if (last.role === "tool" && !/transferred/.test(last.content)) return answer("math_expert", "The sum is 1,977,586.", null, [300, 10, 0]);
    return answer("math_expert", null, [["add", { numbers: [67317, 164000, 1551000, 14000, 181269] }]], [280, 30, 0]);
  }
  throw new Error("no scripted reply for: " + lastMessage(body).slice(0, 80));
});

const receiver = await startReceiver(`${out}/${name}.otlp.jsonl`);
traceloop.initialize({
  appName: "langgraph-supervisor", apiKey: "scripted", disableBatch: true, traceloopSyncEnabled: false, silenceInitializationMessage: true,
  exporter: new OTLPTraceExporter({ url: receiver.url }),
  instrumentModules: { openAI: OpenAI, langchain: true },
});

const { tool } = await import("@langchain/core/tools");
const { createReactAgent } = await import("@langchain/langgraph/prebuilt");
const { createSupervisor } = await import("@langchain/langgraph-supervisor");
const { ChatOpenAI } = await import("@langchain/openai");
const { z } = await import("zod");
const llm = () => new ChatOpenAI({ model: "scripted-4o", apiKey: "sk-scripted", configuration: { baseURL: model.url }, temperature: 0 });

const webSearch = tool(async () => "Meta 67,317; Apple 164,000; Amazon 1,551,000; Netflix 14,000; Google 181,269", {
  name: "web_search", description: "Search the web for information.", schema: z.object({ query: z.string() }),
});
const add = tool(async ({ numbers }) => String(numbers.reduce((a, b) => a + b, 0)), {
  name: "add", description: "Add numbers.", schema: z.object({ numbers: z.array(z.number()) }),
});
const research = createReactAgent({ llm: llm(), tools: [webSearch], name: "research_expert",
  prompt: "You are a world class researcher with access to web search. Do not do any math." });
const math = createReactAgent({ llm: llm(), tools: [add], name: "math_expert",
  prompt: "You are a math expert. Always use one tool at a time." });
const app = createSupervisor({ agents: [research, math], llm: llm(),
  prompt: "You are a team supervisor managing a research expert and a math expert." }).compile();
await app.invoke({ messages: [{ role: "user", content: "What is the combined headcount of the FAANG companies in 2024?" }] });

await traceloop.forceFlush();
await new Promise((r) => setTimeout(r, 200));
receiver.srv.close();
model.srv.close();
fs.mkdirSync(`${out}/logs`, { recursive: true });
fs.writeFileSync(`${out}/logs/${name}.jsonl`, log.map((e) => JSON.stringify(e)).join("\n") + "\n");
console.log("wrote", `${out}/${name}.otlp.jsonl`);
