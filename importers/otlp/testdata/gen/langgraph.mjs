// LangGraph JS, traced by OpenInference's LangChain instrumentation, against
// the scripted model: a supervisor handing off to two agents
// (@langchain/langgraph-supervisor) and a map-reduce fanning out with Send.
// Usage: node langgraph.mjs OUT_DIR
import { tool } from "@langchain/core/tools";
import { createReactAgent } from "@langchain/langgraph/prebuilt";
import { createSupervisor } from "@langchain/langgraph-supervisor";
import { StateGraph, Annotation, Send, START, END } from "@langchain/langgraph";
import { z } from "zod";
import { startModel, lastMessage, system } from "./server.mjs";
import { traced as tracedTo, chatModel } from "./langchain.mjs";

const out = process.argv[2] || "..";

// The scripted model. Each rule names the conversation it answers.
const model = await startModel((body, reply) => {
  const sys = system(body);
  const last = body.messages[body.messages.length - 1];
  const text = lastMessage(body);
  if (sys.startsWith("You are a team supervisor")) {
    // supervisor: research first, then math, then answer
    const transfers = body.messages.filter((m) => m.role === "tool" && /transfer_back_to_supervisor|Successfully transferred back/.test(m.content || "")).length;
    if (transfers === 0) return reply(null, [["transfer_to_research_expert", {}]], [120, 12, 0]);
    if (transfers === 1) return reply(null, [["transfer_to_math_expert", {}]], [260, 12, 128]);
    return reply("Together the FAANG companies had 1,977,586 employees in 2024.", null, [330, 18, 256]);
  }
  if (sys.startsWith("You are a world class researcher")) {
    if (last.role === "tool" && !/transferred/.test(last.content)) return reply("Meta 67,317; Apple 164,000; Amazon 1,551,000; Netflix 14,000; Google 181,269.", null, [240, 40, 0]);
    return reply(null, [["web_search", { query: "FAANG headcount 2024" }]], [150, 20, 0]);
  }
  if (sys.startsWith("You are a math expert")) {
    if (last.role === "tool" && !/transferred/.test(last.content)) return reply("The sum is 1,977,586.", null, [300, 10, 0]);
    return reply(null, [["add", { numbers: [67317, 164000, 1551000, 14000, 181269] }]], [280, 30, 0]);
  }
  if (text.startsWith("List three subjects")) return reply('["lions", "owls", "sharks"]', null, [40, 10, 0]);
  if (text.startsWith("Write one fact about")) {
    const subject = text.slice("Write one fact about ".length);
    return reply(`A fact about ${subject}.`, null, [20, 8, 0]);
  }
  if (text.startsWith("Pick the best fact")) return reply("A fact about owls.", null, [60, 6, 0]);
  throw new Error("no scripted reply for: " + text.slice(0, 80));
});

const traced = (name, fn) => tracedTo(`${out}/${name}.otlp.jsonl`, `langgraph-${name}`, fn);
const llm = () => chatModel(model.url);

await traced("langgraph-supervisor", async () => {
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
});

await traced("langgraph-mapreduce", async () => {
  const State = Annotation.Root({
    subjects: Annotation({ reducer: (a, b) => b, default: () => [] }),
    facts: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
    best: Annotation({ reducer: (a, b) => b, default: () => "" }),
  });
  const m = llm();
  const graph = new StateGraph(State)
    .addNode("plan", async () => {
      const r = await m.invoke([{ role: "user", content: "List three subjects as a JSON array." }]);
      return { subjects: JSON.parse(r.content) };
    })
    .addNode("fact", async (s) => {
      const r = await m.invoke([{ role: "user", content: `Write one fact about ${s.subject}` }]);
      return { facts: [r.content] };
    })
    .addNode("pick", async (s) => {
      const r = await m.invoke([{ role: "user", content: `Pick the best fact:\n${s.facts.join("\n")}` }]);
      return { best: r.content };
    })
    .addEdge(START, "plan")
    .addConditionalEdges("plan", (s) => s.subjects.map((subject) => new Send("fact", { subject })), ["fact"])
    .addEdge("fact", "pick")
    .addEdge("pick", END)
    .compile();
  await graph.invoke({});
});

model.srv.close();
