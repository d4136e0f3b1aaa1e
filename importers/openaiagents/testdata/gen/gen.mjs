// gen.mjs runs small @openai/agents workflows against a scripted
// OpenAI-compatible server on 127.0.0.1 and writes every trace and span the
// SDK emits, each as its toJSON(), one object a line, to ../<scenario>.jsonl.
// Nothing leaves the machine: the default OpenAI trace exporter is replaced
// by a file processor and the client points at the local server.
//
//   cd importers/openaiagents/testdata/gen && npm ci && node gen.mjs
//
// The scripted server answers each agent from its own queue, found by the
// agent's instructions ("You are <name>."), so parallel sub-agents get their
// replies whatever order their requests arrive in.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';
import { z } from 'zod';
import {
  Agent,
  MaxTurnsExceededError,
  run,
  setDefaultOpenAIClient,
  setOpenAIAPI,
  setTraceProcessors,
  tool,
} from '@openai/agents';

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.join(here, '..');

// ---- the scripted model -------------------------------------------------

let script = {}; // agent name -> [reply, ...]; a reply is {say}, {calls: [[name, args], ...]}, or {status}
let seq = 0;
// log is the server's record of every request it answered, the truth the
// tests compare an import with: logs/<scenario>.jsonl, one entry a line.
let log = [];

function agentOf(body) {
  const text = JSON.stringify(body.instructions ?? body.messages?.[0]?.content ?? '');
  const m = text.match(/You are (\w+)\./);
  return m ? m[1] : '?';
}

function usageFor(body, reply) {
  const inTok = Math.ceil(JSON.stringify(body).length / 4);
  const outTok = Math.ceil(JSON.stringify(reply).length / 4);
  const cached = reply.cached ?? Math.floor(inTok / 2 / 64) * 64;
  return { inTok, outTok, cached, reasoning: reply.reasoning ?? 0 };
}

function chatCompletion(body, reply) {
  const u = usageFor(body, reply);
  const message = { role: 'assistant', content: reply.say ?? null };
  if (reply.calls) {
    message.tool_calls = reply.calls.map(([name, args]) => ({
      id: `call_${++seq}`,
      type: 'function',
      function: { name, arguments: JSON.stringify(args) },
    }));
  }
  return {
    id: `chatcmpl-${++seq}`,
    object: 'chat.completion',
    created: 1767000000,
    model: body.model,
    choices: [{ index: 0, message, finish_reason: reply.calls ? 'tool_calls' : 'stop' }],
    usage: {
      prompt_tokens: u.inTok,
      completion_tokens: u.outTok,
      total_tokens: u.inTok + u.outTok,
      prompt_tokens_details: { cached_tokens: u.cached },
      completion_tokens_details: { reasoning_tokens: u.reasoning },
    },
  };
}

function chatChunks(body, reply) {
  const c = chatCompletion(body, reply);
  const msg = c.choices[0].message;
  const base = { id: c.id, object: 'chat.completion.chunk', created: c.created, model: c.model };
  const chunks = [];
  if (msg.content) {
    chunks.push({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: msg.content }, finish_reason: null }] });
  }
  (msg.tool_calls ?? []).forEach((tc, i) => {
    chunks.push({ ...base, choices: [{ index: 0, delta: { tool_calls: [{ index: i, ...tc }] }, finish_reason: null }] });
  });
  chunks.push({ ...base, choices: [{ index: 0, delta: {}, finish_reason: c.choices[0].finish_reason }] });
  chunks.push({ ...base, choices: [], usage: c.usage });
  return chunks;
}

function response(body, reply) {
  const u = usageFor(body, reply);
  const output = [];
  if (reply.say) {
    output.push({
      type: 'message', id: `msg_${++seq}`, status: 'completed', role: 'assistant',
      content: [{ type: 'output_text', text: reply.say, annotations: [] }],
    });
  }
  for (const [name, args] of reply.calls ?? []) {
    const n = ++seq;
    output.push({ type: 'function_call', id: `fc_${n}`, call_id: `call_${n}`, name, arguments: JSON.stringify(args), status: 'completed' });
  }
  return {
    id: `resp_${++seq}`,
    object: 'response',
    created_at: 1767000000,
    status: 'completed',
    model: body.model,
    output,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage: {
      input_tokens: u.inTok,
      input_tokens_details: { cached_tokens: u.cached },
      output_tokens: u.outTok,
      output_tokens_details: { reasoning_tokens: u.reasoning },
      total_tokens: u.inTok + u.outTok,
    },
  };
}

