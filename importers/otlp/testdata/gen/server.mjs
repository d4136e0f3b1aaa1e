// A scripted OpenAI-compatible Chat Completions server on 127.0.0.1 and an
// OTLP/HTTP receiver that appends each ExportTraceServiceRequest it is sent
// as one line of a file (the Collector's file exporter format). Replies are
// chosen from the request (system prompt, last message), so they do not
// depend on the order concurrent calls arrive in.
import http from "node:http";
import fs from "node:fs";
import zlib from "node:zlib";

let counter = 0;

function reply(content, toolCalls, usage) {
  counter++;
  const message = { role: "assistant", content: toolCalls ? null : content };
  if (toolCalls) {
    message.tool_calls = toolCalls.map(([name, args], i) => ({
      id: `call_${counter}_${i}`,
      type: "function",
      function: { name, arguments: JSON.stringify(args) },
    }));
  }
  return {
    id: `chatcmpl-${counter}`,
    object: "chat.completion",
    created: 1767225600 + counter,
    model: "scripted-4o",
    choices: [{ index: 0, message, finish_reason: toolCalls ? "tool_calls" : "stop" }],
    usage: {
      prompt_tokens: usage[0],
      completion_tokens: usage[1],
      total_tokens: usage[0] + usage[1],
      prompt_tokens_details: { cached_tokens: usage[2] ?? 0 },
    },
  };
}

// startModel serves POST /v1/chat/completions with answer(body) -> response.
export function startModel(answer) {
  return new Promise((resolve) => {
    const srv = http.createServer((req, res) => {
      let data = "";
      req.on("data", (c) => (data += c));
      req.on("end", async () => {
        const body = JSON.parse(data || "{}");
        const delay = answer.delay ? answer.delay(body) : 30;
        await new Promise((r) => setTimeout(r, delay));
        let out;
        try {
          out = answer(body, reply);
        } catch (e) {
          res.writeHead(500, { "content-type": "application/json" });
          res.end(JSON.stringify({ error: { message: String(e) } }));
          return;
        }
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(out));
      });
    });
    srv.listen(0, "127.0.0.1", () => resolve({ srv, url: `http://127.0.0.1:${srv.address().port}/v1` }));
  });
}

// here is this folder, named in stack traces; the files written name it
// /src/gen instead, so they hold no path of the machine that made them.
const here = import.meta.dirname;

// startReceiver accepts POST /v1/traces: each JSON body is appended, as one
// line, to file (the file is emptied by the first), with this folder's path
// replaced by /src/gen; a protobuf body is written as it came to file with
// .jsonl replaced by .pb.
export function startReceiver(file) {
  let started = false;
  return new Promise((resolve) => {
    const srv = http.createServer((req, res) => {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        let buf = Buffer.concat(chunks);
        if (req.headers["content-encoding"] === "gzip") buf = zlib.gunzipSync(buf);
        if ((req.headers["content-type"] || "").includes("json")) {
          if (!started) fs.writeFileSync(file, "");
          started = true;
          fs.appendFileSync(file, JSON.stringify(JSON.parse(buf.toString("utf8"))).split(here).join("/src/gen") + "\n");
        } else {
          fs.writeFileSync(file.replace(/\.jsonl$/, "") + ".pb", buf); // one batch: one ExportTraceServiceRequest
        }
        res.writeHead(200, { "content-type": "application/json" });
        res.end("{}");
      });
    });
    srv.listen(0, "127.0.0.1", () => resolve({ srv, url: `http://127.0.0.1:${srv.address().port}/v1/traces` }));
  });
}

// lastMessage is the text of the request's last message.
export function lastMessage(body) {
  const m = body.messages[body.messages.length - 1];
  if (typeof m.content === "string") return m.content;
  return (m.content || []).map((p) => p.text || "").join("");
}

// system is the request's system prompt text ("" when none).
export function system(body) {
  const m = body.messages.find((m) => m.role === "system" || m.role === "developer");
  if (!m) return "";
  return typeof m.content === "string" ? m.content : (m.content || []).map((p) => p.text || "").join("");
}