const server = http.createServer((req, res) => {
  let raw = '';
  req.on('data', (d) => (raw += d));
  req.on('end', async () => {
    const body = JSON.parse(raw || '{}');
    const agent = agentOf(body);
    const reply = script[agent]?.shift();
    if (!reply) {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `script has no reply left for ${agent}` } }));
      return;
    }
    if (reply.delay) await new Promise((r) => setTimeout(r, reply.delay));
    const entry = { seq: log.length + 1, agent, api: req.url.endsWith('/chat/completions') ? 'chat_completions' : 'responses', stream: !!body.stream };
    log.push(entry);
    if (reply.status) {
      entry.status = reply.status;
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'scripted failure', type: 'server_error' } }));
      return;
    }
    const u = usageFor(body, reply);
    Object.assign(entry, {
      status: 200,
      calls: (reply.calls ?? []).map(([name]) => name),
      text: reply.say ?? '',
      usage: { input: u.inTok, cached: u.cached, output: u.outTok, reasoning: u.reasoning },
    });
    if (req.url.endsWith('/chat/completions') && body.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const c of chatChunks(body, reply)) res.write(`data: ${JSON.stringify(c)}\n\n`);
      res.end('data: [DONE]\n\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(req.url.endsWith('/chat/completions') ? chatCompletion(body, reply) : response(body, reply)));
  });
});

// ---- the JSONL trace processor -------------------------------------------

let out = null; // the open output file of the scenario being run

const fileProcessor = {
  onTraceStart: async (trace) => out?.write(JSON.stringify(trace.toJSON()) + '\n'),
  onTraceEnd: async () => {},
  onSpanStart: async () => {},
  onSpanEnd: async (span) => out?.write(JSON.stringify(span.toJSON()) + '\n'),
  shutdown: async () => {},
  forceFlush: async () => {},
};

// ---- the tools -----------------------------------------------------------

const readFile = tool({
  name: 'read_file',
  description: 'Read a file of the project.',
  parameters: z.object({ path: z.string() }),
  execute: async ({ path: p }) => {
    await new Promise((r) => setTimeout(r, 5));
    if (p.includes('missing')) throw new Error(`no such file: ${p}`);
    return `contents of ${p}: revenue 4.2M`;
  },
});

const refund = tool({
  name: 'issue_refund',
  description: 'Refund an order.',
  parameters: z.object({ order: z.string() }),
  execute: async ({ order }) => `refunded ${order}`,
});

const say = (text, extra = {}) => ({ say: text, ...extra });
const calls = (...cs) => ({ calls: cs });

// ---- the scenarios -------------------------------------------------------

const scenarios = [
  {
    // triage hands off to billing, which calls a tool and answers (Chat Completions).
    name: 'handoff',
    api: 'chat_completions',
    script: {
      triage: [calls(['transfer_to_billing', {}])],
      billing: [calls(['issue_refund', { order: 'A-17' }]), say('Refunded order A-17.')],
    },
    async run() {
      const billing = new Agent({ name: 'billing', instructions: 'You are billing. Refund orders.', tools: [refund] });
      const triage = new Agent({ name: 'triage', instructions: 'You are triage. Route the user.', handoffs: [billing] });
      await run(triage, 'Please refund order A-17', { traceIncludeSensitiveData: true });
    },
  },
  {
    // the orchestrator calls three research agents as tools in one response (Responses API).
    name: 'parallel-agents-as-tools',
    api: 'responses',
    script: {
      orchestrator: [
        calls(['research_eu', { input: 'Total EU Q3 revenue' }], ['research_us', { input: 'Total US Q3 revenue' }], ['research_apac', { input: 'Total APAC Q3 revenue' }]),
        say('EU 4.2M, US 6.1M, APAC 3.3M.', { reasoning: 4 }),
      ],
      eu: [calls(['read_file', { path: 'regions/eu.md' }], ), say('EU 4.2M', { delay: 30 })],
      us: [calls(['read_file', { path: 'regions/us.md' }]), say('US 6.1M', { delay: 20 })],
      apac: [calls(['read_file', { path: 'regions/apac.md' }]), say('APAC 3.3M', { delay: 10 })],
    },
    variants: [{ suffix: '-no-task-turn', opts: { tracing: { includeTaskAndTurnSpans: false } } }],
    async run(extra) {
      const researcher = (region) => new Agent({ name: region, instructions: `You are ${region}. Research one region.`, tools: [readFile] });
      const orchestrator = new Agent({
        name: 'orchestrator',
        instructions: 'You are orchestrator. Compare the regions.',
        modelSettings: { parallelToolCalls: true },
        tools: ['eu', 'us', 'apac'].map((r) => researcher(r).asTool({ toolName: `research_${r}`, toolDescription: `Research ${r}.` })),
      });
      await run(orchestrator, 'Compare Q3 revenue across EU, US and APAC', { traceIncludeSensitiveData: true, ...extra });
    },
  },
  {
    // one agent reads three files one response after another (streamed Chat
    // Completions, so usage sits on the generation spans; no task/turn spans).
    name: 'serial-loop',
    api: 'chat_completions',
    stream: true,
    script: {
      analyst: [
        calls(['read_file', { path: 'regions/eu.md' }]),
        calls(['read_file', { path: 'regions/us.md' }]),
        calls(['read_file', { path: 'regions/apac.md' }]),
        say('EU 4.2M, US 6.1M, APAC 3.3M.', { reasoning: 5 }),
      ],
    },
    async run() {
      const analyst = new Agent({ name: 'analyst', instructions: 'You are analyst. Read the regions.', tools: [readFile] });
      const r = await run(analyst, 'Compare Q3 revenue across EU, US and APAC', {
        stream: true,
        traceIncludeSensitiveData: true,
        tracing: { includeTaskAndTurnSpans: false },
      });
      await r.completed;
    },
  },
  {
    // two agents as tools in one response: one reads a missing file (a tool
    // error), the other's model call fails with a 500 (an agent run that
    // errors); the orchestrator then answers. Sensitive data off (Responses API).
    name: 'failure',
    api: 'responses',
    script: {
      lead: [
        calls(['research_eu', { input: 'EU revenue' }], ['research_us', { input: 'US revenue' }]),
        say('EU could not be read; US failed.'),
      ],
      eu: [calls(['read_file', { path: 'regions/missing.md' }]), say('EU file is missing.')],
      us: [{ status: 500 }],
    },
    async run() {
      const researcher = (region) => new Agent({ name: region, instructions: `You are ${region}. Research one region.`, tools: [readFile] });
      const lead = new Agent({
        name: 'lead',
        instructions: 'You are lead. Compare the regions.',
        tools: ['eu', 'us'].map((r) => researcher(r).asTool({ toolName: `research_${r}`, toolDescription: `Research ${r}.` })),
      });
      await run(lead, 'Compare EU and US revenue', { traceIncludeSensitiveData: false });
    },
  },
  {
    // triage asks for two hand-offs in one response; the SDK takes the
    // first and says so on the hand-off span (Chat Completions).
    name: 'multiple-handoffs',
    api: 'chat_completions',
    script: {
      triage: [calls(['transfer_to_billing', {}], ['transfer_to_refunds', {}])],
      billing: [say('Billing here: order A-17 is refunded.')],
    },
    async run() {
      const billing = new Agent({ name: 'billing', instructions: 'You are billing. Answer billing questions.' });
      const refunds = new Agent({ name: 'refunds', instructions: 'You are refunds. Refund orders.', tools: [refund] });
      const triage = new Agent({ name: 'triage', instructions: 'You are triage. Route the user.', handoffs: [billing, refunds], tools: [readFile] });
      await run(triage, 'Please refund order A-17', { traceIncludeSensitiveData: true });
    },
  },
  {
    // ping and pong hand off to each other until max turns (Chat Completions).
    name: 'handoff-loop-max-turns',
    api: 'chat_completions',
    script: {
      ping: [calls(['transfer_to_pong', {}]), calls(['transfer_to_pong', {}])],
      pong: [calls(['transfer_to_ping', {}]), calls(['transfer_to_ping', {}])],
    },
    variants: [{ suffix: '-no-task-turn', opts: { tracing: { includeTaskAndTurnSpans: false } } }],
    async run(extra) {
      const ping = new Agent({ name: 'ping', instructions: 'You are ping. Pass it on.' });
      const pong = new Agent({ name: 'pong', instructions: 'You are pong. Pass it back.' });
      ping.handoffs = [pong];
      pong.handoffs = [ping];
      try {
        await run(ping, 'Who answers?', { maxTurns: 4, traceIncludeSensitiveData: true, ...extra });
        throw new Error('expected max turns');
      } catch (e) {
        if (!(e instanceof MaxTurnsExceededError)) throw e;
      }
    },
  },
];

await new Promise((r) => server.listen(0, '127.0.0.1', r));
const baseURL = `http://127.0.0.1:${server.address().port}/v1`;
setDefaultOpenAIClient(new OpenAI({ apiKey: 'scripted', baseURL, maxRetries: 0 }));
setTraceProcessors([fileProcessor]);

for (const s of scenarios) for (const v of [{ suffix: '', opts: {} }, ...(s.variants ?? [])]) {
  script = structuredClone(s.script);
  log = [];
  setOpenAIAPI(s.api);
  const file = path.join(outDir, `${s.name}${v.suffix}.jsonl`);
  out = fs.createWriteStream(file);
  await s.run(v.opts);
  await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => out.end(r));
  out = null;
  const left = Object.entries(script).filter(([, q]) => q.length > 0);
  if (left.length) throw new Error(`${s.name}${v.suffix}: unused replies for ${left.map(([a]) => a)}`);
  fs.mkdirSync(path.join(outDir, 'logs'), { recursive: true });
  fs.writeFileSync(path.join(outDir, 'logs', `${s.name}${v.suffix}.jsonl`), log.map((e) => JSON.stringify(e)).join('\n') + '\n');
  console.log(`wrote ${path.relative(process.cwd(), file)} and its server log`);
}

// The same handoff trace as the ingest payload the OpenAI exporter sends.
const lines = fs.readFileSync(path.join(outDir, 'handoff.jsonl'), 'utf8').trim().split('\n');
fs.writeFileSync(path.join(outDir, 'handoff-ingest.json'), JSON.stringify({ data: lines.map((l) => JSON.parse(l)) }, null, 1) + '\n');
console.log('wrote ../handoff-ingest.json');
server.close();
